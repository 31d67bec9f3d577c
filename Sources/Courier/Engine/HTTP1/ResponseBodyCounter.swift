/// The response body's bytes as they came (``TransactionMetrics/countOfResponseBodyBytesReceived``),
/// on a connection that decompresses, whose decompressed output no longer tells them:
/// ``HTTP1ResponseDecompressor`` counts into it, and ``HopHandler`` reads and resets it, on the
/// same loop. An HTTP/2 stream, which has no pipeline, counts its DATA itself
/// (``HTTP2Stream/bodyBytesReceived``).
final class ResponseBodyCounter {
    /// Body bytes since the hop handler last reset it (at each hop).
    var bytes: Int64 = 0
    /// Whether the running request's response is decoded (``HopHandler/CodingFields``): set
    /// by the hop before its head goes out, read by the decompressor at the response's head.
    var decodes = true
}
