import Foundation
import Logging
import NIOConcurrencyHelpers

/// A clock tests move by hand.
final class ManualClock: Sendable {
    private let current: NIOLockedValueBox<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        self.current = NIOLockedValueBox(start)
    }

    var now: Date { self.current.withLockedValue { $0 } }

    func advance(by seconds: TimeInterval) {
        self.current.withLockedValue { $0.addTimeInterval(seconds) }
    }

    /// Sets the time.
    func set(_ date: Date) {
        self.current.withLockedValue { $0 = date }
    }

    var function: @Sendable () -> Date { { self.now } }
}

/// A log handler that keeps messages, to see that a damaged entry was reported.
struct RecordingLogHandler: LogHandler {
    let messages: NIOLockedValueBox<[String]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        self.messages.withLockedValue { $0.append("\(event.level): \(event.message)") }
    }

    static func logger() -> (Logger, NIOLockedValueBox<[String]>) {
        let messages = NIOLockedValueBox<[String]>([])
        return (Logger(label: "test") { _ in RecordingLogHandler(messages: messages) }, messages)
    }
}
