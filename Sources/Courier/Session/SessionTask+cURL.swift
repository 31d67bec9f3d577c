extension SessionTask {
    /// A curl command that sends the task's current request (as adapted and redirected): see
    /// ``Request/cURLDescription()``.
    public func cURLDescription() -> String {
        self.currentRequest.cURLDescription()
    }
}
