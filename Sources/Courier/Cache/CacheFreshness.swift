import Foundation
import HTTPTypes

/// Freshness and age of a stored response (RFC 9111 section 4.2), for a private cache. Pure.
struct CacheFreshness: Equatable {
    /// How long the response is fresh, counted from its generation, in seconds.
    var lifetime: TimeInterval
    /// How old the response is now, in seconds.
    var age: TimeInterval
    /// Whether the lifetime came from the `Last-Modified` heuristic.
    var isHeuristic: Bool

    var isFresh: Bool { self.lifetime > self.age }
    /// How long past its lifetime the response is (0 while fresh).
    var staleness: TimeInterval { max(0, self.age - self.lifetime) }

    /// Status codes a cache may give a heuristic lifetime (RFC 9110 section 15.1).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]
    /// The share of the time since `Last-Modified` a heuristic lifetime takes (RFC 9111 4.2.2).
    static let heuristicFraction = 0.1
    /// The longest heuristic lifetime Courier gives: one week.
    static let maximumHeuristicLifetime: TimeInterval = 7 * 86_400

    init(lifetime: TimeInterval, age: TimeInterval, isHeuristic: Bool) {
        self.lifetime = lifetime
        self.age = age
        self.isHeuristic = isHeuristic
    }

    /// The freshness of `response`, requested at `requestDate`, received at `responseDate`, seen at `now`.
    init(response: HTTPResponse, control: CacheControl, requestDate: Date, responseDate: Date, now: Date) {
        // `Date`, `Expires` and `Last-Modified` are HTTP-dates (RFC 9110 5.6.7); a repeated field
        // joins into something that is none. An invalid `Date` is as good as none.
        let dateValue = response.headerFields.value(of: .date).flatMap { HTTPDate.parse($0, now: now) } ?? responseDate
        var isHeuristic = false
        let lifetime: TimeInterval
        if let maxAge = control.maxAge {
            lifetime = TimeInterval(maxAge)
        } else if let expires = response.headerFields.value(of: .expires) {
            // An invalid date, "0" above all, means "already expired".
            lifetime = HTTPDate.parse(expires, now: now).map { max(0, $0.timeIntervalSince(dateValue)) } ?? 0
        } else if let lastModified = response.headerFields.value(of: .lastModified).flatMap({ HTTPDate.parse($0, now: now) }),
            Self.heuristicallyCacheable.contains(response.status.code) || control.isPublic
        {
            isHeuristic = true
            lifetime = min(max(0, dateValue.timeIntervalSince(lastModified)) * Self.heuristicFraction, Self.maximumHeuristicLifetime)
        } else {
            lifetime = 0
        }

        // RFC 9111 4.2.3.
        let ageValue = TimeInterval(Self.age(of: response.headerFields) ?? 0)
        let apparentAge = max(0, responseDate.timeIntervalSince(dateValue))
        let responseDelay = max(0, responseDate.timeIntervalSince(requestDate))
        let correctedAge = ageValue + responseDelay
        let initialAge = max(apparentAge, correctedAge)
        let residentTime = max(0, now.timeIntervalSince(responseDate))
        self.init(lifetime: lifetime, age: initialAge + residentTime, isHeuristic: isHeuristic)
    }

    /// The `Age` field's value (RFC 9111 5.1): a non-negative integer, capped at 2^31 as every
    /// delta-seconds is (1.2.2). Of a list, or of a repeated field, the first member counts;
    /// anything else (`7200.0`, `10s`, `-5`) is no `Age` at all: nil.
    static func age(of fields: HTTPFields) -> Int? {
        guard let first = fields[values: .age].first else { return nil }
        let member = first.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first.map { $0.trimmingSpaces() } ?? ""
        guard !member.isEmpty, member.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return min(Int(member) ?? Int(Int32.max), Int(Int32.max))
    }
}
