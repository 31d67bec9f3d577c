import NIOCore

/// Opens a `CONNECT` tunnel on a channel connected to an HTTP proxy: sends the request when it
/// is added, feeds the answer to ``HTTPConnectStateMachine``, and on the machine's word either
/// leaves the pipeline and succeeds ``promise``, or closes the channel and fails it with a
/// ``CourierError`` naming the proxy and the target. A timer bounds the whole exchange.
final class HTTPConnectHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var machine = HTTPConnectStateMachine()
    private let proxy: NIOEngine.Proxy
    private let host: String
    private let port: Int
    private let timeout: TimeAmount
    /// Completed once: success with the handler gone, or the failure with the channel closed.
    let promise: EventLoopPromise<Void>
    private var timer: Scheduled<Void>?
    private var isDone = false

    init(proxy: NIOEngine.Proxy, host: String, port: Int, timeout: TimeAmount, promise: EventLoopPromise<Void>) {
        self.proxy = proxy
        self.host = host
        self.port = port
        self.timeout = timeout
        self.promise = promise
    }

    /// `host:port` of the target, for messages.
    private var target: String { NIOEngine.Proxy.authority(host: self.host, port: self.port) }

    func handlerAdded(context: ChannelHandlerContext) {
        guard context.channel.isActive else {
            self.act(.fail(.closed(received: 0)), context: context)
            return
        }
        let timeout = self.timeout
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            self.act(self.machine.timedOut(after: timeout), context: context)
        }
        let request = HTTPConnectStateMachine.request(host: self.host, port: self.port, authorization: self.proxy.basicAuthorization)
        context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: request)), promise: nil)
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

    private func act(_ action: HTTPConnectStateMachine.Action, context: ChannelHandlerContext, underlyingError: (any Error)? = nil) {
        guard !self.isDone else { return }
        switch action {
        case .wait:
            return
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
extension HTTPConnectHandler: Sendable {}
