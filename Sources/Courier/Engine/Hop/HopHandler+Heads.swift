import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1

/// The request head ``HopHandler`` writes, and the sizes of heads as HTTP/1.1 text
/// (for the transaction's metrics).
extension HopHandler {
    /// The size of a request head as HTTP/1.1 text: request line, fields, blank line.
    static func size(of head: HTTPRequestHead) -> Int64 {
        // "METHOD SP target SP HTTP/1.1 CRLF" ... "CRLF"
        var size = head.method.rawValue.utf8.count + 1 + head.uri.utf8.count + 1 + 8 + 2 + 2
        for (name, value) in head.headers { size += name.utf8.count + 2 + value.utf8.count + 2 }
        return Int64(size)
    }

    /// The size of a response head as HTTP/1.1 text: status line, fields, blank line.
    static func size(of head: HTTPResponseHead) -> Int64 {
        // "HTTP/1.1 SP 200 SP reason CRLF" ... "CRLF"
        var size = 8 + 1 + 3 + 1 + head.status.reasonPhrase.utf8.count + 2 + 2
        for (name, value) in head.headers { size += name.utf8.count + 2 + value.utf8.count + 2 }
        return Int64(size)
    }

    /// The request head: origin-form target, `Host`, and the body's framing, as AHC writes them. A
    /// body with trailer fields goes chunked whatever its length, their names in `Trailer`
    /// (RFC 9110 6.6.2).
    static func head(for request: Request, key: ConnectionPool.Key, length: RequestBody.Length) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        // Room for Host, Trailer, the framing field and an HTTP/2 stream's Accept-Encoding.
        headers.reserveCapacity(request.headerFields.count + 4)
        let trailers = Self.trailers(of: request)
        var hasHost = false
        for field in request.headerFields {
            switch field.name {
            case .contentLength, .transferEncoding: continue
            case .trailer where trailers != nil: continue
            default: if field.name.canonicalName == "host" { hasHost = true }
            }
            headers.add(name: field.name.rawName, value: field.value)
        }
        if !hasHost {
            // A Character, not a String: Foundation's `contains(_: StringProtocol)` would bridge to
            // NSString (two allocations and a CFString search a request).
            let host = key.host.contains(Character(":")) ? "[\(key.host)]" : key.host
            headers.add(name: "Host", value: key.port == key.defaultPort ? host : "\(host):\(key.port)")
        }
        if let trailers {
            headers.add(name: "Trailer", value: Self.trailerNames(trailers))
        }
        switch trailers == nil ? length : .unknown {
        case .known(0):
            // No Content-Length where the method gives a body no meaning (RFC 9110 8.6).
            switch request.method {
            case .get, .head, .delete, .connect, .trace: break
            default: headers.add(name: "Content-Length", value: "0")
            }
        case .known(let length):
            headers.add(name: "Content-Length", value: String(length))
        case .unknown:
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        var target = request.url.path(percentEncoded: true)
        if target.isEmpty { target = "/" }
        if let query = request.url.query(percentEncoded: true) {
            target += "?" + query
        }
        return HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue), uri: target, headers: headers)
    }

    /// The trailer fields that end `request`'s body, as NIO's encoder writes them; nil for none
    /// (``OutgoingBody`` refused forbidden ones before the hop was made).
    static func trailers(of request: Request) -> HTTPHeaders? {
        guard let trailers = request.body.trailers, !trailers.isEmpty else { return nil }
        return HTTPHeaders(trailers.map { ($0.name.rawName, $0.value) })
    }

    /// The names of `trailers`, each once, for the `Trailer` field.
    static func trailerNames(_ trailers: HTTPHeaders) -> String {
        var seen = Set<String>()
        return trailers.map(\.name).filter { seen.insert($0.lowercased()).inserted }.joined(separator: ", ")
    }
}
