import NIOCore
import NIOHTTP1

/// Courier's own routes under `/courier/`, for failures and transfers httpbin cannot produce (see
/// ``TestServer``). `/courier/upload` does not come here: the handler streams it into an
/// ``UploadSink``.
enum CourierFailureRoutes {
    static func reply(_ rest: [Substring], _ request: IncomingRequest) -> Reply {
        switch (rest.first, rest.count) {
        case ("truncated", 2):
            guard let count = HTTPBinRoutes.integer(rest[1]), count <= 10 << 20 else { return .notFound }
            // `?type=` names the Content-Type, for clients that check it before reading the body.
            let type = request.queryValue("type") ?? "application/octet-stream"
            let headers: HTTPHeaders = ["Content-Type": type, "Content-Length": String(2 * count)]
            return .truncated(.ok, headers, ByteBuffer(repeating: UInt8(ascii: "x"), count: count))
        case ("reset", 1):
            return .reset
        case ("websocket", _):
            return WebSocketRoute.refusal(of: request)
        case ("stale", 1):
            // A server that closed a kept-alive connection just as the next request came: the
            // first request of a connection is answered, a later one gets the connection closed.
            if request.earlierRequestsOnConnection == 0 {
                return .complete(.ok, ["Content-Type": "text/plain; charset=utf-8"], ByteBuffer(string: "fresh"))
            }
            return .reset
        case ("close-after-head", 1):
            return .headThenClose(.ok, ["Content-Type": "application/octet-stream", "Transfer-Encoding": "chunked"])
        case ("slow-body", 2):
            guard let count = HTTPBinRoutes.integer(rest[1]),
                let interval = HTTPBinRoutes.seconds(request.queryValue("interval") ?? "0.1")
            else { return .notFound }
            let chunks = (0..<min(count, 10_000)).map { ByteBuffer(string: "chunk \($0)\n") }
            return .paced(.ok, ["Content-Type": "text/plain; charset=utf-8"], chunks: chunks, interval: interval)
        case ("big", 2):
            guard let count = HTTPBinRoutes.integer(rest[1]) else { return .notFound }
            let headers: HTTPHeaders = ["Content-Type": "application/octet-stream", "Content-Length": String(count)]
            return .streamed(.ok, headers, StreamedBody(.pattern, length: count))
        case ("file", 2):
            return CourierFileRoute.reply(rest[1], request)
        case ("sse", 1):
            return CourierEventStreamRoute.reply(request)
        case ("trailers", 1):
            let body = ByteBuffer(string: "the fields that describe this body follow it\n")
            let crc = CRC32.checksum(of: Array(body.readableBytesView))
            let trailers: HTTPHeaders = ["Courier-Checksum": "crc32=\(crc)", "Server-Timing": "total;dur=1"]
            return .trailed(.ok, ["Content-Type": "text/plain; charset=utf-8", "Trailer": "Courier-Checksum, Server-Timing"], body, trailers: trailers)
        case ("echo", 1):
            let contentType = request.header("Content-Type") ?? "application/octet-stream"
            return .complete(.ok, ["Content-Type": contentType], request.body)
        default:
            return .notFound
        }
    }
}
