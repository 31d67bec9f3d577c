import Foundation
import HTTPTypes

/// What to do with a response that may be a redirect (``RedirectPlanner``).
public enum RedirectStep: Sendable {
    /// Not a redirect to follow: the response is final.
    case none
    /// Follow with this request, subject to the delegate's say.
    case follow(Request)
    /// The redirect breaks the policy (too many hops, a cycle).
    case fail(String)
}

/// Decides whether and how to follow a redirect: ``NIOEngine``'s rule, for any engine, so that a
/// request's ``RequestOptions/redirectPolicy`` means the same on each. Pure: an engine runs it on
/// each response head.
///
/// A 301, 302, 303, 307 or 308 with a `Location` that resolves (RFC 3986 5.2, dot segments
/// removed from an absolute one's path too) to an `http` or `https` URL is followed within the
/// policy's maximum (and without returning to a URL already requested, when cycles are not
/// allowed); a 303, and a 301 or 302 to a POST, become a GET without a body or the fields that
/// describe one (`Content-Type`, `-Length`, `-Encoding`, `-Language`, `-Location`,
/// `Transfer-Encoding`); a body that cannot be sent again (``RequestBody/isReplayable``) leaves a
/// 307 or 308 as the response; credentials and cookies are not sent to another origin. A
/// `Proxy-Authorization` the request carries is the proxy's credential, not the origin's: on
/// ``NIOEngine`` it goes on to another origin reached through the same proxy (as OkHttp and curl
/// keep it), and is dropped for one reached through another proxy or none.
public enum RedirectPlanner {
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// The step for `response` to `request`.
    /// - Parameters:
    ///   - response: The response head.
    ///   - request: The request it answers.
    ///   - policy: The request's redirect policy.
    ///   - redirectCount: How many redirects the exchange followed before this one.
    ///   - visitedURLs: The URLs of the exchange's requests before `request` (`request`'s own
    ///     counts as visited too).
    public static func step(
        for response: HTTPResponse,
        request: Request,
        policy: NIOEngine.RedirectPolicy,
        redirectCount: Int,
        visitedURLs: Set<String>
    ) -> RedirectStep {
        self.step(for: response, request: request, policy: policy, redirectCount: redirectCount, visitedURLs: visitedURLs, routes: nil as NIOEngine?)
    }

    /// The step, for an engine whose `routes` say which proxy carries a request to a URL. A
    /// `Proxy-Authorization` then goes on to another origin that the same proxy carries; without
    /// `routes` (an engine that cannot tell), it goes no further than the origin. (The engine
    /// itself, not a closure over it: one was made, and the engine retained, for every response.)
    static func step<Routes: ProxyRoutes>(
        for response: HTTPResponse,
        request: Request,
        policy: NIOEngine.RedirectPolicy,
        redirectCount: Int,
        visitedURLs: Set<String>,
        routes: Routes?
    ) -> RedirectStep {
        guard case .follow(let maximum, let allowCycles) = policy,
            Self.redirectStatuses.contains(response.status.code),
            // The first `Location` when a server sends several (curl's choice): joined with
            // commas they named a URL none of them did.
            let location = response.headerFields[values: .location].first,
            var target = URL(string: URLText.removingDotSegments(URLText.normalized(location)), relativeTo: request.url)?.absoluteURL,
            let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https" || Self.staysOnSocket(request.url, target),
            target.host?.isEmpty == false
        else { return .none }
        // RFC 9110 10.2.2: a Location without a fragment keeps the request's.
        if target.fragment == nil, let fragment = request.url.fragment(percentEncoded: true),
            let withFragment = URL(string: target.absoluteString + "#" + fragment)
        {
            target = withFragment
        }

        if redirectCount >= maximum {
            return .fail("more than \(maximum) redirects")
        }
        if !allowCycles, target.absoluteString == request.url.absoluteString || visitedURLs.contains(target.absoluteString) {
            return .fail("redirect cycle back to \(Request.redacted(target))")
        }

        var next = request
        next.url = target
        let status = response.status.code
        let becomesGET =
            (status == 303 && request.method != .head)
            || ((status == 301 || status == 302) && request.method == .post)
        if becomesGET {
            next.method = .get
            next.body = .empty
            // The fields that describe the body go with it (Fetch's request-body-header names):
            // a `GET` saying `Content-Encoding: gzip` (``RequestCompressor``'s) of no body is
            // refused by servers that decode what they are told is coded.
            next.headerFields[.contentType] = nil
            next.headerFields[.contentLength] = nil
            next.headerFields[.transferEncoding] = nil
            next.headerFields[.contentEncoding] = nil
            next.headerFields[.contentLanguage] = nil
            next.headerFields[.contentLocation] = nil
            // A caller's `Expect: 100-continue` asked about the body: a request without one must
            // not send it (RFC 9110 10.1.1).
            next.headerFields[.expect] = nil
        } else if !request.body.isReplayable {
            // A streamed body was consumed by the first hop and cannot be sent again.
            return .none
        }
        if !request.url.isSameOrigin(as: target) {
            next.headerFields[.authorization] = nil
            next.headerFields[.cookie] = nil
            // The proxy's credential, not the origin's (RFC 9110 11.7.2): kept for a target the
            // same proxy carries. (The engine sends it only to a forwarding proxy, never through
            // a tunnel or to a server.)
            if next.headerFields.contains(.proxyAuthorization), !Self.sameProxy(request.url, target, routes) {
                next.headerFields[.proxyAuthorization] = nil
            }
            // A caller's `Host` names the first origin (a virtual host behind an address): the
            // next one is named by its URL (curl replaces it for a new host, Go keeps it only for
            // a relative Location), never told the first origin's internal name.
            next.headerFields[Self.hostField] = nil
        }
        return .follow(next)
    }

    /// Whether `routes` send requests to both `from` and `to` through one proxy; false without
    /// `routes`, and when either goes without one.
    static func sameProxy<Routes: ProxyRoutes>(_ from: URL, _ to: URL, _ routes: Routes?) -> Bool {
        guard let routes, let carrying = routes.proxy(carrying: from) else { return false }
        return routes.proxy(carrying: to) == carrying
    }

    /// `Host`, which swift-http-types names no constant for (its pseudo-header is `:authority`).
    static let hostField = HTTPField.Name("Host")!

    /// Whether a redirect to an `http+unix` or `https+unix` URL stays on the socket of the request
    /// it answers: the same scheme (any case) and the same path, byte for byte. Only such a
    /// redirect to a socket is followed: a server must not send a client to a local socket it was
    /// not asked to reach (a redirect from `http://` to `http+unix://%2Fvar%2Frun%2Fdocker.sock`).
    static func staysOnSocket(_ from: URL, _ target: URL) -> Bool {
        guard let socket = target.unixSocketTarget, let current = from.unixSocketTarget else { return false }
        return socket.path == current.path && socket.tls == current.tls
    }
}

/// Which proxy carries a request to a URL (``NIOEngine``'s routes), for ``RedirectPlanner``'s
/// `Proxy-Authorization` rule.
protocol ProxyRoutes {
    /// The proxy that carries a request to `url`, or nil when none does.
    func proxy(carrying url: URL) -> NIOEngine.Proxy?
}

extension NIOEngine: ProxyRoutes {}
