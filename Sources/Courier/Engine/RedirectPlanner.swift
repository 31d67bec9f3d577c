import Foundation
import HTTPTypes

/// What to do with a response that may be a redirect.
enum RedirectStep {
    /// Not a redirect to follow: the response is final.
    case none
    /// Follow with this request, subject to the delegate's say.
    case follow(Request)
    /// The redirect breaks the policy (too many hops, a cycle).
    case fail(String)
}

/// Decides whether and how to follow a redirect. Pure: the engine runs it on each response head.
enum RedirectPlanner {
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// - Parameter visitedURLs: The URLs of the exchange's requests before `request` (`request`'s
    ///   own counts as visited too).
    static func step(
        for response: HTTPResponse,
        request: Request,
        policy: NIOEngine.RedirectPolicy,
        redirectCount: Int,
        visitedURLs: Set<String>
    ) -> RedirectStep {
        guard case .follow(let maximum, let allowCycles) = policy,
            Self.redirectStatuses.contains(response.status.code),
            let location = response.headerFields.value(of: .location),
            var target = URL(string: Self.normalized(location), relativeTo: request.url)?.absoluteURL,
            let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https",
            target.host?.isEmpty == false
        else { return .none }
        // RFC 9110 10.2.2: a Location without a fragment keeps the request's.
        if target.fragment == nil, let fragment = request.url.fragment, let withFragment = URL(string: target.absoluteString + "#" + fragment) {
            target = withFragment
        }

        if redirectCount >= maximum {
            return .fail("more than \(maximum) redirects")
        }
        if !allowCycles, target.absoluteString == request.url.absoluteString || visitedURLs.contains(target.absoluteString) {
            return .fail("redirect cycle back to \(target.absoluteString)")
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
            next.headerFields[.contentType] = nil
            next.headerFields[.contentLength] = nil
            next.headerFields[.transferEncoding] = nil
        } else if !request.body.isReplayable {
            // A streamed body was consumed by the first hop and cannot be sent again.
            return .none
        }
        if !request.url.isSameOrigin(as: target) {
            next.headerFields[.authorization] = nil
            next.headerFields[.proxyAuthorization] = nil
            next.headerFields[.cookie] = nil
        }
        return .follow(next)
    }

    /// `location` with what RFC 3986 does not allow after the authority percent-encoded as UTF-8
    /// (`[`, `]`, spaces, non-ASCII, a second `#`, a `%` not followed by two hex digits), and
    /// every `%XX` already there kept. Foundation's parser, given one character it does not
    /// allow, encodes the whole component again, `%` included: `?f[n]=J%C3%B6rg` went out as
    /// `?f%5Bn%5D=J%25C3%25B6rg`, and the server read `J%C3%B6rg` instead of `Jörg` (browsers,
    /// curl and Node keep the escapes). The scheme and authority are left as they are.
    static func normalized(_ location: String) -> String {
        let bytes = Array(location.utf8)
        // Where the authority ends: after `scheme://host` or `//host`, else at once.
        var start = 0
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
           bytes[..<colon].allSatisfy({ Self.isSchemeByte($0) }), bytes[colon...].starts(with: Array("://".utf8)) {
            start = colon + 3
        } else if bytes.starts(with: Array("//".utf8)) {
            start = 2
        }
        if start > 0 {
            while start < bytes.count, ![UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(bytes[start]) { start += 1 }
        }
        var index = start
        var sawFragment = false
        var needsWork = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count, bytes[index + 1].isHexDigit, bytes[index + 2].isHexDigit {
                index += 3
                continue
            }
            if byte == UInt8(ascii: "#"), !sawFragment {
                sawFragment = true
            } else if !Self.isAllowed(byte) {
                needsWork = true
                break
            }
            index += 1
        }
        // The common Location needs nothing: no copy.
        guard needsWork else { return location }
        var output = Array(bytes[..<start])
        sawFragment = false
        index = start
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count, bytes[index + 1].isHexDigit, bytes[index + 2].isHexDigit {
                output += bytes[index...(index + 2)]
                index += 3
                continue
            }
            if byte == UInt8(ascii: "#"), !sawFragment {
                sawFragment = true
                output.append(byte)
            } else if Self.isAllowed(byte) {
                output.append(byte)
            } else {
                output += Array(String(format: "%%%02X", byte).utf8)
            }
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// RFC 3986's unreserved and reserved characters after the authority, but `#` and the
    /// brackets (allowed only around an IP literal): the bytes a path, query or fragment keeps.
    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        case UInt8(ascii: ":"), UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "@"): true
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
            UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "="):
            true
        default: false
        }
    }

    private static func isSchemeByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."):
            true
        default: false
        }
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
        default: false
        }
    }
}
