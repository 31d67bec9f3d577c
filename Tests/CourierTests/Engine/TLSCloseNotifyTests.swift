import CourierTesting
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOSSL
import Testing

@testable import Courier

/// How long a closing TLS connection waits for the server's close_notify, on an injected clock:
/// a client and a server handler on `EmbeddedChannel`s, their bytes passed by hand, and the
/// embedded loop's time advanced by the test.
///
/// RFC 8446 6.1 does not ask the closing side to wait for the peer's close_notify at all;
/// swift-nio-ssl waits 5 s by default, which held every close to a server that does not answer it
/// (Go's, or one that stopped reading), and with it the end of `invalidate` and of the engine's
/// shutdown. Courier's contexts wait ``TLSConnector/closeNotifyWait``.
@Suite struct TLSCloseNotifyTests {
    /// The server's side: the test certificate for `localhost`.
    private static func serverContext() throws -> NIOSSLContext {
        let chain = try NIOSSLCertificate.fromPEMBytes(Array((TestCertificates.localhostLeaf + "\n" + TestCertificates.intermediateCA).utf8))
        let tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(TestCertificates.localhostKey.utf8), format: .pem))
        )
        return try NIOSSLContext(configuration: tls)
    }

    /// Moves bytes both ways until neither side has any left to send (a read batch each, as a
    /// socket's: TLS flushes what it has to answer at the batch's end).
    private static func interact(_ client: EmbeddedChannel, _ server: EmbeddedChannel) throws {
        var moved = true
        while moved {
            moved = try Self.pass(from: client, to: server)
            moved = try Self.pass(from: server, to: client) || moved
        }
    }

    private static func pass(from sender: EmbeddedChannel, to receiver: EmbeddedChannel) throws -> Bool {
        var moved = false
        while let bytes = try sender.readOutbound(as: ByteBuffer.self) {
            guard receiver.isActive else { continue }
            try receiver.writeInbound(bytes)
            moved = true
        }
        if moved, receiver.isActive {
            receiver.pipeline.fireChannelReadComplete()
            // The verification callback's promise completes in a task of the loop.
            receiver.embeddedEventLoop.run()
            try receiver.throwIfErrorCaught()
        }
        return moved
    }

    /// A client with Courier's context, after a completed handshake with `server`.
    private static func connectedClient(to server: EmbeddedChannel, loop: EmbeddedEventLoop) throws -> EmbeddedChannel {
        let context = try TLSConnector.makeContext(.default, applicationProtocols: []).get()
        let handler = try NIOSSLClientHandler(context: context, serverHostname: "localhost", customVerificationCallback: { _, promise in
            // The chain is not what this test is about (the connector's evaluator is).
            promise.succeed(.certificateVerified)
        })
        let client = EmbeddedChannel(handler: handler, loop: loop)
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 443)
        try server.connect(to: address).wait()
        try client.connect(to: address).wait()
        try interact(client, server)
        // The handshake is done when application data goes through.
        client.writeAndFlush(ByteBuffer(string: "ping"), promise: nil)
        try interact(client, server)
        #expect(try server.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "ping"))
        return client
    }

    /// A server that never answers the client's close_notify holds the close for
    /// ``TLSConnector/closeNotifyWait``, not for swift-nio-ssl's 5 s.
    @Test func aCloseWaitsOnlyBrieflyForAServerThatDoesNotAnswer() throws {
        let loop = EmbeddedEventLoop()
        let server = EmbeddedChannel(handler: NIOSSLServerHandler(context: try Self.serverContext()), loop: loop)
        let client = try Self.connectedClient(to: server, loop: loop)

        let closed = NIOLockedValueBox(false)
        client.close().whenComplete { _ in closed.withLockedValue { $0 = true } }
        // The close_notify goes out; the server never sees it (it stopped reading).
        #expect(try client.readOutbound(as: ByteBuffer.self) != nil, "close_notify was written")
        loop.run()
        #expect(client.isActive, "the close waits for the server's close_notify a while")

        loop.advanceTime(by: TLSConnector.closeNotifyWait - .milliseconds(1))
        #expect(client.isActive && !closed.withLockedValue { $0 }, "not less than closeNotifyWait")
        loop.advanceTime(by: .milliseconds(1))
        #expect(!client.isActive, "closed once closeNotifyWait passed")
        // The handler fails the close's promise with its timeout; the socket is closed either way.
        #expect(closed.withLockedValue { $0 })
        #expect(TLSConnector.closeNotifyWait < .seconds(1))

        // The server's own close waits swift-nio-ssl's default for the client's answer.
        server.close(promise: nil)
        loop.advanceTime(by: .seconds(10))
        #expect(!server.isActive)
    }

    /// A server that answers closes the connection at once, with no wait.
    @Test func aCloseAnsweredEndsAtOnce() throws {
        let loop = EmbeddedEventLoop()
        let server = EmbeddedChannel(handler: NIOSSLServerHandler(context: try Self.serverContext()), loop: loop)
        let client = try Self.connectedClient(to: server, loop: loop)

        let closed = client.close()
        try Self.interact(client, server)
        loop.run()
        #expect(!client.isActive, "the server's close_notify ended the close")
        try closed.wait()
        #expect(!server.isActive, "the server closed after answering")
    }
}
