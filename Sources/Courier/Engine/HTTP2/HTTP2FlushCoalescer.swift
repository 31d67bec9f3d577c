import NIOCore

/// Sits between TLS and swift-nio-http2's handler on an ``HTTP2Connection`` and turns the flushes
/// asked for while the loop runs one batch of tasks into one flush, made by a task of its own
/// queued after them.
///
/// Each stream's request writes its `HEADERS` (and its `DATA`) and flushes. Flushed one by one,
/// every request became a TLS record and a `write` of its own: with 64 requests in flight, the
/// connection's loop (which carries every stream) spent about a sixth of its time in those writes.
/// Requests started by the same batch of tasks now leave in as few records and writes as their
/// bytes need. A lone request's flush waits for one task hop, a few microseconds. A close flushes
/// first, so that nothing written before it (a `GOAWAY`) is lost.
final class HTTP2FlushCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var flushScheduled = false

    func flush(context: ChannelHandlerContext) {
        guard !self.flushScheduled else { return }
        self.flushScheduled = true
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (coalescer, context) = loopBound.value
            coalescer.flushNow(context: context)
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        self.flushNow(context: context)
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.flushNow(context: context)
    }

    private func flushNow(context: ChannelHandlerContext) {
        guard self.flushScheduled else { return }
        self.flushScheduled = false
        context.flush()
    }
}
