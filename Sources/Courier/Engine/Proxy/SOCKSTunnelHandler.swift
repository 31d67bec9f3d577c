import NIOCore
import NIOSOCKS

/// Watches swift-nio-extras' `SOCKSClientHandler` open a SOCKS5 tunnel on a channel connected to
/// the proxy: added right after it, it turns the handshake's outcome into ``promise``. On
/// `SOCKSProxyEstablishedEvent` it removes the client handler and itself and succeeds; on a SOCKS
/// error, a close, an I/O error or its timer it closes the channel and fails with a
/// ``CourierError`` naming the proxy and the target. (`SOCKSClientHandler` alone reports neither
/// a close during the handshake nor a timeout.)
final class SOCKSTunnelHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let client: SOCKSClientHandler
    private let proxy: NIOEngine.Proxy
    private let target: String
    private let timeout: TimeAmount
    /// Completed once: success with both handlers gone, or the failure with the channel closed.
    let promise: EventLoopPromise<Void>
    private var timer: Scheduled<Void>?
    private var isDone = false
    /// Bytes passed on by the client handler as it left: sent by the proxy after its reply.
    private var unsolicited = 0

    init(client: SOCKSClientHandler, proxy: NIOEngine.Proxy, target: String, timeout: TimeAmount, promise: EventLoopPromise<Void>) {
        self.client = client
        self.proxy = proxy
        self.target = target
        self.timeout = timeout
        self.promise = promise
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard context.channel.isActive else {
            self.fail(.closed(received: 0), context: context)
            return
        }
        let timeout = self.timeout
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            self.fail(.timedOut(timeout), context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        guard !self.isDone else { return }
        self.isDone = true
        self.timer?.cancel()
        self.promise.fail(ProxyTunnelFailure.abandoned.courierError(proxy: self.proxy, target: self.target))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Only while the client handler leaves (it passes on what followed the proxy's reply).
        self.unsolicited += self.unwrapInboundIn(data).readableBytes
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is SOCKSProxyEstablishedEvent, !self.isDone else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        context.pipeline.syncOperations.removeHandler(self.client, promise: nil)
        guard self.unsolicited == 0 else {
            self.fail(.unsolicitedBytes(self.unsolicited), context: context)
            return
        }
        self.isDone = true
        self.timer?.cancel()
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        self.promise.succeed(())
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.fail(.closed(received: 0), context: context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.fail(Self.failure(for: error), context: context, underlyingError: error)
    }

    private func fail(_ failure: ProxyTunnelFailure, context: ChannelHandlerContext, underlyingError: (any Error)? = nil) {
        guard !self.isDone else { return }
        self.isDone = true
        self.timer?.cancel()
        context.close(promise: nil)
        self.promise.fail(failure.courierError(proxy: self.proxy, target: self.target, underlyingError: underlyingError))
    }

    /// What a SOCKS or channel error means.
    static func failure(for error: any Error) -> ProxyTunnelFailure {
        switch error {
        case let error as SOCKSError.ConnectionFailed:
            return .socksReply(error.reply)
        case let error as SOCKSError.InvalidAuthenticationSelection:
            return .socksAuthentication(error.selection)
        case let error as SOCKSError.InvalidProtocolVersion:
            return .invalidResponse("something that is not SOCKS5 (version byte \(error.actual))")
        case is SOCKSError.InvalidReservedByte, is SOCKSError.InvalidAddressType, is SOCKSError.UnexpectedRead,
            is SOCKSError.NoValidAuthenticationMethod:
            return .invalidResponse("a malformed SOCKS5 message (\(error))")
        default:
            return .connectionError("\(error)")
        }
    }
}

@available(*, unavailable)
extension SOCKSTunnelHandler: Sendable {}
