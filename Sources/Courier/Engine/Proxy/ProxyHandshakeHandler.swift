import NIOCore
import NIOSSL

/// What a proxy handshake's driver does next (``ProxyHandshake``).
enum ProxyHandshakeAction: Equatable {
    /// Nothing: wait for more bytes.
    case wait
    /// Send these bytes to the proxy, then wait.
    case write([UInt8])
    /// The tunnel is open: remove the handler and report success.
    case established
    /// Close the connection and report the failure.
    case fail(ProxyTunnelFailure)
}

/// The client's side of a tunnel's opening, without I/O: ``HTTPConnectStateMachine`` (an HTTP
/// `CONNECT`) and ``SOCKS5StateMachine``. Each event returns what to do; after `established` or
/// `fail`, every event returns `wait`.
protocol ProxyHandshake {
    /// The handshake begins (the channel is connected to the proxy): what to send first.
    mutating func start() -> ProxyHandshakeAction
    /// Bytes from the proxy.
    mutating func received(_ buffer: ByteBuffer) -> ProxyHandshakeAction
    /// The connection closed.
    mutating func closed() -> ProxyHandshakeAction
    /// The connection failed under the handshake (`description` says how).
    mutating func errorCaught(_ description: String) -> ProxyHandshakeAction
    /// The timeout passed.
    mutating func timedOut(after timeout: TimeAmount) -> ProxyHandshakeAction
}

/// Opens a tunnel on a channel connected to a proxy: starts `Handshake` when it is added, feeds it
/// the proxy's bytes, the close, errors and its timer, and does what it says: writes, or leaves
/// the pipeline and succeeds ``promise``, or closes the channel and fails it with a
/// ``CourierError`` naming the proxy and the target. A timer bounds the whole handshake.
final class ProxyHandshakeHandler<Handshake: ProxyHandshake>: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var handshake: Handshake
    private let proxy: NIOEngine.Proxy
    private let target: String
    private let timeout: TimeAmount
    /// Completed once: success with the handler gone, or the failure with the channel closed.
    let promise: EventLoopPromise<Void>
    /// Told the handshake that opened the tunnel, before ``promise`` succeeds (to keep what it
    /// learned).
    private let didEstablish: (Handshake) -> Void
    private var timer: Scheduled<Void>?
    private var isDone = false

    /// - Parameters:
    ///   - handshake: The handshake, not yet started.
    ///   - proxy: The proxy (for the messages).
    ///   - target: `host:port` of the server, for the messages.
    ///   - timeout: How long the whole handshake may take.
    ///   - promise: Completed once, as ``promise`` says.
    ///   - didEstablish: Told the handshake once the tunnel is open, on the channel's loop.
    init(
        _ handshake: Handshake, proxy: NIOEngine.Proxy, target: String, timeout: TimeAmount, promise: EventLoopPromise<Void>,
        didEstablish: @escaping (Handshake) -> Void = { _ in }
    ) {
        self.handshake = handshake
        self.proxy = proxy
        self.target = target
        self.timeout = timeout
        self.promise = promise
        self.didEstablish = didEstablish
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard context.channel.isActive else {
            self.act(.fail(.closed(received: 0)), context: context)
            return
        }
        let timeout = self.timeout
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            self.act(self.handshake.timedOut(after: timeout), context: context)
        }
        self.act(self.handshake.start(), context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        guard !self.isDone else { return }
        self.isDone = true
        self.timer?.cancel()
        self.promise.fail(ProxyTunnelFailure.abandoned.courierError(proxy: self.proxy, target: self.target))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.isDone else { return }
        self.act(self.handshake.received(self.unwrapInboundIn(data)), context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.act(self.handshake.closed(), context: context)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        var action = self.handshake.errorCaught("\(error)")
        // An `https://` proxy's TLS failed under the handshake: a TLS 1.3 proxy refuses the
        // client's certificate (or its absence) after the client's side of the handshake, as an
        // alert read while the `CONNECT` waits for its answer. Said as the TLS failure it is, in
        // words, as a server's is (it was a closed connection, with BoringSSL's error and its
        // source path). A close without close_notify stays the closed connection it is.
        if case .fail(.connectionError) = action, error is NIOSSLError || error is BoringSSLError,
            (error as? NIOSSLError) != .uncleanShutdown
        {
            action = .fail(.tls(ServerTrustFailure.handshakeReason("\(error)")))
        }
        self.act(action, context: context, underlyingError: error)
    }

    private func act(_ action: ProxyHandshakeAction, context: ChannelHandlerContext, underlyingError: (any Error)? = nil) {
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
            self.didEstablish(self.handshake)
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
extension ProxyHandshakeHandler: Sendable {}

/// The `CONNECT` tunnel's handler.
typealias HTTPConnectHandler = ProxyHandshakeHandler<HTTPConnectStateMachine>
/// The SOCKS5 tunnel's handler.
typealias SOCKSTunnelHandler = ProxyHandshakeHandler<SOCKS5StateMachine>
