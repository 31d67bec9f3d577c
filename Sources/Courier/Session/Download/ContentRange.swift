import Foundation
import HTTPTypes

/// A `Content-Range: bytes first-last/length` value (RFC 9110 §14.4), as a 206 sends it.
///
/// Courier checks a resumed download's 206 with it; it is public for code that asks for ranges
/// itself (the `courier` command's `--continue` does).
public struct ContentRange: Hashable, Sendable {
    /// The first byte's offset.
    public var first: Int64
    /// The last byte's offset (inclusive).
    public var last: Int64
    /// The whole representation's length; nil for `*`.
    public var completeLength: Int64?

    /// A range of `first...last` of a representation of `completeLength` bytes (nil: unknown).
    public init(first: Int64, last: Int64, completeLength: Int64?) {
        self.first = first
        self.last = last
        self.completeLength = completeLength
    }

    /// Parses the value; nil when it is not a satisfied byte range.
    public init?(_ value: String) {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercasedASCII.hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst("bytes ".count).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Self.number(bounds[0]), let last = Self.number(bounds[1]), last >= first else {
            return nil
        }
        if halves[1] == "*" {
            self.completeLength = nil
        } else {
            guard let length = Self.number(halves[1]), length > last else { return nil }
            self.completeLength = length
        }
        self.first = first
        self.last = last
    }

    /// A number of the range: digits only (RFC 9110 14.4), not the sign `Int64` would also read.
    private static func number(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int64(text)
    }

    /// The length in `bytes */length`, the form a 416 (range not satisfiable) answers with; nil
    /// for any other value.
    public static func unsatisfiedCompleteLength(_ value: String) -> Int64? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercasedASCII.hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst("bytes ".count).trimmingCharacters(in: .whitespaces)
        guard spec.hasPrefix("*/") else { return nil }
        return Int64(spec.dropFirst(2)).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// The validator of a 206 that names another version than `ifRange`, the `If-Range` value
    /// the request sent: another strong entity tag, or another `Last-Modified` date when
    /// `ifRange` is a date. A server (or a cache before it) that honours `Range` but ignores
    /// `If-Range` sends part of the version it has now, which appended to a partial file makes a
    /// file that is neither version; Courier refuses such a 206 when it resumes a download (the
    /// `courier` command's `--continue` too). Nil when the 206 names the same validator, or none
    /// to compare (RFC 9110 15.3.7 lets it leave them out).
    public static func otherVersion(named response: HTTPResponse, than ifRange: String) -> String? {
        let fields = response.headerFields
        // An entity tag is quoted; anything else `If-Range` holds is a date.
        if ifRange.hasPrefix("\"") {
            guard let tag = fields[.eTag], !tag.hasPrefix("W/"), tag != ifRange else { return nil }
            return tag
        }
        guard let modified = fields[.lastModified], let date = HTTPDate.parse(modified),
            let sentDate = HTTPDate.parse(ifRange), date != sentDate
        else { return nil }
        return modified
    }
}
