import NIOCore
import NIOHTTP1

/// Sits before the response decompressor of a connection that decompresses: counts the response
/// body's bytes as they came (``TransactionMetrics/countOfResponseBodyBytesReceived``), which the
/// decompressor's output no longer tells. Read and reset by ``HopHandler`` on the
/// same loop. An HTTP/2 stream, which has no pipeline, counts its DATA itself
/// (``HTTP2Stream/bodyBytesReceived``).
final class ResponseBodyCounter: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    /// Body bytes since the handler last reset it (at each hop).
    var bytes: Int64 = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .body(let buffer) = self.unwrapInboundIn(data) {
            self.bytes += Int64(buffer.readableBytes)
        }
        context.fireChannelRead(data)
    }
}
