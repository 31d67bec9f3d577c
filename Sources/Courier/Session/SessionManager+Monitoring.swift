import NIOConcurrencyHelpers
import Logging
import Tracing

extension SessionManager {
    /// Monitors that receive every event of the session's tasks, each on its own queue; tasks take
    /// the monitors in force when they are made. Empty by default, and then events cost nothing.
    ///
    /// ```swift
    /// manager.eventMonitors = [MetricsMonitor(), myLoggingMonitor]
    /// ```
    public var eventMonitors: [any EventMonitor] {
        get { self.settings.withLockedValue { $0.interception.eventMonitors } }
        set {
            let group = newValue.isEmpty ? nil : EventMonitorGroup(newValue)
            self.settings.withLockedValue {
                $0.interception.eventMonitors = newValue
                $0.interception.monitorGroup = group
            }
        }
    }

    /// Where the session logs what happens to its tasks when a request has no logger of its own
    /// (``Request/logger``): attempts at `.trace`, retries and completions at `.debug`, with the
    /// task's identifier as `courier-task-id` metadata. `nil` (the default) logs nothing.
    public var logger: Logger? {
        get { self.settings.withLockedValue { $0.interception.logger } }
        set { self.settings.withLockedValue { $0.interception.logger = newValue } }
    }

    /// The tracer that gets a span per task (a client span named after the method, with the
    /// request's method, URL and, at the end, status, retries and error) and, as its children, a
    /// span per hop (each attempt's request and each redirect's), whose context is injected into
    /// the hop's header fields (`traceparent` for W3C tracers) and handed to the engine as
    /// ``Request/serviceContext``. Until it is set, each task takes the tracer bootstrapped in
    /// `InstrumentationSystem` when the task is made, and none when none was (a no-op tracer is
    /// skipped: its spans would still cost), so a manager made before the bootstrap traces too.
    /// Set it to `nil` for no spans at all.
    public var tracer: (any Tracer)? {
        get { self.settings.withLockedValue { $0.interception.currentTracer } }
        set {
            self.settings.withLockedValue { settings in
                settings.interception.tracer = newValue
                settings.interception.tracerIsSet = true
            }
        }
    }
}
