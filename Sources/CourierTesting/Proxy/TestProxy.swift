import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// An HTTP proxy on 127.0.0.1 for tests: every tunnel it opens (`CONNECT`) and every request it
/// forwards (absolute form, `GET http://host/path HTTP/1.1`) leads to one upstream address on
/// this machine (a ``TestServer``, usually), whatever host the client asked for, so a test can
/// send requests for made-up hosts and prove that they went through the proxy.
///
/// A connection whose first request is `CONNECT` becomes a tunnel; one whose first request has an
/// absolute-form `http://` target is a forwarding connection: each request on it is checked for
/// credentials, recorded in ``forwardedTargets``, sent upstream in origin form without its
/// `Proxy-Authorization` field, and the upstream answers come back in order (one upstream
/// connection per client connection, kept alive as the client keeps it).
///
/// ```swift
/// let server = try await TestServer.start()
/// let proxy = try await TestProxy.start(upstreamPort: server.port, credentials: ("user", "pass"))
/// // configure a client with proxy 127.0.0.1:proxy.port, then request http://anything.invalid/get
/// print(proxy.connectTargets)   // ["anything.invalid:80"]
/// try await proxy.shutdown()
/// ```
public final class TestProxy: Sendable {
    /// What the proxy does with a `CONNECT` (forwarded requests are always forwarded).
    public enum Behaviour: Sendable, Hashable {
        /// Checks the credentials and opens the tunnel to the upstream port.
        case tunnel
        /// Answers every `CONNECT` with this status (403, 502…), an empty body, and closes.
        case refuse(status: Int)
        /// Closes the connection as soon as a `CONNECT` head has arrived.
        case closeOnConnect
        /// Reads the `CONNECT` and never answers.
        case silentOnConnect
    }

    /// How the proxy checks `credentials`.
    public enum Authentication: Sendable, Hashable {
        /// Basic (RFC 7617); a 407 has an empty body and closes the connection.
        case basic
        /// Digest (RFC 7616: MD5, `qop="auth"`, one nonce for the proxy's life) in `realm`. A
        /// 407 to a `CONNECT` has a body and leaves the connection open when
        /// `keepsConnectionOpen` (as squid's does), else closes it; a 407 to a forwarded request
        /// closes it.
        case digest(realm: String, keepsConnectionOpen: Bool)
    }

    /// The port the proxy listens on.
    public let port: Int
    private let channel: any Channel
    private let state: NIOLockedValueBox<ProxyState>

    struct ProxyState {
        var targets: [String] = []
        var authorizations: [String?] = []
        var connectUserAgents: [String?] = []
        var forwarded: [String] = []
        var children: [any Channel] = []
    }

    private init(port: Int, channel: any Channel, state: NIOLockedValueBox<ProxyState>) {
        self.port = port
        self.channel = channel
        self.state = state
    }

    /// The `host:port` of every `CONNECT` request received, in order.
    public var connectTargets: [String] { self.state.withLockedValue { $0.targets } }
    /// The `Proxy-Authorization` header of every `CONNECT` and forwarded request, in order (nil
    /// where absent).
    public var proxyAuthorizations: [String?] { self.state.withLockedValue { $0.authorizations } }
    /// The `User-Agent` header of every `CONNECT` request received, in order (nil where absent).
    public var connectUserAgents: [String?] { self.state.withLockedValue { $0.connectUserAgents } }
    /// The absolute-form target of every request received for forwarding, in order
    /// (`http://host:port/path?query` as the client sent it).
    public var forwardedTargets: [String] { self.state.withLockedValue { $0.forwarded } }

