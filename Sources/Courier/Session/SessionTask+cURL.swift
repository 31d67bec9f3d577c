import Foundation
import HTTPTypes

extension SessionTask {
    /// A curl command that sends the task's current request (as adapted and redirected) as the
    /// session would: see ``Request/cURLDescription()``. It adds what the session and its engine
    /// add on the way out, when the request has none of its own:
    /// - the `Cookie` field from the session's cookie store, when the request handles cookies;
    /// - `Accept-Encoding: deflate, gzip`, which the engine sends when the session decompresses
    ///   responses (``SessionConfiguration/decompression``), unless the request asks for a `Range`;
    /// - `--user` with the credential in ``SessionManager/credentials`` for the URL's origin, which
    ///   the session answers a Basic challenge with (as Alamofire's description does), unless the
    ///   request carries an `Authorization` field or a user in its URL.
    public func cURLDescription() -> String {
        var request = self.currentRequest
        let configuration = self.delegate.configuration
        if !request.headerFields.contains(.cookie), let store = configuration.httpCookieStorage,
            request.options.httpShouldHandleCookies ?? configuration.httpShouldHandleCookies,
            let cookies = store.cookieHeader(for: request.url)
        {
            request.headerFields[.cookie] = cookies
        }
        // Not with a `Range`: the engine asks for no coding then (a range of a coded body is of
        // its coded bytes), and curl sent it would get the range of another representation.
        if case .enabled = configuration.decompression, !request.headerFields.contains(.acceptEncoding),
            !request.headerFields.contains(.range)
        {
            request.headerFields[.acceptEncoding] = "deflate, gzip"
        }
        var credential: HTTPCredential?
        if !request.headerFields.contains(.authorization), request.url.user == nil, let space = ProtectionSpace(url: request.url) {
            credential = self.delegate.interception.authentication.credentials.credential(for: space)
        }
        return request.cURLDescription(user: credential)
    }
}
