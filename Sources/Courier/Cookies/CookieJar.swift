import Foundation

/// How many cookies a store keeps before it evicts the least recently used (RFC 6265 section 5.3,
/// step 12, suggests at least 50 per domain and 3000 in all).
public struct CookieLimits: Sendable, Hashable {
    /// The most cookies kept for one ``Cookie/domain``. 50 by default. Past it, a domain's
    /// cookies without `Secure` go first, least recently used first (RFC 6265bis 5.7).
    public var perDomain: Int
    /// The most cookies kept in all. 3000 by default.
    public var total: Int

    /// Limits, 50 per domain and 3000 in all by default.
    public init(perDomain: Int = 50, total: Int = 3000) {
        self.perDomain = perDomain
        self.total = total
    }
}

/// The state of a cookie store, as a value: the cookies by domain, the storage rules that need
/// the cookies already stored, limits and eviction. The stores wrap one behind a lock; it is
/// tested without them. Every operation takes the time from its caller.
struct CookieJar: Sendable {
    struct Entry: Sendable {
        var cookie: Cookie
        /// Insertion order, which breaks ties between equal creation dates.
        var sequence: UInt64

        var orderKey: OrderKey { (self.cookie.path.utf8.count, self.cookie.creationDate, self.sequence) }
    }

    private(set) var domains: [String: [Entry]] = [:]
    private(set) var count = 0
    private var nextSequence: UInt64 = 0
    var limits: CookieLimits
    /// The list given, or nil for the system's, which is read only when a first `Set-Cookie`
    /// arrives (a session that never sees one never reads the file).
    private let givenSuffixes: PublicSuffixList?
    var publicSuffixes: PublicSuffixList { self.givenSuffixes ?? .system }

    init(limits: CookieLimits = CookieLimits(), publicSuffixes: PublicSuffixList? = nil) {
        self.limits = limits
        self.givenSuffixes = publicSuffixes
    }

    /// Whether the suffixes in use are only the implicit rule, found without reading the system
    /// list: the file is missing.
    var lacksPublicSuffixes: Bool {
        if let givenSuffixes { return givenSuffixes.isImplicitRuleOnly }
        return !FileManager.default.isReadableFile(atPath: PublicSuffixList.systemListPath)
    }

    // MARK: Storing

    /// Stores the cookies of `Set-Cookie` fields received from `url`. Returns whether anything
    /// changed. A URL whose scheme is not HTTP's or WebSocket's stores nothing (as in Go's jar):
    /// cookies are HTTP state.
    @discardableResult
    mutating func store(setCookieFields fields: some Sequence<String>, from url: URL, now: Date) -> Bool {
        guard CookieMatching.carriesCookies(url) else { return false }
        var changed = false
        let suffixes = self.publicSuffixes
        for field in fields {
            guard let cookie = Cookie(setCookie: field, for: url, now: now, publicSuffixes: suffixes) else { continue }
            changed = self.store(cookie, fromSecureOrigin: CookieMatching.isSecure(url), now: now) || changed
        }
        if changed { self.evict(now: now) }
        return changed
    }

    /// Stores one cookie with the rules of RFC 6265bis 5.7 that depend on the store: a cookie from
    /// a non-secure origin may not shadow a secure one; a namesake (same name, domain, host-only
    /// flag and path) is replaced and its creation date kept; an expired cookie only deletes its
    /// namesake. Returns whether anything changed.
    @discardableResult
    mutating func store(_ cookie: Cookie, fromSecureOrigin: Bool, now: Date) -> Bool {
        var cookie = cookie
        if !cookie.isSecure, !fromSecureOrigin, self.shadowsSecureCookie(cookie) { return false }
        let index = self.domains[cookie.domain]?.firstIndex { Self.sameIdentity($0.cookie, cookie) }
        var sequence = self.nextSequence
        if let index {
            // The replacement takes the place of the cookie it replaces: same creation date, same
            // rank among cookies created at the same instant.
            let replaced = self.domains[cookie.domain]![index]
            cookie.creationDate = replaced.cookie.creationDate
            sequence = replaced.sequence
            self.remove(domain: cookie.domain, at: index)
        } else {
            self.nextSequence += 1
        }
        if cookie.isExpired(at: now) { return index != nil }
        cookie.lastAccessDate = now
        self.domains[cookie.domain, default: []].append(Entry(cookie: cookie, sequence: sequence))
        self.count += 1
        return true
    }

