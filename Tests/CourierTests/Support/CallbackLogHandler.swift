import Logging

/// Hands every log message to a closure.
struct CallbackLogHandler: LogHandler {
    let onMessage: @Sendable (String) -> Void
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    init(_ onMessage: @escaping @Sendable (String) -> Void) { self.onMessage = onMessage }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    func log(event: LogEvent) { self.onMessage("\(event.message)") }
}
