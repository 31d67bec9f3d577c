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
///
/// Storing a cookie does not look through the jar: its namesake is found in its domain's
/// `Bucket` index, and the `Secure` cookies a cookie from plain `http` may not shadow in
/// `secureCookies`, by name (only those of its name are compared). A response's thousands of
/// `Set-Cookie` fields (a 256 KiB head holds some 14,000) are thus stored in time linear in
/// their number, then evicted once, with a sort: the lock is not held for seconds.
struct CookieJar: Sendable {
    struct Entry: Sendable {
        var cookie: Cookie
        /// Insertion order, which breaks ties between equal creation dates.
        var sequence: UInt64

        var orderKey: OrderKey { (self.cookie.path.utf8.count, self.cookie.creationDate, self.sequence) }
    }

    /// A string compared and hashed as its UTF-8 bytes, as the server sent it: `String`'s `==`
    /// would take `caf\u{E9}` and `cafe\u{301}`, or U+212A KELVIN SIGN and `K`, for one name.
    struct Bytes: Hashable, Sendable {
        let string: String

        static func == (a: Bytes, b: Bytes) -> Bool { a.string.utf8.elementsEqual(b.string.utf8) }

        func hash(into hasher: inout Hasher) {
            var string = self.string
            string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            hasher.combine(string.utf8.count)
        }
    }

    /// What a cookie that replaces another has in common with it (RFC 6265bis 5.7 step 23): the
    /// same name, host-only flag and path, names and paths as bytes; and the same domain, the
    /// key of the `Bucket` the identity is looked up in.
    struct Identity: Hashable, Sendable {
        let name: Bytes
        let path: Bytes
        let isHostOnly: Bool

        init(_ cookie: Cookie) {
            self.name = Bytes(string: cookie.name)
            self.path = Bytes(string: cookie.path)
            self.isHostOnly = cookie.isHostOnly
        }
    }

    /// One domain's cookies, in no particular order (every reader sorts them), with the position
    /// of each by identity. An entry is replaced in place and removed by moving the last one
    /// into its slot, so neither shifts the others.
    struct Bucket: Sendable {
        private(set) var entries: [Entry] = []
        private var positions: [Identity: Int] = [:]

        var count: Int { self.entries.count }
        var isEmpty: Bool { self.entries.isEmpty }

        func position(of identity: Identity) -> Int? { self.positions[identity] }

        /// Adds an entry no other has the identity of.
        mutating func append(_ entry: Entry) {
            self.positions[Identity(entry.cookie)] = self.entries.count
            self.entries.append(entry)
        }

        /// Puts `entry`, of the same identity, in the place of the one at `index`.
        mutating func replace(at index: Int, with entry: Entry) {
            self.entries[index] = entry
        }

        @discardableResult
        mutating func remove(at index: Int) -> Entry {
            let removed = self.entries[index]
            self.positions[Identity(removed.cookie)] = nil
            let last = self.entries.removeLast()
            if index < self.entries.count {
                self.entries[index] = last
                self.positions[Identity(last.cookie)] = index
            }
            return removed
        }

        /// Removes the entries `shouldRemove` picks (asking once about each), and returns them.
        /// In place: nothing is allocated when nothing is removed.
        mutating func removeAll(where shouldRemove: (Entry) -> Bool) -> [Entry] {
            var removed: [Entry] = []
            var kept = 0
            for index in self.entries.indices {
                if shouldRemove(self.entries[index]) {
                    removed.append(self.entries[index])
                } else {
                    if kept != index { self.entries.swapAt(kept, index) }
                    kept += 1
                }
            }
            guard !removed.isEmpty else { return [] }
            self.entries.removeLast(self.entries.count - kept)
            self.reindex()
            return removed
        }

        /// Keeps the `limit` entries to keep first (`Secure` ones, then the most recently used),
        /// and returns the others.
        mutating func evict(keeping limit: Int) -> [Entry] {
            guard self.entries.count > limit else { return [] }
            self.entries.sort {
                $0.cookie.isSecure != $1.cookie.isSecure
                    ? $0.cookie.isSecure : ($0.cookie.lastAccessDate, $0.sequence) > ($1.cookie.lastAccessDate, $1.sequence)
            }
            let removed = Array(self.entries[limit...])
            // A copy, not `removeLast`: the storage of a flood's thousands is not kept for 50.
            self.entries = Array(self.entries[..<limit])
            self.reindex()
            return removed
        }

