import Foundation
import HTTPTypes

/// A `Content-Range: bytes first-last/length` value (RFC 9110 §14.4), as a 206 sends it.
struct ContentRange: Hashable, Sendable {
    var first: Int64
    var last: Int64
    /// The whole representation's length; nil for `*`.
    var completeLength: Int64?

    init(first: Int64, last: Int64, completeLength: Int64?) {
        self.first = first
        self.last = last
        self.completeLength = completeLength
    }

    /// Parses the value; nil when it is not a satisfied byte range.
    init?(_ value: String) {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst("bytes ".count).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first >= 0, last >= first else {
            return nil
        }
        if halves[1] == "*" {
            self.completeLength = nil
        } else {
            guard let length = Int64(halves[1]), length > last else { return nil }
            self.completeLength = length
        }
        self.first = first
        self.last = last
    }
}
