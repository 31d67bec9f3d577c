import Instrumentation
import NIOConcurrencyHelpers
import Logging
import Tracing

/// What a task consults around its attempts, taken from its manager and its request when the
/// task is made: adapters and retriers in the order of ``RequestInterceptor``, the session's
/// challenge handling, budget and clock, its monitors (the session's and the request's), logger and tracer.
///
/// An object, shared: a task whose request brings no interceptor, logger or monitor of its own, in a
/// session with no logger and no tracer, takes the session's one instance (``plain(for:)``), made
/// again only after the session's settings change; other tasks make their own.
final class TaskInterception: Sendable {
    /// The session's then the request's adapters and retriers, with the budget.
    let chain: InterceptorChain
    /// Whether a retrier of `chain` is asked about a response its task's serializer refuses
    /// (``RequestRetrier/retriesSerializationFailures``): the task's serializer then checks a
    /// response below 400 before the task ends.
    let checksSerialization: Bool
    /// The session's challenge handling (consulted before `chain`'s retriers, after its adapters).
    let authentication: HTTPAuthenticationResponder
    /// The connectivity retry, when the session has one (after challenges, before `chain`'s retriers).
    let connectivity: ConnectivityRetrier?
    let budget: RetryBudget?
    let clock: any RetryClock
    /// Nil when the session has no monitor: events are then not even made.
    let monitors: EventMonitorGroup?
    /// The request's logger, else the session's, else a no-op one; with the task's identifier.
    let logger: Logger
    let tracer: (any Tracer)?
    /// The trace context the task's span is a child of.
    let parentContext: ServiceContext?

    /// The interception for a task made now for `request`: the session's shared one when nothing
    /// in it is the task's own.
    static func make(manager: SessionManager, request: Request, identifier: Int) -> TaskInterception {
        let found = manager.settings.withLockedValue { settings in Self.lookUp(settings, request: request) }
        return Self.made(found, manager: manager, request: request, identifier: identifier)
    }

    /// What a new task consults and the hooks it takes, read in one transaction on the manager's
    /// settings.
    static func makeWithHooks(
        manager: SessionManager, request: Request, identifier: Int
    ) -> (interception: TaskInterception, hooks: SessionManager.Hooks) {
        let (found, hooks) = manager.settings.withLockedValue { settings in (Self.lookUp(settings, request: request), settings.hooks) }
        return (Self.made(found, manager: manager, request: request, identifier: identifier), hooks)
    }

    /// The shared interception, or what to make one of.
    private enum Lookup {
        case shared(TaskInterception)
        case toMake(SessionManager.Settings, tracer: (any Tracer)?, plain: Bool)
    }

    private static func lookUp(_ settings: SessionManager.Settings, request: Request) -> Lookup {
        // Read when the task is made: a tracer bootstrapped after the manager was made counts.
        let tracer = settings.interception.currentTracer
        let plain =
            request.interceptor == nil && request.logger == nil && !request.hasEventMonitors && settings.interception.logger == nil
            && tracer == nil
        if plain, let shared = settings.plainInterception { return .shared(shared) }
        return .toMake(settings, tracer: plain ? nil : tracer, plain: plain)
    }

    /// Makes the interception outside the settings' lock: it asks the retriers
    /// (`retriesSerializationFailures`), the request's monitors (`queue`) and the log handler,
    /// which are the caller's code and may read this manager's settings themselves.
    private static func made(_ found: Lookup, manager: SessionManager, request: Request, identifier: Int) -> TaskInterception {
        switch found {
        case .shared(let shared):
            return shared
        case .toMake(let settings, let tracer, let plain):
            let made = TaskInterception(settings, request: request, identifier: identifier, tracer: tracer)
            guard plain else { return made }
            // Kept for the next plain tasks unless a setting changed meanwhile (or another task
            // kept one first).
            return manager.settings.withLockedValue { current in
                if let shared = current.plainInterception { return shared }
                if current.interceptionVersion == settings.interceptionVersion { current.plainInterception = made }
                return made
            }
        }
    }

    private init(_ manager: SessionManager.Settings, request: Request, identifier: Int, tracer: (any Tracer)?) {
        let settings = manager.interception
        var adapters: [any RequestAdapter] = []
        var retriers: [any RequestRetrier] = []
        // The session's, then the request's; no array is made of the two (most tasks have neither).
        Self.collect(settings.interceptor, into: &adapters, &retriers)
        Self.collect(request.interceptor, into: &adapters, &retriers)
        self.chain = InterceptorChain(adapters: adapters, retriers: retriers, budget: settings.retryBudget)
        self.checksSerialization = retriers.contains { $0.retriesSerializationFailures }
        self.authentication = settings.authentication
        self.connectivity = manager.connectivityRetry.map {
            ConnectivityRetrier(policy: $0, reachability: manager.reachabilityManager, clock: settings.retryClock)
        }
        self.budget = settings.retryBudget
        self.clock = settings.retryClock
        // The session's monitors, then the request's own (their lanes are this task's).
        self.monitors = request.hasEventMonitors ? EventMonitorGroup.adding(request.eventMonitors, to: settings.monitorGroup) : settings.monitorGroup
        var logger = request.logger ?? settings.logger ?? .courierNoOp
        if request.logger != nil || settings.logger != nil {
            logger[metadataKey: "courier-task-id"] = "\(identifier)"
            if let operation = request.operationName { logger[metadataKey: "courier-operation"] = "\(operation)" }
        }
        self.logger = logger
        self.tracer = tracer
        self.parentContext = tracer == nil ? nil : (request.serviceContext ?? ServiceContext.current)
    }

    private static func collect(
        _ interceptor: (any RequestInterceptor)?, into adapters: inout [any RequestAdapter], _ retriers: inout [any RequestRetrier]
    ) {
        guard let interceptor else { return }
        if let composed = interceptor as? Interceptor {
            // Flattened, so that an empty one costs nothing.
            adapters += composed.adapters
            retriers += composed.retriers
        } else {
            adapters.append(interceptor)
            retriers.append(interceptor)
        }
    }

    /// Whether an attempt must hop to a task of its own to adapt (an adapter is `async`).
    var adaptsAsynchronously: Bool { self.chain.adapts }

    /// Whether a failed attempt with this response (or none) may be retried: a retrier exists,
    /// the connectivity retry is on and no response came, or a 401 carries a challenge.
    func mayRetry(_ response: HTTPResponse?) -> Bool {
        if self.chain.retries { return true }
        guard let response else { return self.connectivity != nil }
        return response.status == .unauthorized && response.headerFields.contains(.wwwAuthenticate)
    }
}