        /// Passes the entries that go with the request to `body`, marking them used; removes the
        /// expired ones and returns them.
        mutating func collect(host: String, path: String, secure: Bool, now: Date, _ body: (Entry) -> Void) -> [Entry] {
            var expired = 0
            for index in self.entries.indices {
                if self.entries[index].cookie.isExpired(at: now) {
                    expired += 1
                    continue
                }
                guard self.entries[index].cookie.matches(host: host, path: path, isSecure: secure) else { continue }
                self.entries[index].cookie.lastAccessDate = now
                body(self.entries[index])
            }
            return expired > 0 ? self.removeAll { $0.cookie.isExpired(at: now) } : []
        }

        private mutating func reindex() {
            self.positions = Dictionary(minimumCapacity: self.entries.count)
            for (index, entry) in self.entries.enumerated() { self.positions[Identity(entry.cookie)] = index }
        }
    }

    /// Where a `Secure` cookie is: its domain and path.
    struct SecurePlace: Hashable, Sendable {
        let domain: String
        let path: Bytes
    }

    private(set) var domains: [String: Bucket] = [:]
    private(set) var count = 0
    /// The `Secure` cookies by name, counted by place (two may share one, host-only or not), for
    /// the rule that a non-secure origin may not shadow them.
    private var secureCookies: [Bytes: [SecurePlace: Int]] = [:]
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
    /// cookies are HTTP state. The limits are applied once, after the last field.
    @discardableResult
    mutating func store(setCookieFields fields: some Sequence<String>, from url: URL, now: Date) -> Bool {
        guard CookieMatching.carriesCookies(url) else { return false }
        var changed = false
        let suffixes = self.publicSuffixes
        let secure = CookieMatching.isSecure(url)
        for field in fields {
            guard let cookie = Cookie(setCookie: field, for: url, now: now, publicSuffixes: suffixes) else { continue }
            changed = self.store(cookie, fromSecureOrigin: secure, now: now) || changed
        }
        if changed { self.evict(now: now) }
        return changed
    }

    /// Stores one cookie with the rules of RFC 6265bis 5.7 that depend on the store: a cookie from
    /// a non-secure origin may not shadow a secure one; a namesake (same name, domain, host-only
    /// flag and path) is replaced and its creation date kept; an expired cookie only deletes its
    /// namesake. Returns whether anything changed. Applies no limit: `evict(now:)` does.
    @discardableResult
    mutating func store(_ cookie: Cookie, fromSecureOrigin: Bool, now: Date) -> Bool {
        var cookie = cookie
        if !cookie.isSecure, !fromSecureOrigin, self.shadowsSecureCookie(cookie) { return false }
        let domain = cookie.domain
        if let index = self.domains[domain]?.position(of: Identity(cookie)) {
            if cookie.isExpired(at: now) {
                self.remove(domain: domain, at: index)
                return true
            }
            // The replacement takes the place of the cookie it replaces: same creation date, same
            // rank among cookies created at the same instant.
            let replaced = self.domains[domain]!.entries[index]
            cookie.creationDate = replaced.cookie.creationDate
            cookie.lastAccessDate = now
            self.domains[domain]!.replace(at: index, with: Entry(cookie: cookie, sequence: replaced.sequence))
            if replaced.cookie.isSecure { self.noteSecure(replaced.cookie, added: false) }
            if cookie.isSecure { self.noteSecure(cookie, added: true) }
            return true
        }
        let sequence = self.nextSequence
        self.nextSequence += 1
        if cookie.isExpired(at: now) { return false }
        cookie.lastAccessDate = now
        self.domains[domain, default: Bucket()].append(Entry(cookie: cookie, sequence: sequence))
        self.count += 1
        if cookie.isSecure { self.noteSecure(cookie, added: true) }
        return true
    }

    /// Whether a stored secure cookie with the same name has a domain that domain-matches the new
    /// one's (or the reverse) and a path the new one's path-matches.
    private func shadowsSecureCookie(_ cookie: Cookie) -> Bool {
        guard let places = self.secureCookies[Bytes(string: cookie.name)] else { return false }
        for place in places.keys
        where CookieMatching.domainMatches(place.domain, cookie.domain) || CookieMatching.domainMatches(cookie.domain, place.domain) {
            if CookieMatching.pathMatches(cookie.path, place.path.string) { return true }
        }
        return false
    }

