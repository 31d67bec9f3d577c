extension SessionTask {
    /// A curl command that sends the task's current request (as adapted and redirected), with the
    /// `Cookie` field the session would add from its cookie store when the request has none of its
    /// own and handles cookies: see ``Request/cURLDescription()``.
    public func cURLDescription() -> String {
        var request = self.currentRequest
        let configuration = self.delegate.configuration
        if !request.headerFields.contains(.cookie), let store = configuration.httpCookieStorage,
            request.options.httpShouldHandleCookies ?? configuration.httpShouldHandleCookies,
            let cookies = store.cookieHeader(for: request.url)
        {
            request.headerFields[.cookie] = cookies
        }
        return request.cURLDescription()
    }
}