    /// Starts a proxy.
    /// - Parameters:
    ///   - upstreamPort: The port on 127.0.0.1 every tunnel leads to.
    ///   - credentials: When set, a `CONNECT` or forwarded request without matching
    ///   credentials gets 407 (see `authentication`).
    ///   - authentication: How `credentials` are checked: Basic by default.
    ///   - behaviour: What to do with a `CONNECT`; ``Behaviour/tunnel`` by default.
    ///   - tls: When set, clients reach the proxy over TLS presenting this identity (an
    ///     `https://` proxy, ALPN `http/1.1`); tunnels and forwarded requests run inside it.
    ///   - requiresClientCertificate: Whether a TLS proxy demands a client certificate issued by
    ///     ``TestCertificates/rootCA``, as ``TestServer/Configuration/requiresClientCertificate``
    ///     does (TLS 1.3: the refusal comes after the client's side of the handshake). Off by default.
    /// - Returns: The running proxy.
    public static func start(
        upstreamPort: Int,
        credentials: (username: String, password: String)? = nil,
        authentication: Authentication = .basic,
        behaviour: Behaviour = .tunnel,
        tls: TestServer.Identity? = nil,
        requiresClientCertificate: Bool = false
    ) async throws -> TestProxy {
        let state = NIOLockedValueBox(ProxyState())
        let expected = credentials.map { ProxyAuthenticator(username: $0.username, password: $0.password, authentication: authentication) }
        let sslContext = try tls.map {
            try NIOSSLContext(configuration: $0.makeTLSConfiguration(http2: false, requiresClientCertificate: requiresClientCertificate))
        }
        let channel = try await ServerBootstrap(group: TestServer.eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                state.withLockedValue { $0.children.append(child) }
                return child.eventLoop.makeCompletedFuture {
                    if let sslContext { try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext)) }
                    try child.pipeline.syncOperations.addHandler(
                        ConnectRequestHandler(upstreamPort: upstreamPort, authenticator: expected, behaviour: behaviour, state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw CourierTestingError("the proxy socket has no port")
        }
        return TestProxy(port: port, channel: channel, state: state)
    }

    /// Stops listening and closes every tunnel.
    public func shutdown() async throws {
        try? await self.channel.close()
        let children = self.state.withLockedValue { $0.children }
        for child in children { try? await child.close() }
    }
}

/// Reads one `CONNECT` request head, then opens the tunnel.
private final class ConnectRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let upstreamPort: Int
    let authenticator: ProxyAuthenticator?
    let behaviour: TestProxy.Behaviour
    let state: NIOLockedValueBox<TestProxy.ProxyState>
    var buffered: ByteBuffer?

    init(upstreamPort: Int, authenticator: ProxyAuthenticator?, behaviour: TestProxy.Behaviour, state: NIOLockedValueBox<TestProxy.ProxyState>) {
        self.upstreamPort = upstreamPort
        self.authenticator = authenticator
        self.behaviour = behaviour
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = self.unwrapInboundIn(data)
        if self.buffered == nil { self.buffered = chunk } else { self.buffered!.writeBuffer(&chunk) }
        self.readRequest(context: context)
    }