    /// Whether a stored secure cookie with the same name has a domain that domain-matches the new
    /// one's (or the reverse) and a path the new one's path-matches.
    private func shadowsSecureCookie(_ cookie: Cookie) -> Bool {
        for (domain, entries) in self.domains
        where CookieMatching.domainMatches(domain, cookie.domain) || CookieMatching.domainMatches(cookie.domain, domain) {
            for entry in entries where entry.cookie.isSecure && entry.cookie.name.utf8.elementsEqual(cookie.name.utf8) {
                if CookieMatching.pathMatches(cookie.path, entry.cookie.path) { return true }
            }
        }
        return false
    }

    /// Whether `b` replaces `a`: the same name, domain, host-only flag and path (RFC 6265bis 5.7
    /// step 23). Names and paths are compared as bytes, as the server sent them: `String`'s `==`
    /// would take `caf\u{E9}` and `cafe\u{301}`, or U+212A KELVIN SIGN and `K`, for one name.
    static func sameIdentity(_ a: Cookie, _ b: Cookie) -> Bool {
        a.name.utf8.elementsEqual(b.name.utf8) && a.domain == b.domain && a.isHostOnly == b.isHostOnly
            && a.path.utf8.elementsEqual(b.path.utf8)
    }

    // MARK: Retrieving

    /// The cookies to send to `url`, longest path first, then oldest first; their last-access
    /// dates become `now`. Expired cookies met on the way are removed.
    mutating func cookies(for url: URL, now: Date) -> [Cookie] {
        var found: [Entry] = []
        self.forEachMatch(of: url, now: now) { found.append($0) }
        found.sort(by: Self.headerOrder)
        return found.map(\.cookie)
    }

    /// The `Cookie` field value for `url` (the cookies of ``cookies(for:now:)``, in its order), or
    /// nil for none. Sorts and copies only what the field needs, not whole cookies: every request
    /// of a session with cookies asks for it.
    mutating func headerValue(for url: URL, now: Date) -> String? {
        var found: [(key: OrderKey, name: String, value: String)] = []
        var length = 0
        self.forEachMatch(of: url, now: now) { entry in
            found.append((entry.orderKey, entry.cookie.name, entry.cookie.value))
            length += entry.cookie.name.utf8.count + entry.cookie.value.utf8.count + 3
        }
        found.sort { Self.headerOrder($0.key, $1.key) }
        return Cookie.headerValue(namesAndValues: found.lazy.map { ($0.name, $0.value) }, capacity: length)
    }

    /// Calls `body` with each entry that goes with a request to `url` (host and parent domains,
    /// path, `Secure`), after marking it used at `now`; removes the expired entries met. A URL
    /// whose scheme is not HTTP's or WebSocket's (`ftp:`, `file:`) gets none.
    private mutating func forEachMatch(of url: URL, now: Date, _ body: (Entry) -> Void) {
        // An empty jar (the common case) does not parse the URL's host.
        guard self.count > 0, CookieMatching.carriesCookies(url), let host = CookieMatching.canonicalHost(of: url) else { return }
        let path = CookieMatching.requestPath(of: url)
        let secure = CookieMatching.isSecure(url)
        // The host and each parent domain (an IP address and a Unix socket's path have no parents).
        var domain = Substring(host)
        let namesItselfOnly = CookieMatching.isUnixSocket(url) || CookieMatching.isIPAddress(host)
        while true {
            let key = String(domain)
            if self.domains[key] != nil {
                // In place: the domain's array is not copied.
                let removed = Self.collect(from: &self.domains[key]!, host: host, path: path, secure: secure, now: now, body)
                if removed > 0 {
                    self.count -= removed
                    if self.domains[key]!.isEmpty { self.domains[key] = nil }
                }
            }
            guard !namesItselfOnly, let dot = domain.firstIndex(of: ".") else { break }
            domain = domain[domain.index(after: dot)...]
        }
    }

    /// Passes the entries of one domain that go with the request to `body`, marking them used;
    /// removes the expired ones and returns how many.
    private static func collect(
        from entries: inout [Entry], host: String, path: String, secure: Bool, now: Date, _ body: (Entry) -> Void
    ) -> Int {
        var expired = 0
        for index in entries.indices {
            if entries[index].cookie.isExpired(at: now) {
                expired += 1
                continue
            }
            guard entries[index].cookie.matches(host: host, path: path, isSecure: secure) else { continue }
            entries[index].cookie.lastAccessDate = now
            body(entries[index])
        }
        if expired > 0 { entries.removeAll { $0.cookie.isExpired(at: now) } }
        return expired
    }

