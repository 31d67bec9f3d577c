import Foundation

/// What a request's `Range` and `If-Range` ask of a representation of `length` bytes
/// (RFC 9110 §14.2 and §13.1.5), for `/courier/file/{n}`. Only single ranges are served.
enum ByteRangeRequest: Equatable {
    /// Send the whole representation: no `Range`, one the server ignores (malformed, several
    /// ranges, another unit), or an `If-Range` that does not match.
    case whole
    /// Send the inclusive byte range `first...last` with 206.
    case partial(first: Int, last: Int)
    /// Answer 416 with `Content-Range: bytes */length`.
    case unsatisfiable

    /// Decides from the `Range` and `If-Range` values and the representation's validators.
    static func evaluate(range: String?, ifRange: String?, length: Int, etag: String, lastModified: Date) -> ByteRangeRequest {
        guard let range else { return .whole }
        if let ifRange, !Self.matches(ifRange: ifRange, etag: etag, lastModified: lastModified) { return .whole }
        return Self.parse(range, length: length)
    }

    /// A single `bytes=a-b`, `bytes=a-` or `bytes=-suffix` against `length`.
    static func parse(_ value: String, length: Int) -> ByteRangeRequest {
        let value = value.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = value.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(",") else { return .whole }
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .whole }
        let (start, end) = (parts[0].trimmingCharacters(in: .whitespaces), parts[1].trimmingCharacters(in: .whitespaces))
        if start.isEmpty {
            // A suffix: the last `suffix` bytes; `-0` selects nothing.
            guard let suffix = Self.digits(end) else { return .whole }
            guard suffix > 0, length > 0 else { return .unsatisfiable }
            return .partial(first: max(0, length - suffix), last: length - 1)
        }
        guard let first = Self.digits(start) else { return .whole }
        let last: Int
        if end.isEmpty {
            last = Int.max
        } else {
            guard let value = Self.digits(end), value >= first else { return .whole }
            last = value
        }
        guard first < length else { return .unsatisfiable }
        return .partial(first: first, last: min(last, length - 1))
    }

    /// Whether an `If-Range` value names the current representation: the same strong entity
    /// tag, or exactly its modification date. A weak tag never matches.
    static func matches(ifRange: String, etag: String, lastModified: Date) -> Bool {
        let value = ifRange.trimmingCharacters(in: .whitespaces)
        if value.hasPrefix("\"") || value.hasPrefix("W/") { return value == etag }
        guard let date = Self.httpDate(value) else { return false }
        return date == lastModified
    }

    /// A non-negative decimal number made of ASCII digits only.
    private static func digits(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return Int(text) ?? Int.max  // too many digits: beyond any length
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), or nil.
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }
}