    /// Acts on the request head buffered, once it is whole.
    private func readRequest(context: ChannelHandlerContext) {
        guard let buffered = self.buffered,
            let text = buffered.getString(at: buffered.readerIndex, length: buffered.readableBytes),
            let end = text.range(of: "\r\n\r\n")
        else { return }
        let lines = text[..<end.lowerBound].split(separator: "\r\n", omittingEmptySubsequences: false)
        let requestLine = lines.first?.split(separator: " ") ?? []
        let authorization = lines.dropFirst().first { $0.lowercased().hasPrefix("proxy-authorization:") }
            .map { String($0.dropFirst("proxy-authorization:".count)).trimmingCharacters(in: .whitespaces) }
        let userAgent = lines.dropFirst().first { $0.lowercased().hasPrefix("user-agent:") }
            .map { String($0.dropFirst("user-agent:".count)).trimmingCharacters(in: .whitespaces) }
        let target = requestLine.count > 1 ? String(requestLine[1]) : ""
        if requestLine.first != "CONNECT", target.lowercased().hasPrefix("http://") {
            self.startForwarding(buffered, context: context)
            return
        }
        self.state.withLockedValue {
            $0.targets.append(target)
            $0.authorizations.append(authorization)
            $0.connectUserAgents.append(userAgent)
        }
        guard requestLine.first == "CONNECT" else {
            self.reply("HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n", close: true, context: context)
            return
        }
        switch self.behaviour {
        case .tunnel:
            break
        case .refuse(let status):
            self.reply("HTTP/1.1 \(status) Refused\r\nContent-Length: 0\r\n\r\n", close: true, context: context)
            return
        case .closeOnConnect:
            context.close(promise: nil)
            return
        case .silentOnConnect:
            self.buffered = nil
            return
        }
        let headBytes = text.utf8.distance(from: text.utf8.startIndex, to: end.upperBound.samePosition(in: text.utf8)!)
        var rest = buffered
        rest.moveReaderIndex(forwardBy: headBytes)
        if let authenticator = self.authenticator, !authenticator.accepts(authorization, method: "CONNECT", target: target) {
            let challenge = "Proxy-Authenticate: \(authenticator.challenge)\r\n"
            guard authenticator.keepsConnectionOpen else {
                self.reply("HTTP/1.1 407 Proxy Authentication Required\r\n\(challenge)Content-Length: 0\r\n\r\n", close: true, context: context)
                return
            }
            // squid's way: a page, and the connection open for the next `CONNECT`.
            let page = "<html><body>Cache Access Denied</body></html>"
            self.reply(
                "HTTP/1.1 407 Proxy Authentication Required\r\n\(challenge)Content-Type: text/html\r\nContent-Length: \(page.utf8.count)\r\n\r\n\(page)",
                close: false, context: context)
            self.buffered = rest.readableBytes > 0 ? rest : nil
            self.readRequest(context: context)
            return
        }
        let leftover = rest
        self.buffered = nil
        context.channel.setOption(.autoRead, value: false).whenComplete { _ in }
        let client = context.channel
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .connect(host: "127.0.0.1", port: self.upstreamPort)
            .whenComplete { result in
                let (handler, context) = loopBound.value
                switch result {
                case .failure:
                    handler.reply("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n", close: true, context: context)
                case .success(let upstream):
                    handler.state.withLockedValue { $0.children.append(upstream) }
                    handler.reply("HTTP/1.1 200 Connection Established\r\n\r\n", close: false, context: context)
                    if leftover.readableBytes > 0 { upstream.writeAndFlush(leftover, promise: nil) }
                    let (toUpstream, toClient) = TunnelHandler.pair()
                    do {
                        try upstream.pipeline.syncOperations.addHandler(toClient)
                        try context.pipeline.syncOperations.addHandler(toUpstream)
                        context.pipeline.syncOperations.removeHandler(handler, promise: nil)
                    } catch {
                        client.close(promise: nil)
                        upstream.close(promise: nil)
                    }
                    client.setOption(.autoRead, value: true).whenComplete { _ in }
                }
            }
    }

    /// Turns the connection into a forwarding one: HTTP server handlers and a
    /// ``ForwardingHandler`` after this handler, the bytes so far through them, this handler gone.
    private func startForwarding(_ buffered: ByteBuffer, context: ChannelHandlerContext) {
        self.buffered = nil
        do {
            let pipeline = context.pipeline.syncOperations
            try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: false)
            try pipeline.addHandler(
                ForwardingHandler(upstreamPort: self.upstreamPort, authenticator: self.authenticator, state: self.state))
        } catch {
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(self.wrapInboundOut(buffered))
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func reply(_ text: String, close: Bool, context: ChannelHandlerContext) {
        let future = context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: text)))
        if close {
            let channel = context.channel
            future.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

/// Copies bytes from its channel to its partner's, and closes the partner when its channel closes.
final class TunnelHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private var partner: TunnelHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    static func pair() -> (TunnelHandler, TunnelHandler) {
        let first = TunnelHandler()
        let second = TunnelHandler()
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.partner?.write(self.unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.partner?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.partner?.closeFromPartner()
        context.fireChannelInactive()
    }

    private func write(_ buffer: ByteBuffer) {
        guard let context = self.context else { return }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            loopBound.value.write(NIOAny(buffer), promise: nil)
        }
    }

    private func flush() {
        guard let context = self.context else { return }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute { loopBound.value.flush() }
    }

    private func closeFromPartner() {
        guard let context = self.context else { return }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.execute { loopBound.value.close(promise: nil) }
    }
}