    /// Counts a `Secure` cookie in or out of `secureCookies`.
    private mutating func noteSecure(_ cookie: Cookie, added: Bool) {
        let name = Bytes(string: cookie.name)
        let place = SecurePlace(domain: cookie.domain, path: Bytes(string: cookie.path))
        if added {
            self.secureCookies[name, default: [:]][place, default: 0] += 1
            return
        }
        guard let count = self.secureCookies[name]?[place] else { return }
        if count > 1 {
            self.secureCookies[name]![place] = count - 1
        } else {
            self.secureCookies[name]![place] = nil
            if self.secureCookies[name]!.isEmpty { self.secureCookies[name] = nil }
        }
    }

    /// Takes removed entries out of `count` and `secureCookies`.
    private mutating func noteRemoved(_ entries: [Entry]) {
        self.count -= entries.count
        for entry in entries where entry.cookie.isSecure { self.noteSecure(entry.cookie, added: false) }
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
                // In place: the domain's bucket is not copied.
                let removed = self.domains[key]!.collect(host: host, path: path, secure: secure, now: now, body)
                if !removed.isEmpty {
                    self.noteRemoved(removed)
                    if self.domains[key]!.isEmpty { self.domains[key] = nil }
                }
            }
            guard !namesItselfOnly, let dot = domain.firstIndex(of: ".") else { break }
            domain = domain[domain.index(after: dot)...]
        }
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
        self.domains.values.flatMap(\.entries).sorted { ($0.cookie.creationDate, $0.sequence) < ($1.cookie.creationDate, $1.sequence) }
            .map(\.cookie)
    }

    // MARK: Removing

    /// Deletes the cookie with `cookie`'s identity; its domain is compared canonical, as
    /// ``MemoryCookieStorage/setCookie(_:)`` stores it (``Cookie/domain`` may have been set to
    /// `.Example.com` after the cookie was made).
    @discardableResult
    mutating func delete(_ cookie: Cookie) -> Bool {
        let domain = CookieMatching.canonicalDomain(cookie.domain)
        guard let index = self.domains[domain]?.position(of: Identity(cookie)) else { return false }
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
        self.removeEntries { shouldRemove($0.cookie) }
    }

    @discardableResult
    private mutating func removeEntries(where shouldRemove: (Entry) -> Bool) -> Bool {
        let before = self.count
        for domain in Array(self.domains.keys) {
            let removed = self.domains[domain]!.removeAll(where: shouldRemove)
            guard !removed.isEmpty else { continue }
            self.noteRemoved(removed)
            if self.domains[domain]!.isEmpty { self.domains[domain] = nil }
        }
        return self.count != before
    }

    private mutating func remove(domain: String, at index: Int) {
        let removed = self.domains[domain]!.remove(at: index)
        if self.domains[domain]!.isEmpty { self.domains[domain] = nil }
        self.noteRemoved([removed])
    }

    /// Drops expired cookies, then the least recently used cookies of each domain over
    /// ``CookieLimits/perDomain`` (those without `Secure` first), then the least recently used
    /// over ``CookieLimits/total`` (RFC 6265bis 5.7's order). Were a domain's `Secure` cookies
    /// evicted as readily, a plain `http` origin of the domain could push one out with a flood of
    /// its own and then set its namesake, which it may not do while the `Secure` one is held.
    mutating func evict(now: Date) {
        self.removeAll { $0.isExpired(at: now) }
        for domain in Array(self.domains.keys) where self.domains[domain]!.count > self.limits.perDomain {
            let removed = self.domains[domain]!.evict(keeping: max(self.limits.perDomain, 0))
            self.noteRemoved(removed)
            if self.domains[domain]!.isEmpty { self.domains[domain] = nil }
        }
        guard self.count > self.limits.total else { return }
        guard self.limits.total > 0 else {
            self.removeAll()
            return
        }
        var all = self.domains.values.flatMap { $0.entries.lazy.map { ($0.cookie.lastAccessDate, $0.sequence) } }
        all.sort { $0 > $1 }
        // Everything less recently used than the `total`-th most recent goes.
        let threshold = all[self.limits.total - 1]
        self.removeEntries { ($0.cookie.lastAccessDate, $0.sequence) < threshold }
    }
}
