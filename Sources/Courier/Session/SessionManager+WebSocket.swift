import Foundation

extension SessionManager {
    /// Makes a WebSocket task for a `ws` or `wss` URL, suspended (`URLSession.webSocketTask(with:)`,
    /// Alamofire's `webSocketRequest`): call ``WebSocketTask/resume()``, or just
    /// ``WebSocketTask/send(_:)`` or ``WebSocketTask/waitUntilOpen()``.
    ///
    /// The opening handshake is a GET on a connection of Courier's own engine (``NIOEngine``): its
    /// security policy and pinning for `wss`, its proxies (an HTTP proxy tunnels with `CONNECT`),
    /// the request's header fields, the configuration's additional headers where missing, and the
    /// cookie store's cookies for the URL. Another engine fails the task with
    /// ``CourierError/Code/unsupportedScheme``.
    ///
    /// - Parameters:
    ///   - request: The request; its URL is `ws://` or `wss://` (`http` and `https` are taken as such).
    ///   - configuration: The maximum message size, the PING interval, the subprotocols…
    public func webSocketTask(with request: Request, configuration: WebSocketConfiguration = WebSocketConfiguration()) -> WebSocketTask {
        let session = self.configuration
        let handlesCookies = request.options.httpShouldHandleCookies ?? session.httpShouldHandleCookies
        return WebSocketTask(
            request: request,
            configuration: configuration,
            engine: self.engine as? NIOEngine,
            sessionHeaders: session.httpAdditionalHeaders,
            cookieStorage: handlesCookies ? session.httpCookieStorage : nil
        )
    }
}
