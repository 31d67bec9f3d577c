import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSOCKS

/// A SOCKS5 proxy on 127.0.0.1 for tests (swift-nio-extras' server-side handshake): every tunnel
/// it opens leads to one upstream address on this machine, whatever target the client named, so
/// a test can request made-up hosts and prove that they went through the proxy. It can also
/// want a user name and password, refuse, ask for authentication it does not offer or hang up,
/// to test a client's errors.
///
/// ```swift
/// let server = try await TestServer.start()
/// let socks = try await TestSOCKSServer.start(upstreamPort: server.port)
/// // connect a client through 127.0.0.1:socks.port to anything.invalid:80
/// print(socks.connectTargets)   // ["anything.invalid:80"]
/// try await socks.shutdown()
/// ```
public final class TestSOCKSServer: Sendable {
    /// What the server does with each connection.
    public enum Behaviour: Sendable, Hashable {
        /// Accepts the client without authentication and opens every tunnel to the upstream port.
        case tunnel
        /// Accepts the client, then answers its `CONNECT` with this RFC 1928 reply code (1 general
        /// failure, 2 not allowed, 3 network unreachable, 4 host unreachable, 5 refused…).
        case refuse(replyCode: UInt8)
        /// Answers the greeting with "no acceptable methods" (0xFF): it wants authentication.
        case requireAuthentication
        /// Wants RFC 1929's username/password: a client that does not offer the method gets "no
        /// acceptable methods"; these credentials open tunnels as ``tunnel`` does, others are
        /// answered with status 1 and the connection closed.
        case requireCredentials(username: String, password: String)
        /// Closes the connection as soon as the greeting arrives.
        case closeAfterGreeting
    }

    /// The port the proxy listens on.
    public let port: Int
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    struct State {
        var targets: [String] = []
        var usernames: [String] = []
        var children: [any Channel] = []
    }

    private init(port: Int, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.port = port
        self.channel = channel
        self.state = state
    }

    /// The target of every `CONNECT` request received, in order: `host:port` as the client sent
    /// it (a name, or an address).
    public var connectTargets: [String] { self.state.withLockedValue { $0.targets } }

    /// The user name of every username/password message received, in order, accepted or not
    /// (``Behaviour/requireCredentials(username:password:)``).
    public var usernames: [String] { self.state.withLockedValue { $0.usernames } }

