import Foundation

/// A `Retry-After` field value (RFC 9110 §10.2.3): seconds, or an HTTP date.
public enum RetryAfter: Sendable, Hashable {
    /// A number of seconds to wait.
    case seconds(Int)
    /// A date after which to retry.
    case date(Date)

    /// Parses a field value; nil when it is neither a non-negative integer nor an HTTP date in
    /// one of the three forms RFC 9110 §5.6.7 asks recipients to accept (IMF-fixdate, RFC 850,
    /// asctime).
    public init?(_ value: String) {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // A huge number is still a number: it asks for longer than any cap.
            self = .seconds(Int(trimmed) ?? .max)
            return
        }
        guard let date = HTTPDate.parse(trimmed) else { return nil }
        self = .date(date)
    }

    /// How long to wait from `now`; zero for a date in the past.
    public func delay(from now: Date) -> Duration {
        switch self {
        case .seconds(let seconds):
            return .seconds(seconds)
        case .date(let date):
            let interval = date.timeIntervalSince(now)
            return interval > 0 ? .milliseconds(Int64((interval * 1000).rounded(.up))) : .zero
        }
    }
}
