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
    /// cookie store's cookies for the URL (after the request's own `Cookie` field, in the same
    /// field, as a data task's), after the session's and the request's adapters and the
    /// session's authentication. A handshake that failed (no connection, a 401 with a challenge, a
    /// 503) goes to the session's `WWW-Authenticate` handling (the ``credentials``) and the
    /// session's and the request's retriers, under the ``retryBudget``, as a task's failed attempt
    /// does, and is tried again after their delay. Another engine fails the task with
    /// ``CourierError/Code/unsupportedScheme``; an invalidated manager with
    /// ``CourierError/Code/sessionInvalidated``; an ``SessionConfiguration/ephemeral`` session's
    /// whose cookie store writes to disk, with ``CourierError/Code/unsupportedOption``, as its
    /// data tasks do. ``invalidate(cancelingTasks:)-7w13y`` with
    /// `cancelingTasks` cancels the manager's WebSocket tasks too. The session's event monitors
    /// hear the task's life (``EventMonitor/webSocketTaskDidCreate(_:)`` and the events after it),
    /// its metrics are ``WebSocketTask/metrics``, it is listed in ``webSocketTasks`` until it ends,
    /// and it posts ``Foundation/NSNotification/Name/taskDidResume`` and
    /// ``Foundation/NSNotification/Name/taskDidComplete`` with itself as the object.
    ///
    /// - Parameters:
    ///   - request: The request; its URL is `ws://` or `wss://` (`http` and `https` are taken as such),
    ///     or `ws+unix://` or `wss+unix://` for a server on a Unix-domain socket, whose path is the
    ///     URL's host, percent-encoded (`URL(unixSocketPath:target:tls:webSocket:)` makes one; the
    ///     handshake then names the host `localhost`, and no proxy applies).
    ///   - configuration: The maximum message size, the PING interval, the subprotocols…
    public func webSocketTask(with request: Request, configuration: WebSocketConfiguration = WebSocketConfiguration()) -> WebSocketTask {
        let session = self.configuration
        let handlesCookies = request.options.httpShouldHandleCookies ?? session.httpShouldHandleCookies
        // What a task's attempts consult (adapters, authentication, retriers, budget, clock,
        // monitors, tracer) consults the handshake's attempts too: see WebSocketTask+Attempts.
        let interception = TaskInterception.make(manager: self, request: request, identifier: 0)
        let task = WebSocketTask(
            interception: interception,
            manager: self,
            request: request,
            configuration: configuration,
            engine: self.engine as? NIOEngine,
            sessionHeaders: session.webSocketHandshakeHeaders,
            cookieStorage: handlesCookies ? session.httpCookieStorage : nil
        )
        interception.monitors?.emit { $0.webSocketTaskDidCreate(task) }
        let invalidated = self.registry.withLockedValue { registry -> Bool in
            if registry.isInvalidated { return true }
            registry.webSocketTasks = registry.webSocketTasks.filter { $0.value.task != nil }
            registry.webSocketTasks[ObjectIdentifier(task)] = WeakTask(task: task)
            return false
        }
        if invalidated {
            task.failBeforeStart(CourierError(.sessionInvalidated, "\(request.summary): the session was invalidated"))
        } else if let problem = configuration.subprotocolsProblem {
            task.failBeforeStart(CourierError(.invalidRequest, "\(request.summary): \(problem)", request: request))
        } else if session.isEphemeral, session.httpCookieStorage?.isPersistent == true {
            // As a data task of such a session fails (``refusal(of:)``): the handshake's cookies
            // would be written to the store's file.
            task.failBeforeStart(CourierError(
                .unsupportedOption, "\(request.summary): an ephemeral session cannot use a cookie store that writes to disk", request: request))
        }
        return task
    }

    /// The WebSocket tasks made by this manager that have not ended (suspended, opening, open),
    /// oldest first; ``tasks`` lists the ``SessionTask``s. A suspended task nobody holds is gone.
    public var webSocketTasks: [WebSocketTask] {
        let made = self.registry.withLockedValue { registry in registry.webSocketTasks.values.compactMap(\.task) }
        return made.filter { !$0.isFinished }.sorted { $0.creationOrder < $1.creationOrder }
    }
}

extension SessionConfiguration {
    /// The fields a WebSocket handshake adds where its request has none: the additional headers,
    /// and ``userAgent`` unless they name one (the handshake's head is built apart from the
    /// engine's, which adds it to other requests).
    var webSocketHandshakeHeaders: HTTPFields {
        var fields = self.httpAdditionalHeaders
        if let userAgent = self.userAgent, fields[.userAgent] == nil { fields[.userAgent] = userAgent }
        return fields
    }
}