    /// Longer paths first; equal lengths, earlier creation first.
    static func headerOrder(_ a: Entry, _ b: Entry) -> Bool {
        Self.headerOrder(a.orderKey, b.orderKey)
    }

    /// What the `Cookie` field's order looks at: the path's length, the creation date, the
    /// order of arrival.
    typealias OrderKey = (pathLength: Int, creation: Date, sequence: UInt64)

    static func headerOrder(_ a: OrderKey, _ b: OrderKey) -> Bool {
        if a.pathLength != b.pathLength { return a.pathLength > b.pathLength }
        if a.creation != b.creation { return a.creation < b.creation }
        return a.sequence < b.sequence
    }

    /// Every cookie, oldest first (expired ones included until the next eviction).
    var allCookies: [Cookie] {
        self.domains.values.joined().sorted { ($0.cookie.creationDate, $0.sequence) < ($1.cookie.creationDate, $1.sequence) }
            .map(\.cookie)
    }

    // MARK: Removing

    /// Deletes the cookie with `cookie`'s identity; its domain is compared canonical, as
    /// ``MemoryCookieStorage/setCookie(_:)`` stores it (``Cookie/domain`` may have been set to
    /// `.Example.com` after the cookie was made).
    @discardableResult
    mutating func delete(_ cookie: Cookie) -> Bool {
        var cookie = cookie
        cookie.domain = CookieMatching.canonicalDomain(cookie.domain)
        let domain = cookie.domain
        guard let index = self.domains[domain]?.firstIndex(where: { Self.sameIdentity($0.cookie, cookie) }) else { return false }
        self.remove(domain: domain, at: index)
        return true
    }

    /// Removes the cookies created at `date` or later. Returns whether anything was removed.
    @discardableResult
    mutating func removeCookies(since date: Date) -> Bool {
        self.removeAll { $0.creationDate >= date }
    }

    @discardableResult
    mutating func removeAll(where shouldRemove: (Cookie) -> Bool = { _ in true }) -> Bool {
        let before = self.count
        for domain in Array(self.domains.keys) {
            self.domains[domain]!.removeAll { shouldRemove($0.cookie) }
            if self.domains[domain]!.isEmpty { self.domains[domain] = nil }
        }
        self.count = self.domains.values.reduce(0) { $0 + $1.count }
        return self.count != before
    }

    private mutating func remove(domain: String, at index: Int) {
        self.domains[domain]!.remove(at: index)
        if self.domains[domain]!.isEmpty { self.domains[domain] = nil }
        self.count -= 1
    }

    /// Drops expired cookies, then the least recently used cookies of each domain over
    /// ``CookieLimits/perDomain`` (those without `Secure` first), then the least recently used
    /// over ``CookieLimits/total`` (RFC 6265bis 5.7's order). Were a domain's `Secure` cookies
    /// evicted as readily, a plain `http` origin of the domain could push one out with a flood of
    /// its own and then set its namesake, which it may not do while the `Secure` one is held.
    mutating func evict(now: Date) {
        self.removeAll { $0.isExpired(at: now) }
        for domain in Array(self.domains.keys) where self.domains[domain]!.count > self.limits.perDomain {
            var entries = self.domains[domain]!
            // Kept first: `Secure` before not, then the most recently used.
            entries.sort {
                $0.cookie.isSecure != $1.cookie.isSecure
                    ? $0.cookie.isSecure : ($0.cookie.lastAccessDate, $0.sequence) > ($1.cookie.lastAccessDate, $1.sequence)
            }
            let dropped = entries.count - max(self.limits.perDomain, 0)
            entries.removeLast(dropped)
            self.count -= dropped
            self.domains[domain] = entries.isEmpty ? nil : entries
        }
        guard self.count > self.limits.total else { return }
        var all = self.domains.values.joined().map { ($0.cookie.lastAccessDate, $0.sequence) }
        all.sort { $0 > $1 }
        guard self.limits.total > 0 else {
            self.removeAll()
            return
        }
        // Everything less recently used than the `total`-th most recent goes.
        let threshold = all[self.limits.total - 1]
        for domain in Array(self.domains.keys) {
            self.domains[domain]!.removeAll { ($0.cookie.lastAccessDate, $0.sequence) < threshold }
            if self.domains[domain]!.isEmpty { self.domains[domain] = nil }
        }
        self.count = self.domains.values.reduce(0) { $0 + $1.count }
    }
}
