import Foundation

/// A `Set-Cookie` field as RFC 6265bis section 5.6 parses it, before the storage rules apply.
struct ParsedSetCookie: Equatable {
    var name: String
    var value: String
    /// The last valid `Expires`.
    var expires: Date?
    /// The last valid `Max-Age`, in seconds (zero or less means "expire now").
    var maxAge: Int64?
    /// The last non-empty `Domain`, lower-cased, leading dot removed.
    var domain: String?
    /// The last `Path` that starts with `/` (an invalid one resets it to nil: the default path).
    var path: String?
    var isSecure = false
    var isHTTPOnly = false
    /// The last `SameSite`: nil when absent, `.some(nil)` when its value was not understood.
    var sameSite: Cookie.SameSite??
}

/// The parsing algorithm of RFC 6265bis section 5.6.
enum SetCookieParser {
    /// Cookies longer than this (name plus value) are ignored, as are attribute values longer than
    /// ``maximumAttributeValueLength``.
    static let maximumNameValueLength = 4096
    static let maximumAttributeValueLength = 1024

    /// The parsed field, or nil when the RFC says to ignore it (control characters, no name and
    /// no value, too long).
    static func parse(_ field: String) -> ParsedSetCookie? {
        // Control characters other than tab make the whole field invalid.
        if field.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) { return nil }
        // The field is split at bytes (6265bis works on octets), not at characters: a `;` or `=`
        // that a combining mark follows is one `Character` with it, and equals neither.
        let pairEnd = field.utf8.firstIndex(of: UInt8(ascii: ";")) ?? field.endIndex
        let pair = field[..<pairEnd]
        var name: Substring
        var value: Substring
        if let equals = pair.utf8.firstIndex(of: UInt8(ascii: "=")) {
            name = pair[..<equals]
            value = pair[pair.utf8.index(after: equals)...]
        } else {
            name = ""
            value = pair
        }
        name = self.trimmed(name)
        value = self.trimmed(value)
        if name.isEmpty, value.isEmpty { return nil }
        if name.utf8.count + value.utf8.count > self.maximumNameValueLength { return nil }
        var cookie = ParsedSetCookie(name: String(name), value: String(value))

        var rest = field[pairEnd...]
        while !rest.isEmpty {
            rest = rest[rest.utf8.index(after: rest.startIndex)...]  // the ";"
            let end = rest.utf8.firstIndex(of: UInt8(ascii: ";")) ?? rest.endIndex
            let attribute = rest[..<end]
            rest = rest[end...]
            let attributeName: Substring
            let attributeValue: Substring
            if let equals = attribute.utf8.firstIndex(of: UInt8(ascii: "=")) {
                attributeName = self.trimmed(attribute[..<equals])
                attributeValue = self.trimmed(attribute[attribute.utf8.index(after: equals)...])
            } else {
                attributeName = self.trimmed(attribute)
                attributeValue = ""
            }
            if attributeValue.utf8.count > self.maximumAttributeValueLength { continue }
            switch attributeName.lowercasedASCII {
            case "expires":
                if let date = HTTPDate.parseCookieDate(attributeValue) { cookie.expires = date }
            case "max-age":
                if let seconds = self.deltaSeconds(attributeValue) { cookie.maxAge = seconds }
            case "domain":
                // An empty Domain is ignored (6265bis 5.6.3); a leading dot is dropped, and what is
                // left is the Domain even when nothing is (`Domain=.`): the last one counts, and
                // an empty one makes the cookie host-only (5.7 step 9).
                guard !attributeValue.isEmpty else { break }
                var domain = attributeValue
                if domain.utf8.first == UInt8(ascii: ".") { domain = domain[domain.utf8.index(after: domain.startIndex)...] }
                // ASCII case only: Unicode lowering maps some non-ASCII letters to ASCII (the
                // Kelvin sign to `k`), and a Domain with non-ASCII characters must be refused
                // (6265bis 5.6.3), which the check after this makes of it.
                cookie.domain = domain.lowercasedASCII
            case "path":
                cookie.path = attributeValue.utf8.first == UInt8(ascii: "/") ? String(attributeValue) : nil
            case "secure":
                cookie.isSecure = true
            case "httponly":
                cookie.isHTTPOnly = true
            case "samesite":
                cookie.sameSite = .some(Cookie.SameSite.allCases.first { $0.rawValue.lowercasedASCII == attributeValue.lowercasedASCII })
            default:
                break
            }
        }
        return cookie
    }

    /// Max-Age's value: an optional `-` then digits only; huge values are clamped.
    static func deltaSeconds(_ text: Substring) -> Int64? {
        var digits = text
        let negative = digits.utf8.first == UInt8(ascii: "-")
        if negative { digits = digits[digits.utf8.index(after: digits.startIndex)...] }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        if negative { return 0 }
        return Int64(digits) ?? Int64.max
    }

    /// Without leading and trailing spaces and tabs (bytes, as the split).
    private static func trimmed(_ text: Substring) -> Substring {
        let utf8 = text.utf8
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let start = utf8.firstIndex(where: { !isBlank($0) }), let last = utf8.lastIndex(where: { !isBlank($0) }) else {
            return text[text.endIndex...]
        }
        return text[start..<utf8.index(after: last)]
    }
}

