import Foundation
import NIOFoundationCompat
import NIOCore
import NIOHTTP1

/// httpbin's routes and Courier's failure routes: a plain function from a request to a ``Reply``,
/// run on the event loop with no task.
enum HTTPBinRoutes {
    static func reply(to request: IncomingRequest) -> Reply {
        let components = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard let first = components.first else { return .notFound }
        let rest = Array(components.dropFirst())
        let method = request.head.method

        switch (first, rest.count) {
        case ("get", 0): return only([.GET, .HEAD], method) { HTTPBinEcho.reply(HTTPBinEcho.get(request)) }
        case ("post", 0): return only([.POST], method) { HTTPBinEcho.reply(HTTPBinEcho.withBody(request)) }
        case ("put", 0): return only([.PUT], method) { HTTPBinEcho.reply(HTTPBinEcho.withBody(request)) }
        case ("patch", 0): return only([.PATCH], method) { HTTPBinEcho.reply(HTTPBinEcho.withBody(request)) }
        case ("delete", 0): return only([.DELETE], method) { HTTPBinEcho.reply(HTTPBinEcho.withBody(request)) }
        case ("anything", _): return HTTPBinEcho.reply(HTTPBinEcho.withBody(request, includeMethod: true))
        case ("status", 1): return status(rest[0])
        case ("headers", 0): return HTTPBinEcho.reply(["headers": HTTPBinEcho.headers(request)])
        case ("user-agent", 0): return HTTPBinEcho.reply(["user-agent": request.header("User-Agent") as Any? ?? NSNull()])
        case ("ip", 0): return HTTPBinEcho.reply(["origin": request.origin])
        case ("uuid", 0): return HTTPBinEcho.reply(["uuid": UUID().uuidString.lowercased()])
        case ("response-headers", 0): return responseHeaders(request)
        case ("redirect", 1), ("relative-redirect", 1), ("absolute-redirect", 1), ("redirect-to", 0):
            return redirect(String(first), rest.first, request)
        case ("delay", 1): return delay(rest[0], request)
        case ("bytes", 1): return bytes(rest[0], request)
        case ("stream", 1): return stream(rest[0], request)
        case ("stream-bytes", 1): return streamBytes(rest[0], request)
        case ("drip", 0): return drip(request)
        case ("gzip", 0): return compressed(.gzip, request)
        case ("deflate", 0): return compressed(.deflate, request)
        case ("json", 0): return .text(SampleDocuments.json, contentType: "application/json")
        case ("xml", 0): return .text(SampleDocuments.xml, contentType: "application/xml")
        case ("html", 0): return .text(SampleDocuments.html, contentType: "text/html; charset=utf-8")
        case ("encoding", 1) where rest[0] == "utf8": return .text(SampleDocuments.utf8, contentType: "text/html; charset=utf-8")
        case ("image", 1): return image(rest[0])
        case ("basic-auth", 2): return basicAuth(user: rest[0], password: rest[1], hidden: false, request)
        case ("hidden-basic-auth", 2): return basicAuth(user: rest[0], password: rest[1], hidden: true, request)
        case ("bearer", 0): return bearer(request)
        case ("cookies", _): return cookies(rest, request)
        case ("etag", 1): return etag(String(rest[0]), request)
        case ("range", 1): return range(rest[0], request)
        case ("cache", 0): return cache(request)
        case ("cache", 1): return cacheFor(rest[0], request)
        case ("base64", 1): return base64(rest[0])
        case ("courier", _): return CourierFailureRoutes.reply(rest, request)
        default: return .notFound
        }
    }

    /// `make()` when `method` is one of `allowed`, else 405.
    static func only(_ allowed: [HTTPMethod], _ method: HTTPMethod, _ make: () -> Reply) -> Reply {
        allowed.contains(method) ? make() : .methodNotAllowed(allowed.map(\.rawValue))
    }

    /// A non-negative integer path segment, or nil.
    static func integer(_ text: Substring) -> Int? {
        Int(text).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// `/status/{code}` and `/status/{a,b,c}` (one picked at random; `code:weight` is accepted,
    /// the weight ignored).
    static func status(_ codes: Substring) -> Reply {
        let choices = codes.split(separator: ",").map { $0.split(separator: ":").first.flatMap { Int($0) } }
        guard !choices.isEmpty, choices.allSatisfy({ $0.map { (100...599).contains($0) } == true }),
            let code = choices.randomElement()!
        else { return .badRequest("Invalid status code") }
        let status = HTTPResponseStatus(statusCode: code)
        switch code {
        case 301, 302, 303, 305, 307:
            return .complete(status, ["Location": "/redirect/1"], ByteBuffer())
        case 401:
            return .complete(status, ["WWW-Authenticate": "Basic realm=\"Fake Realm\""], ByteBuffer())
        case 407:
            return .complete(status, ["Proxy-Authenticate": "Basic realm=\"Fake Realm\""], ByteBuffer())
        case 418:
            return .text("I'm a teapot\n", status: status, headers: ["X-More-Info": "http://tools.ietf.org/html/rfc2324"])
        default:
            return .complete(status, ["Content-Type": "text/html; charset=utf-8"], ByteBuffer())
        }
    }

    /// `/response-headers?k=v`: sets each pair as a header and echoes them as JSON.
    static func responseHeaders(_ request: IncomingRequest) -> Reply {
        var headers = HTTPHeaders()
        for (name, value) in request.queryItems { headers.add(name: name, value: value) }
        headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        var document = HTTPBinEcho.grouped(headers.map { ($0.name, $0.value) })
        // The body names its own length: settle it by recomputing until it stops changing.
        var body = Data()
        for _ in 0..<4 {
            document["Content-Length"] = String(body.count)
            let next = HTTPBinEcho.encode(document)
            if next.count == body.count { body = next; break }
            body = next
        }
        return .complete(.ok, headers, ByteBuffer(data: body))
    }

    /// `/image/{png,jpeg,gif,svg}`.
    static func image(_ kind: Substring) -> Reply {
        switch kind {
        case "png": .bytes(SampleImages.png, contentType: "image/png")
        case "jpeg": .bytes(SampleImages.jpeg, contentType: "image/jpeg")
        case "gif": .bytes(SampleImages.gif, contentType: "image/gif")
        case "svg": .text(SampleImages.svg, contentType: "image/svg+xml")
        default: .notFound
        }
    }

    /// `/gzip` and `/deflate`: a JSON document compressed with that encoding, whatever the client accepts.
    static func compressed(_ format: Compression.Format, _ request: IncomingRequest) -> Reply {
        let key = format == .gzip ? "gzipped" : "deflated"
        let document: [String: Any] = [
            key: true, "headers": HTTPBinEcho.headers(request), "method": request.head.method.rawValue, "origin": request.origin,
        ]
        guard let body = Compression.compress(Array(HTTPBinEcho.encode(document)), as: format) else {
            return .text("compression failed\n", status: .internalServerError)
        }
        return .bytes(body, contentType: "application/json", headers: ["Content-Encoding": format == .gzip ? "gzip" : "deflate"])
    }

    /// `/base64/{value}`: the decoded value (URL-safe alphabet accepted).
    static func base64(_ value: Substring) -> Reply {
        var text = value.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: text) else {
            return .text("Incorrect Base64 data try: SFRUUEJJTiBpcyBhd2Vzb21l", contentType: "text/html; charset=utf-8")
        }
        return .bytes(data, contentType: "text/html; charset=utf-8")
    }
}
