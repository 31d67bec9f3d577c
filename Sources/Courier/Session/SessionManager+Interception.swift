import Instrumentation
import NIOConcurrencyHelpers
import Logging
import Tracing

/// A session's interceptors and monitors, kept with its other settings.
struct InterceptionSettings: Sendable {
    var interceptor: (any RequestInterceptor)?
    var retryBudget: RetryBudget?
    var retryClock: any RetryClock = .system
    /// Answers challenges and remembers the protection spaces it answered; made once.
    let authentication = HTTPAuthenticationResponder(credentials: CredentialStore())
    var eventMonitors: [any EventMonitor] = []
    /// The monitors' delivery, made when they are set; nil when there are none.
    var monitorGroup: EventMonitorGroup?
    var logger: Logger?
    /// The session's own tracer, when one was set (``SessionManager/tracer``); nil for none.
    var tracer: (any Tracer)?
    /// Whether ``SessionManager/tracer`` was set; until it is, each task takes the process's.
    var tracerIsSet = false
    /// Where a task finds the process's tracer when the session has none of its own: the one
    /// bootstrapped in `InstrumentationSystem` at the time (tests give their own).
    var systemTracer: @Sendable () -> (any Tracer)? = InterceptionSettings.bootstrappedTracer

    /// The tracer a task made now uses.
    var currentTracer: (any Tracer)? { self.tracerIsSet ? self.tracer : self.systemTracer() }

    /// The tracer bootstrapped in `InstrumentationSystem`, or nil when none was (a no-op tracer's
    /// spans would still cost).
    @Sendable static func bootstrappedTracer() -> (any Tracer)? {
        // Read for every task: nothing bootstrapped (the common case) is one read and a compare
        // of its type, without the search for a tracer among the instruments and its casts (an
        // `is` test is a dynamic cast; both no-op types are structs, so their exact type says it).
        if type(of: InstrumentationSystem.instrument) == NoOpInstrument.self { return nil }
        let tracer = InstrumentationSystem.tracer
        return type(of: tracer) == NoOpTracer.self ? nil : tracer
    }
}

extension SessionManager {
    /// Adapters and retriers for every task of the session (Alamofire's `Session.interceptor`);
    /// a request's own (``Request/interceptor``) come after them. See ``RequestInterceptor`` for
    /// the order of everything consulted. Tasks take the interceptor in force when they are made.
    ///
    /// ```swift
    /// manager.interceptor = Interceptor(adapters: [RequestCompressor()], retriers: [RetryPolicy()])
    /// ```
    public var interceptor: (any RequestInterceptor)? {
        get { self.settings.withLockedValue { $0.interception.interceptor } }
        set { self.settings.withLockedValue { $0.interception.interceptor = newValue } }
    }

    /// A cap on retries across all the session's tasks, so that an outage does not become a retry
    /// storm; `nil` (the default) sets none. Every task deposits when it starts; every retry a
    /// retrier asks for withdraws, unless its reason is exempt; a refused retry is not made.
    public var retryBudget: RetryBudget? {
        get { self.settings.withLockedValue { $0.interception.retryBudget } }
        set { self.settings.withLockedValue { $0.interception.retryBudget = newValue } }
    }

    /// The clock the session sleeps on before a retry (``RetryDecision/delay``) and before an
    /// event stream reconnects (``eventStream(_:options:)``), and that times the connectivity
    /// retry's wait for the network (``connectivityRetry``): the system's by default; tests
    /// inject one so that backoffs and waits take no time.
    public var retryClock: any RetryClock {
        get { self.settings.withLockedValue { $0.interception.retryClock } }
        set { self.settings.withLockedValue { $0.interception.retryClock = newValue } }
    }

    /// Credentials per protection space, for `WWW-Authenticate` challenges (Basic, Digest). When a
    /// server answers 401 with a challenge, the session asks
    /// ``Hooks/taskDidReceiveAuthenticationChallenge`` if set, else takes the URL's user and
    /// password or the most specific credential stored here, and sends the request again; later
    /// requests into a protection space it answered are authenticated from the start.
    public var credentials: CredentialStore {
        self.settings.withLockedValue { $0.interception.authentication.credentials }
    }
}
