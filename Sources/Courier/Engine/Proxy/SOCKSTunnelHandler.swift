import NIOCore

/// Opens a SOCKS5 tunnel on a channel connected to the proxy: sends the greeting when it is added,
/// feeds the proxy's answers to ``SOCKS5StateMachine`` and writes what it says to, and on its
/// word either leaves the pipeline and succeeds ``promise``, or closes the channel and fails it
/// with a ``CourierError`` naming the proxy and the target. A timer bounds the whole handshake.
final class SOCKSTunnelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var machine: SOCKS5StateMachine
    private let proxy: NIOEngine.Proxy
    private let target: String
    private let timeout: TimeAmount
    /// Completed once: success with the handler gone, or the failure with the channel closed.
    let promise: EventLoopPromise<Void>
    private var timer: Scheduled<Void>?
    private var isDone = false

    /// - Parameters:
    ///   - machine: The handshake, not yet started.
    ///   - proxy: The proxy (for the messages).
    ///   - target: `host:port` of the server, for the messages.
    ///   - timeout: How long the whole handshake may take.
    ///   - promise: Completed once, as ``promise`` says.
    init(machine: SOCKS5StateMachine, proxy: NIOEngine.Proxy, target: String, timeout: TimeAmount, promise: EventLoopPromise<Void>) {
        self.machine = machine
        self.proxy = proxy
        self.target = target
        self.timeout = timeout
        self.promise = promise
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard context.channel.isActive else {
            self.act(.fail(.closed(received: 0)), context: context)
            return
        }
        let timeout = self.timeout
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            self.act(self.machine.timedOut(after: timeout), context: context)
        }
        self.act(self.machine.start(), context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        guard !self.isDone else { return }
        self.isDone = true
        self.timer?.cancel()
        self.promise.fail(ProxyTunnelFailure.abandoned.courierError(proxy: self.proxy, target: self.target))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.isDone else { return }
        self.act(self.machine.received(self.unwrapInboundIn(data)), context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.act(self.machine.closed(), context: context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.act(self.machine.errorCaught("\(error)"), context: context, underlyingError: error)
    }

    private func act(_ action: SOCKS5StateMachine.Action, context: ChannelHandlerContext, underlyingError: (any Error)? = nil) {
        guard !self.isDone else { return }
        switch action {
        case .wait:
            return
        case .write(let bytes):
            context.writeAndFlush(self.wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
        case .established:
            self.isDone = true
            self.timer?.cancel()
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            self.promise.succeed(())
        case .fail(let failure):
            self.isDone = true
            self.timer?.cancel()
            context.close(promise: nil)
            self.promise.fail(failure.courierError(proxy: self.proxy, target: self.target, underlyingError: underlyingError))
        }
    }
}

@available(*, unavailable)
extension SOCKSTunnelHandler: Sendable {}