extension Cookie {
    /// The longest a cookie may live (RFC 6265bis section 5.5: 400 days); later expiry dates are
    /// brought forward to it.
    public static let maximumLifetime: TimeInterval = 400 * 86_400

    /// Reads a `Set-Cookie` field received from `url`, applying the storage rules of RFC 6265bis
    /// section 5.7 that do not depend on what a store already holds. Returns nil when the rules
    /// say to ignore the cookie.
    ///
    /// - `Max-Age` wins over `Expires`; both are capped at ``maximumLifetime``; an expiry in the
    ///   past yields a cookie that ``isExpired(at:)`` (a store deletes its namesake on receiving it).
    /// - No `Domain` makes a host-only cookie; a `Domain` the host does not domain-match, a public
    ///   suffix other than the host itself, or one with a trailing dot or a byte past ASCII, is
    ///   refused. An IP-address host, and a Unix socket's path (the host of an `http+unix` URL),
    ///   only match themselves.
    /// - No `Path`, or one not starting with `/`, takes the default path (the request path up to
    ///   its last `/`).
    /// - `Secure` from a non-secure (`http`) URL is refused; a `__Secure-` name needs `Secure`
    ///   from a secure URL; a `__Host-` name also needs no `Domain` and `Path=/`.
    ///
    /// - Parameters:
    ///   - setCookie: The field's value.
    ///   - url: The URL of the request the response answered.
    ///   - now: The time of receipt, for `Max-Age` and the creation date.
    ///   - publicSuffixes: The suffixes under which a `Domain` is refused.
    public init?(setCookie: String, for url: URL, now: Date = Date(), publicSuffixes: PublicSuffixList = .system) {
        guard let parsed = SetCookieParser.parse(setCookie), let host = CookieMatching.canonicalHost(of: url) else { return nil }
        let secureOrigin = CookieMatching.isSecure(url)

        var expiresDate: Date?
        if let maxAge = parsed.maxAge {
            expiresDate = maxAge <= 0 ? Date.distantPast : now.addingTimeInterval(min(TimeInterval(maxAge), Self.maximumLifetime))
        } else if let expires = parsed.expires {
            expiresDate = min(expires, now.addingTimeInterval(Self.maximumLifetime))
        }

        var domainAttribute = parsed.domain ?? ""
        if !domainAttribute.isEmpty {
            // A trailing dot refuses it too: `me.` is no rule of the public suffix list, and from
            // `http://firsthost.me.` `Domain=.me.` would make a cookie for every `x.me.` host.
            guard domainAttribute.utf8.allSatisfy({ $0 < 0x80 }), domainAttribute.utf8.last != UInt8(ascii: ".") else { return nil }
            if publicSuffixes.isPublicSuffix(domainAttribute) {
                guard domainAttribute == host else { return nil }
                domainAttribute = ""
            }
        }
        let isHostOnly: Bool
        let domain: String
        let isUnixSocket = CookieMatching.isUnixSocket(url)
        if domainAttribute.isEmpty || (domainAttribute == host && (isUnixSocket || CookieMatching.isIPAddress(host))) {
            // An address names itself only: a Domain that is the request's address is host-only,
            // as Go and browsers have it (a domain cookie would go to `www.192.168.0.10`). So
            // does a Unix socket's path.
            isHostOnly = true
            domain = host
        } else {
            // A socket's path (`/tmp/api.example.com`) is no host under any domain.
            guard !isUnixSocket, CookieMatching.domainMatches(host, domainAttribute) else { return nil }
            isHostOnly = false
            domain = domainAttribute
        }

        let path = parsed.path ?? CookieMatching.defaultPath(of: url)
        if parsed.isSecure, !secureOrigin { return nil }

        // Prefixes are matched without regard to case (6265bis 5.7 steps 20–21).
        let lowerName = parsed.name.lowercasedASCII
        if parsed.name.isEmpty {
            let lowerValue = parsed.value.lowercasedASCII
            if lowerValue.hasPrefix("__secure-") || lowerValue.hasPrefix("__host-") { return nil }
        }
        if lowerName.hasPrefix("__secure-"), !(parsed.isSecure && secureOrigin) { return nil }
        // `__Host-` wants no `Domain` (6265bis 5.7 step 21: a host-only cookie as the RFC makes
        // one), so not `isHostOnly`, which a `Domain` naming the request's IP address (or socket
        // path) also gives. A public suffix that is the host was cleared above, as the RFC clears it.
        if lowerName.hasPrefix("__host-"), !(parsed.isSecure && secureOrigin && domainAttribute.isEmpty && path == "/" && parsed.path != nil) {
            return nil
        }

        self.init(
            name: parsed.name, value: parsed.value, domain: domain, path: path, expiresDate: expiresDate,
            isHostOnly: isHostOnly, isSecure: parsed.isSecure, isHTTPOnly: parsed.isHTTPOnly,
            sameSite: parsed.sameSite ?? nil, creationDate: now)
    }
}
