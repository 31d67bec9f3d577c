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
    /// unquoted. Commas inside quoted strings do not split; a `"` opens a quoted string only at
    /// the start of a value (`a=b"c, no-store` is two directives). Read scalar by scalar: a comma
    /// or a closing quote followed by a combining mark is still one.
    static func directives(_ field: String) -> [(String, String?)] {
        var result: [(String, String?)] = []
        var name = String.UnicodeScalarView()
        var value: String.UnicodeScalarView?
        var inQuotes = false
        var escaped = false
        func finish() {
            let trimmedName = String(name).trimmingSpaces().lowercasedASCII
            if !trimmedName.isEmpty {
                var trimmedValue = value.map { String($0).trimmingSpaces() }
                if let quoted = trimmedValue, quoted.hasPrefix("\"") {
                    let scalars = quoted.unicodeScalars
                    let closed = scalars.count > 1 && scalars.last == "\""
                    trimmedValue = String(String.UnicodeScalarView(scalars.dropFirst().dropLast(closed ? 1 : 0)))
                }
                result.append((trimmedName, trimmedValue))
            }
            name = String.UnicodeScalarView()
            value = nil
        }
        for scalar in field.unicodeScalars {
            if inQuotes {
                if escaped {
                    escaped = false
                    value?.append(scalar)
                } else if scalar == "\\" {
                    escaped = true
                } else {
                    if scalar == "\"" { inQuotes = false }
                    value?.append(scalar)
                }
                continue
            }
            switch scalar {
            case ",": finish()
            case "=" where value == nil: value = String.UnicodeScalarView()
            case "\"" where value?.allSatisfy({ $0 == " " || $0 == "\t" }) == true:
                inQuotes = true
                value?.append(scalar)
            default:
                if value != nil { value?.append(scalar) } else { name.append(scalar) }
            }
        }
        finish()
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
