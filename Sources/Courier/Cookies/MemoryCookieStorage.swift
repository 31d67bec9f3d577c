import Foundation
import Logging
import NIOConcurrencyHelpers
import Synchronization

/// A cookie store in memory: every session's default (``SessionConfiguration/httpCookieStorage``).
///
/// Cookies live as long as the store. It applies the rules of RFC 6265bis: domain and path
/// matching, `Secure`, public-suffix refusal (with ``PublicSuffixList/system``), expiry, and
/// ``CookieLimits`` with least-recently-used eviction.
///
/// ```swift
/// let cookies = MemoryCookieStorage()
/// var configuration = SessionConfiguration.default
/// configuration.httpCookieStorage = cookies
/// let manager = HTTPSessionManager(baseURL: URL(string: "https://example.com"), configuration: configuration)
/// _ = try await manager.post("login", parameters: ["user": "ann", "password": "secret"])
/// print(cookies.allCookies)                                   // what the server set
/// print(cookies.cookieHeader(for: URL(string: "https://example.com/account")!) ?? "")  // what goes next
/// ```
public final class MemoryCookieStorage: CookieStorage {
    let jar: NIOLockedValueBox<CookieJar>
    let clock: @Sendable () -> Date
    /// Called after a change, outside the lock (``FileCookieStorage`` saves then).
    let onChange: (@Sendable () -> Void)?
    /// Whether the jar holds no cookie, kept beside it so that a request to a session whose jar is
    /// empty (most sessions, most of the time) asks for its cookies without the clock or the lock.
    private let isEmpty = Atomic<Bool>(true)

    /// Makes an empty store.
    /// - Parameters:
    ///   - limits: How many cookies to keep per domain and in all.
    ///   - publicSuffixes: The suffixes under which a `Domain` attribute is refused; nil (the
    ///     default) for ``PublicSuffixList/system``, read when the first `Set-Cookie` arrives.
    ///     When the list is missing, a `warning` says so in `logger`.
    ///   - logger: Where to log; nothing is logged without one.
    ///   - clock: The time (for expiry and last access); tests pass their own.
    public convenience init(
        limits: CookieLimits = CookieLimits(),
        publicSuffixes: PublicSuffixList? = nil,
        logger: Logger? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(
            jar: NIOLockedValueBox(CookieJar(limits: limits, publicSuffixes: publicSuffixes)), logger: logger, clock: clock,
            onChange: nil)
    }

    /// A store over a jar another object also reads (``FileCookieStorage``'s writer).
    init(jar: NIOLockedValueBox<CookieJar>, logger: Logger?, clock: @escaping @Sendable () -> Date, onChange: (@Sendable () -> Void)?) {
        self.jar = jar
        self.clock = clock
        self.onChange = onChange
        if jar.withLockedValue({ $0.lacksPublicSuffixes }) {
            logger?.warning(
                "no public suffix list (\(PublicSuffixList.systemListPath) is missing: apt-get install publicsuffix); only single-label cookie domains are refused")
        }
    }

    /// The limits; lowering them evicts at once.
    public var limits: CookieLimits {
        get { self.update { $0.limits } }
        set {
            let now = self.clock()
            self.update { jar in
                jar.limits = newValue
                jar.evict(now: now)
            }
            self.onChange?()
        }
    }

    public func cookies(for url: URL) -> [Cookie] {
        if self.isEmpty.load(ordering: .acquiring) { return [] }
        let now = self.clock()
        return self.update { $0.cookies(for: url, now: now) }
    }

    public func cookieHeader(for url: URL) -> String? {
        if self.isEmpty.load(ordering: .acquiring) { return nil }
        let now = self.clock()
        return self.update { $0.headerValue(for: url, now: now) }
    }

    public func storeCookies(fromSetCookieFields fields: [String], for url: URL) {
        guard !fields.isEmpty else { return }
        let now = self.clock()
        let changed = self.update { $0.store(setCookieFields: fields, from: url, now: now) }
        if changed { self.onChange?() }
    }

    public func setCookie(_ cookie: Cookie) {
        let now = self.clock()
        var cookie = cookie
        cookie.domain = CookieMatching.canonicalDomain(cookie.domain)
        let changed = self.update { jar in
            defer { jar.evict(now: now) }
            return jar.store(cookie, fromSecureOrigin: true, now: now)
        }
        if changed { self.onChange?() }
    }

    public func deleteCookie(_ cookie: Cookie) {
        if self.update({ $0.delete(cookie) }) { self.onChange?() }
    }

    public var allCookies: [Cookie] {
        let now = self.clock()
        return self.update { $0.allCookies }.filter { !$0.isExpired(at: now) }
    }

    public func removeCookies(since date: Date) {
        if self.update({ $0.removeCookies(since: date) }) { self.onChange?() }
    }

    public func removeAllCookies() {
        if self.update({ $0.removeAll() }) { self.onChange?() }
    }

    /// Replaces the whole content (a file read back), keeping the limits.
    func replaceAll(with cookies: [Cookie]) {
        let now = self.clock()
        self.update { jar in
            jar.removeAll()
            for cookie in cookies { jar.store(cookie, fromSecureOrigin: true, now: now) }
            jar.evict(now: now)
        }
    }

    /// Runs `body` on the jar under its lock, and notes whether the jar is left empty.
    private func update<Result>(_ body: (inout CookieJar) throws -> Result) rethrows -> Result {
        try self.jar.withLockedValue { jar in
            defer { self.isEmpty.store(jar.count == 0, ordering: .releasing) }
            return try body(&jar)
        }
    }
}
