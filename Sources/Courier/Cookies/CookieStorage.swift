import Foundation
import HTTPTypes

/// A cookie store (URLSession's `HTTPCookieStorage`): it keeps the cookies of `Set-Cookie` fields
/// and gives the cookies that go with a request, for its `Cookie` field.
///
/// A ``SessionManager`` consults its configuration's ``SessionConfiguration/httpCookieStorage``
/// on every hop of a request, redirects included: before the hop, for the `Cookie` field (after
/// the caller's own, which goes only to the first hop's origin); when a response head arrives,
/// to store its `Set-Cookie` fields. ``RequestOptions/httpShouldHandleCookies`` and
/// ``SessionConfiguration/httpShouldHandleCookies`` turn that off.
///
/// Courier has two: ``MemoryCookieStorage``, every session's default, and ``FileCookieStorage``,
/// which keeps its cookies in a Netscape `cookies.txt` file (curl's and wget's format). A store
/// may be shared by sessions and used from any thread: implementations must be thread safe.
public protocol CookieStorage: AnyObject, Sendable {
    /// The cookies to send with a request to `url`, in the order of its `Cookie` field: longer
    /// paths first, then older cookies first. Expired cookies are never returned; the returned
    /// cookies count as used (for eviction).
    func cookies(for url: URL) -> [Cookie]

    /// The `Cookie` field value for a request to `url` (``cookies(for:)`` joined as `a=1; b=2`),
    /// or nil when no cookie goes with it. A store may answer it without making the cookies; the
    /// default joins ``cookies(for:)``.
    func cookieHeader(for url: URL) -> String?

    /// Stores the cookies of the `Set-Cookie` field values of a response to a request for `url`,
    /// with the rules of RFC 6265bis (see ``Cookie/init(setCookie:for:now:publicSuffixes:)``).
    func storeCookies(fromSetCookieFields fields: [String], for url: URL)

    /// Stores a cookie made by hand, replacing the one with the same name, domain, host-only
    /// flag and path. An expired cookie deletes its namesake.
    func setCookie(_ cookie: Cookie)

    /// Deletes the cookie with the same name, domain, host-only flag and path, if any.
    func deleteCookie(_ cookie: Cookie)

    /// Every cookie, oldest first.
    var allCookies: [Cookie] { get }

    /// Deletes the cookies created at `date` or later.
    func removeCookies(since date: Date)

    /// Deletes every cookie.
    func removeAllCookies()

    /// Whether the store writes its cookies anywhere but memory. A session whose configuration is
    /// ``SessionConfiguration/ephemeral`` refuses such a store.
    var isPersistent: Bool { get }
}

extension CookieStorage {
    /// A store keeps its cookies in memory unless it says otherwise.
    public var isPersistent: Bool { false }

    /// The `Cookie` field value for a request to `url`, or nil when no cookie goes with it.
    public func cookieHeader(for url: URL) -> String? {
        Cookie.headerValue(for: self.cookies(for: url))
    }

    /// Stores the cookies a response's `Set-Cookie` fields set for a request to `url`.
    public func storeCookies(from response: HTTPResponse, for url: URL) {
        let fields = response.headerFields[values: .setCookie]
        guard !fields.isEmpty else { return }
        self.storeCookies(fromSetCookieFields: fields, for: url)
    }
}
