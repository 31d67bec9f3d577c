import NIOCore
import NIOHTTP1

/// Decompresses `gzip` and `deflate` response bodies on an HTTP/1.1 connection (a
/// ``ResponseInflater`` per response), and counts the body's bytes as they came into a
/// ``ResponseBodyCounter``: one handler, so each part of a response is unwrapped once for both.
/// (``HopHandler`` asks for compressed bodies: it adds `Accept-Encoding: deflate, gzip` to a
/// request head without one, while the head's fields are its own.)
///
/// A body that cannot be decompressed is reported once, as an error down the pipeline (the hop
/// fails with it); the rest of that body is dropped, and so is its end: passed on, the end would
/// let the response count as whole when the hop holds its parts for a paused exchange (the hop
/// then fails only if the parts it holds do not end the response). Heads keep their
/// `Content-Encoding` and `Content-Length`: they describe the body as it came.
final class HTTP1ResponseDecompressor: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    /// How many times its compressed size a body may grow to.
    private let ratio: Int
    /// Where the body's bytes as they came are counted.
    private let counter: ResponseBodyCounter
    private var inflater: ResponseInflater?
    /// The current body failed: the rest of it is dropped.
    private var failed = false

    init(ratio: Int, counter: ResponseBodyCounter) {
        self.ratio = ratio
        self.counter = counter
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = self.unwrapInboundIn(data)
        switch part {
        case .head(let head):
            self.inflater = self.counter.decodes ? ResponseInflater.make(head: head, ratio: self.ratio) : nil
            self.failed = false
            context.fireChannelRead(data)
        case .body(let buffer):
            self.counter.bytes += Int64(buffer.readableBytes)
            guard !self.failed else { return }
            guard let inflater = self.inflater else {
                context.fireChannelRead(data)
                return
            }
            do throws(ResponseDecompressionError) {
                try inflater.inflate(buffer, allocator: context.channel.allocator) { piece in
                    context.fireChannelRead(self.wrapInboundOut(.body(piece)))
                }
            } catch {
                self.fail(error, context: context)
            }
        case .end:
            if let inflater = self.inflater.take(), !self.failed {
                do throws(ResponseDecompressionError) {
                    try inflater.finish(allocator: context.channel.allocator)
                } catch {
                    self.fail(error, context: context)
                }
            }
            // A body that failed has no end: the response was not received whole.
            guard !self.failed else { return }
            context.fireChannelRead(data)
        }
    }

    private func fail(_ error: ResponseDecompressionError, context: ChannelHandlerContext) {
        self.failed = true
        self.inflater = nil
        context.fireErrorCaught(error)
    }
}
