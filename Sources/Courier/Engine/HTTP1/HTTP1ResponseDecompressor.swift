import NIOCore
import NIOHTTP1

/// Decompresses `gzip` and `deflate` response bodies on an HTTP/1.1 connection (a
/// ``ResponseInflater`` per response), and asks for them: a request head without an
/// `Accept-Encoding` gets `Accept-Encoding: deflate, gzip`.
///
/// A body that cannot be decompressed is reported once, as an error down the pipeline (the hop
/// fails with it); the rest of that body is dropped and its end passed on. Heads keep their
/// `Content-Encoding` and `Content-Length`: they describe the body as it came.
final class HTTP1ResponseDecompressor: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// How many times its compressed size a body may grow to.
    private let ratio: Int
    private var inflater: ResponseInflater?
    /// The current body failed: the rest of it is dropped.
    private var failed = false

    init(ratio: Int) {
        self.ratio = ratio
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = self.unwrapOutboundIn(data), !head.headers.contains(name: "Accept-Encoding") else {
            context.write(data, promise: promise)
            return
        }
        head.headers.add(name: "Accept-Encoding", value: "deflate, gzip")
        context.write(self.wrapOutboundOut(.head(head)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = self.unwrapInboundIn(data)
        switch part {
        case .head(let head):
            self.inflater = ResponseInflater.make(head: head, ratio: self.ratio)
            self.failed = false
            context.fireChannelRead(data)
        case .body(let buffer):
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
            context.fireChannelRead(data)
        }
    }

    private func fail(_ error: ResponseDecompressionError, context: ChannelHandlerContext) {
        self.failed = true
        self.inflater = nil
        context.fireErrorCaught(error)
    }
}