/// Forwards absolute-form requests to the upstream port in origin form and the answers back.
private final class ForwardingHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let upstreamPort: Int
    let authenticator: ProxyAuthenticator?
    let state: NIOLockedValueBox<TestProxy.ProxyState>
    private var upstream: (any Channel)?
    private var isConnecting = false
    private var isRejecting = false
    private var pending: [HTTPClientRequestPart] = []

    init(upstreamPort: Int, authenticator: ProxyAuthenticator?, state: NIOLockedValueBox<TestProxy.ProxyState>) {
        self.upstreamPort = upstreamPort
        self.authenticator = authenticator
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.isRejecting else { return }
        switch self.unwrapInboundIn(data) {
        case .head(var head):
            let authorization = head.headers.first(name: "Proxy-Authorization")
            self.state.withLockedValue {
                $0.forwarded.append(head.uri)
                $0.authorizations.append(authorization)
            }
            if let authenticator = self.authenticator, !authenticator.accepts(authorization, method: head.method.rawValue, target: head.uri) {
                self.isRejecting = true
                let headers = HTTPHeaders([("Proxy-Authenticate", authenticator.challenge), ("Content-Length", "0"), ("Connection", "close")])
                context.write(self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .proxyAuthenticationRequired, headers: headers))), promise: nil)
                let channel = context.channel
                context.writeAndFlush(self.wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
                return
            }
            if let url = URL(string: head.uri) {
                var target = url.path(percentEncoded: true)
                if target.isEmpty { target = "/" }
                if let query = url.query(percentEncoded: true) { target += "?" + query }
                head.uri = target
            }
            head.headers.remove(name: "Proxy-Authorization")
            head.headers.remove(name: "Proxy-Connection")
            self.send(.head(head), context: context)
        case .body(let body):
            self.send(.body(.byteBuffer(body)), context: context)
        case .end(let trailers):
            self.send(.end(trailers), context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.upstream?.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func send(_ part: HTTPClientRequestPart, context: ChannelHandlerContext) {
        if let upstream = self.upstream {
            upstream.write(part, promise: nil)
            if case .end = part { upstream.flush() }
            return
        }
        self.pending.append(part)
        guard !self.isConnecting else { return }
        self.isConnecting = true
        let client = NIOLoopBound(context, eventLoop: context.eventLoop)
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        ClientBootstrap(group: context.eventLoop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(UpstreamHandler(client: client))
                }
            }
            .connect(host: "127.0.0.1", port: self.upstreamPort)
            .whenComplete { result in
                let handler = loopBound.value
                switch result {
                case .failure:
                    let context = client.value
                    handler.isRejecting = true
                    let headers = HTTPHeaders([("Content-Length", "0"), ("Connection", "close")])
                    context.write(handler.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .badGateway, headers: headers))), promise: nil)
                    let channel = context.channel
                    context.writeAndFlush(handler.wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
                case .success(let upstream):
                    handler.state.withLockedValue { $0.children.append(upstream) }
                    handler.upstream = upstream
                    for part in handler.pending { upstream.write(part, promise: nil) }
                    handler.pending = []
                    upstream.flush()
                }
            }
    }
}

/// Passes an upstream server's answers to the client connection, and closes it when upstream closes.
private final class UpstreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    let client: NIOLoopBound<ChannelHandlerContext>

    init(client: NIOLoopBound<ChannelHandlerContext>) {
        self.client = client
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let client = self.client.value
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            client.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
        case .body(let body):
            client.writeAndFlush(NIOAny(HTTPServerResponsePart.body(.byteBuffer(body))), promise: nil)
        case .end(let trailers):
            client.writeAndFlush(NIOAny(HTTPServerResponsePart.end(trailers)), promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.client.value.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
