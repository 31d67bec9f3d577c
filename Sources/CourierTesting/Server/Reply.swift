import NIOCore
import NIOHTTP1

/// What the connection handler writes for one request. Built-in routes return these without
/// touching the channel, so they stay plain functions.
indirect enum Reply: Sendable {
    /// A head and a whole body; `Content-Length` is set.
    case complete(HTTPResponseStatus, HTTPHeaders, ByteBuffer)
    /// A head, then each chunk `interval` apart, then the ending. Chunked, unless `headers` sets
    /// `Content-Length`.
    case paced(HTTPResponseStatus, HTTPHeaders, chunks: [ByteBuffer], interval: TimeAmount, ending: ReplyEnding = .complete)
    /// A head, then a body made while it is written, as fast as the peer reads it (or as paced).
    /// `headers` should set `Content-Length`; a HEAD request gets the head alone.
    case streamed(HTTPResponseStatus, HTTPHeaders, StreamedBody)
    /// The reply, after a pause.
    case delayed(TimeAmount, Reply)
    /// Close the connection (the stream on HTTP/2) without answering.
    case reset
    /// A head, then close.
    case headThenClose(HTTPResponseStatus, HTTPHeaders)
    /// A head with `Content-Length` and the body's first `sentFirst` bytes at once, the rest once
    /// `release` returns.
    case held(HTTPResponseStatus, HTTPHeaders, ByteBuffer, sentFirst: Int, release: @Sendable () async -> Void)
    /// A head and a body, then close; the head may promise more than the body holds.
    case truncated(HTTPResponseStatus, HTTPHeaders, ByteBuffer)
    /// A head, a body of unknown length (chunked on HTTP/1.1), then trailer fields (the last
    /// chunk's trailers, or trailing HEADERS on HTTP/2).
    case trailed(HTTPResponseStatus, HTTPHeaders, ByteBuffer, trailers: HTTPHeaders)
}

extension Reply {
    /// A complete reply with `text` as the body.
    static func text(_ text: String, status: HTTPResponseStatus = .ok, contentType: String = "text/plain; charset=utf-8", headers: HTTPHeaders = [:]) -> Reply {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: contentType)
        return .complete(status, headers, ByteBuffer(string: text))
    }

    /// A complete reply with `bytes` as the body.
    static func bytes(_ bytes: some Sequence<UInt8>, status: HTTPResponseStatus = .ok, contentType: String, headers: HTTPHeaders = [:]) -> Reply {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: contentType)
        return .complete(status, headers, ByteBuffer(bytes: bytes))
    }

    /// A `404 Not Found` with a short HTML body, as httpbin sends.
    static var notFound: Reply {
        .text("<h1>Not Found</h1>\n", status: .notFound, contentType: "text/html; charset=utf-8")
    }

    /// A `405 Method Not Allowed` naming the allowed methods.
    static func methodNotAllowed(_ allowed: [String]) -> Reply {
        .text(
            "<h1>Method Not Allowed</h1>\n",
            status: .methodNotAllowed,
            contentType: "text/html; charset=utf-8",
            headers: ["Allow": allowed.joined(separator: ", ")]
        )
    }

    /// A `400 Bad Request` with a message.
    static func badRequest(_ message: String) -> Reply {
        .text(message + "\n", status: .badRequest)
    }

    /// A redirect with an empty body.
    static func redirect(to location: String, status: HTTPResponseStatus = .found) -> Reply {
        .complete(status, ["Location": location, "Content-Type": "text/html; charset=utf-8"], ByteBuffer())
    }
}
