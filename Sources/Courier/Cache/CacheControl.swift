/// The directives of `Cache-Control` fields (RFC 9111 section 5.2), request or response.
///
/// Directive names are matched without regard to case; when a directive appears twice, the first
/// wins. A `max-age` (or `s-maxage`) whose value is not a number counts as 0: the response is
/// stale, as RFC 9111 advises for values it cannot use.
struct CacheControl: Equatable, Sendable {
    var maxAge: Int?
    var sharedMaxAge: Int?
    var noStore = false
    /// `no-cache`, with or without field names (both are treated as the unqualified form).
    var noCache = false
    var mustRevalidate = false
    var proxyRevalidate = false
    var isPrivate = false
    var isPublic = false
    var immutable = false
    var noTransform = false
    /// `max-stale`: `.some(nil)` without a value (any staleness), `.some(n)` with one.
    var maxStale: Int??
    var minFresh: Int?
    var onlyIfCached = false
    /// `must-understand` (RFC 9111 5.2.2.3).
    var mustUnderstand = false

    init() {}

    /// Parses the values of every `Cache-Control` field of a message.
    init(fields: some Sequence<String>) {
        var seen: Set<String> = []
        for field in fields {
            for (name, value) in Self.directives(field) where seen.insert(name).inserted {
                switch name {
                case "max-age": self.maxAge = Self.seconds(value)
                case "s-maxage": self.sharedMaxAge = Self.seconds(value)
                case "no-store": self.noStore = true
                case "no-cache": self.noCache = true
                case "must-revalidate": self.mustRevalidate = true
                case "proxy-revalidate": self.proxyRevalidate = true
                case "private": self.isPrivate = true
                case "public": self.isPublic = true
                case "immutable": self.immutable = true
                case "no-transform": self.noTransform = true
                case "max-stale": self.maxStale = .some(value.map { Self.seconds($0) })
                case "min-fresh": self.minFresh = Self.seconds(value)
                case "only-if-cached": self.onlyIfCached = true
                case "must-understand": self.mustUnderstand = true
                default: break
                }
            }
        }
    }

    /// A delta-seconds value; 0 when it is missing or not a number, capped at 2^31 (RFC 9111 1.2.2).
    private static func seconds(_ value: String?) -> Int {
        guard let value, !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return 0 }
        return min(Int(value) ?? Int(Int32.max), Int(Int32.max))
    }

    /// The `name[=value]` pairs of one field, names lower-cased (ASCII letters), quoted values
    /// unquoted (``HTTPToken/quotedString(_:openingAt:)``). Read as bytes, by RFC 9110's list
    /// grammar: a comma inside a quoted string does not split, a `"` opens one only at the start of
    /// a value (`a=b"c, no-store` is two directives), and what follows a closing quote before the
    /// next comma is dropped.
    static func directives(_ field: String) -> [(String, String?)] {
        let bytes = Array(field.utf8)
        let comma = UInt8(ascii: ","), equals = UInt8(ascii: "="), quote = UInt8(ascii: "\"")
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        func trimmed(_ slice: ArraySlice<UInt8>) -> String {
            String(decoding: slice.drop(while: isBlank).reversed().drop(while: isBlank).reversed(), as: UTF8.self)
        }
        var result: [(String, String?)] = []
        var index = 0
        while index < bytes.count {
            let nameStart = index
            while index < bytes.count, bytes[index] != comma, bytes[index] != equals { index += 1 }
            let name = trimmed(bytes[nameStart..<index]).lowercasedASCII
            var value: String?
            if index < bytes.count, bytes[index] == equals {
                index += 1
                while index < bytes.count, isBlank(bytes[index]) { index += 1 }
                if index < bytes.count, bytes[index] == quote {
                    let quoted = HTTPToken.quotedString(bytes, openingAt: index)
                    value = quoted.value
                    index = quoted.end
                    while index < bytes.count, bytes[index] != comma { index += 1 }
                } else {
                    let valueStart = index
                    while index < bytes.count, bytes[index] != comma { index += 1 }
                    value = trimmed(bytes[valueStart..<index])
                }
            }
            index += 1
            if !name.isEmpty { result.append((name, value)) }
        }
        return result
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
