import Foundation
import NIOConcurrencyHelpers

extension SessionManager {
    /// Makes a WebSocket task for a `ws` or `wss` URL, suspended (`URLSession.webSocketTask(with:)`,
    /// Alamofire's `webSocketRequest`): call ``WebSocketTask/resume()``, or just
    /// ``WebSocketTask/send(_:)`` or ``WebSocketTask/waitUntilOpen()``.
    ///
    /// The opening handshake is a GET on a connection of Courier's own engine (``NIOEngine``): its
    /// security policy and pinning for `wss`, its proxies (an HTTP proxy tunnels with `CONNECT`),
    /// the request's header fields, the configuration's additional headers where missing, and the
    /// cookie store's cookies for the URL, after the session's and the request's adapters
    /// (retriers and authentication challenges are not consulted). Another engine fails the task with
    /// ``CourierError/Code/unsupportedScheme``; an invalidated manager with
    /// ``CourierError/Code/sessionInvalidated``. ``invalidate(cancelingTasks:)-7w13y`` with
    /// `cancelingTasks` cancels the manager's WebSocket tasks too. The session's event monitors
    /// hear the task's life (``EventMonitor/webSocketTaskDidCreate(_:)`` and the events after it),
    /// and its metrics are ``WebSocketTask/metrics``.
    ///
    /// - Parameters:
    ///   - request: The request; its URL is `ws://` or `wss://` (`http` and `https` are taken as such).
    ///   - configuration: The maximum message size, the PING interval, the subprotocols…
    public func webSocketTask(with request: Request, configuration: WebSocketConfiguration = WebSocketConfiguration()) -> WebSocketTask {
        let session = self.configuration
        let handlesCookies = request.options.httpShouldHandleCookies ?? session.httpShouldHandleCookies
        // The session's and the request's adapters run on the handshake's request, as on any
        // request's first attempt (retriers and authentication challenges do not: see the article).
        let interception = TaskInterception.make(manager: self, request: request, identifier: 0)
        let adapt: WebSocketTask.Adapter? =
            interception.adaptsAsynchronously
            ? { @Sendable request async throws(CourierError) in
                try await interception.chain.adapt(request, using: AdaptationContext(taskIdentifier: 0, logger: interception.logger))
            } : nil
        let task = WebSocketTask(
            adapt: adapt,
            request: request,
            configuration: configuration,
            engine: self.engine as? NIOEngine,
            sessionHeaders: session.httpAdditionalHeaders,
            cookieStorage: handlesCookies ? session.httpCookieStorage : nil,
            monitors: interception.monitors
        )
        interception.monitors?.emit { $0.webSocketTaskDidCreate(task) }
        let invalidated = self.registry.withLockedValue { registry -> Bool in
            if registry.isInvalidated { return true }
            registry.webSocketTasks = registry.webSocketTasks.filter { $0.value.task != nil }
            registry.webSocketTasks[ObjectIdentifier(task)] = WeakTask(task: task)
            return false
        }
        if invalidated { task.failBeforeStart(CourierError(.sessionInvalidated, "\(request.summary): the session was invalidated")) }
        return task
    }
}