    /// Starts a proxy.
    /// - Parameters:
    ///   - upstreamPort: The port on 127.0.0.1 every tunnel leads to.
    ///   - behaviour: What to do with each connection; ``Behaviour/tunnel`` by default.
    /// - Returns: The running proxy.
    public static func start(upstreamPort: Int, behaviour: Behaviour = .tunnel) async throws -> TestSOCKSServer {
        let state = NIOLockedValueBox(State())
        let channel = try await ServerBootstrap(group: TestServer.eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                state.withLockedValue { $0.children.append(child) }
                return child.eventLoop.makeCompletedFuture {
                    let handshake = SOCKSServerHandshakeHandler()
                    try child.pipeline.syncOperations.addHandler(handshake)
                    try child.pipeline.syncOperations.addHandler(
                        SOCKSRequestHandler(handshake: handshake, upstreamPort: upstreamPort, behaviour: behaviour, state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw CourierTestingError("the SOCKS proxy socket has no port")
        }
        return TestSOCKSServer(port: port, channel: channel, state: state)
    }

    /// Stops listening and closes every tunnel.
    public func shutdown() async throws {
        try? await self.channel.close()
        let children = self.state.withLockedValue { $0.children }
        for child in children { try? await child.close() }
    }
}

/// Answers the greeting and the request that `SOCKSServerHandshakeHandler` parses, then joins
/// the client to the upstream connection.
private final class SOCKSRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ClientMessage
    typealias OutboundOut = ServerMessage

    let handshake: SOCKSServerHandshakeHandler
    let upstreamPort: Int
    let behaviour: TestSOCKSServer.Behaviour
    let state: NIOLockedValueBox<TestSOCKSServer.State>
    private var isInactive = false
    /// The username/password message as it arrives.
    private var credentials: [UInt8] = []

    init(handshake: SOCKSServerHandshakeHandler, upstreamPort: Int, behaviour: TestSOCKSServer.Behaviour, state: NIOLockedValueBox<TestSOCKSServer.State>) {
        self.handshake = handshake
        self.upstreamPort = upstreamPort
        self.behaviour = behaviour
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Once the connection is down, the handshake handler, leaving the pipeline, passes on the
        // bytes it buffered (a ByteBuffer, not a ClientMessage): nothing to do with them.
        guard !self.isInactive else { return }
        switch self.unwrapInboundIn(data) {
        case .greeting(let greeting):
            switch self.behaviour {
            case .closeAfterGreeting:
                context.close(promise: nil)
            case .requireCredentials where greeting.methods.contains(.usernamePassword):
                let reply = ServerMessage.selectedAuthenticationMethod(SelectedAuthenticationMethod(method: .usernamePassword))
                context.writeAndFlush(self.wrapOutboundOut(reply), promise: nil)
            case .requireAuthentication, .requireCredentials:
                let reply = ServerMessage.selectedAuthenticationMethod(SelectedAuthenticationMethod(method: .noneAcceptable))
                let channel = context.channel
                context.writeAndFlush(self.wrapOutboundOut(reply)).whenComplete { _ in channel.close(promise: nil) }
            case .tunnel, .refuse:
                let reply = ServerMessage.selectedAuthenticationMethod(SelectedAuthenticationMethod(method: .noneRequired))
                context.writeAndFlush(self.wrapOutboundOut(reply), promise: nil)
            }
        case .request(let request):
            let target: String
            switch request.addressType {
            case .domain(let host, let port): target = "\(host):\(port)"
            case .address(let address): target = "\(address.ipAddress ?? "?"):\(address.port ?? 0)"
            }
            self.state.withLockedValue { $0.targets.append(target) }
            if case .refuse(let code) = self.behaviour {
                self.reply(SOCKSServerReply(value: code), context: context)
                let channel = context.channel
                context.flush()
                channel.close(promise: nil)
                return
            }
            self.openTunnel(context: context)
        case .authenticationData(let data):
            guard case .requireCredentials(let username, let password) = self.behaviour else {
                context.close(promise: nil)
                return
            }
            self.credentials += data.readableBytesView
            guard let (user, secret) = Self.usernamePassword(self.credentials) else { return }
            self.state.withLockedValue { $0.usernames.append(user) }
            let accepted = user == username && secret == password
            let verdict = ServerMessage.authenticationData(ByteBuffer(bytes: [0x01, accepted ? 0x00 : 0x01]), complete: accepted)
            let written = context.writeAndFlush(self.wrapOutboundOut(verdict))
            if !accepted {
                let channel = context.channel
                written.whenComplete { _ in channel.close(promise: nil) }
            }
        }
    }

    /// RFC 1929's message, once all of it is in: version 1, the user name and the password, each
    /// after its length.
    private static func usernamePassword(_ bytes: [UInt8]) -> (String, String)? {
        guard bytes.count >= 2 else { return nil }
        let userEnd = 2 + Int(bytes[1])
        guard bytes.count > userEnd else { return nil }
        let passwordEnd = userEnd + 1 + Int(bytes[userEnd])
        guard bytes.count >= passwordEnd else { return nil }
        return (String(decoding: bytes[2..<userEnd], as: UTF8.self), String(decoding: bytes[(userEnd + 1)..<passwordEnd], as: UTF8.self))
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.isInactive = true
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func reply(_ reply: SOCKSServerReply, context: ChannelHandlerContext, bound: SocketAddress? = nil) {
        let address = bound ?? (try? SocketAddress(ipAddress: "127.0.0.1", port: 0))
        let response = SOCKSResponse(reply: reply, boundAddress: address.map { .address($0) } ?? .domain("localhost", port: 0))
        context.write(self.wrapOutboundOut(.response(response)), promise: nil)
    }

    private func openTunnel(context: ChannelHandlerContext) {
        let client = context.channel
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .connect(host: "127.0.0.1", port: self.upstreamPort)
            .whenComplete { result in
                let (handler, context) = loopBound.value
                switch result {
                case .failure:
                    handler.reply(.refused, context: context)
                    context.flush()
                    client.close(promise: nil)
                case .success(let upstream):
                    handler.state.withLockedValue { $0.children.append(upstream) }
                    handler.reply(.succeeded, context: context, bound: upstream.localAddress)
                    context.flush()
                    let (toUpstream, toClient) = TunnelHandler.pair()
                    do {
                        try upstream.pipeline.syncOperations.addHandler(toClient)
                        try context.pipeline.syncOperations.addHandler(toUpstream)
                        context.pipeline.syncOperations.removeHandler(handler, promise: nil)
                        context.pipeline.syncOperations.removeHandler(handler.handshake, promise: nil)
                    } catch {
                        client.close(promise: nil)
                        upstream.close(promise: nil)
                    }
                }
            }
    }
}
