// Ported from AsyncHTTPClient's Tests/AsyncHTTPClientTests/HTTPClient+SOCKSTests.swift
// (https://github.com/swift-server/async-http-client), Copyright (c) 2018-2022 Apple Inc. and
// the AsyncHTTPClient project authors, licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Twins of AsyncHTTPClient's SOCKS failure tests (a SOCKS proxy that answers, and tunnels, is
/// ProxyTunnelSocketTests'): a proxy host that is no address, a proxy port where an HTTP server
/// listens, one where nothing does, and a SOCKS server whose reply to the greeting is not SOCKS5.
/// Each fails with a typed error naming the proxy, promptly: the timeouts are set far beyond
/// the test, so that only the failure itself can end it.
@Suite("Conformance: AsyncHTTPClient SOCKS failures")
struct AHCSOCKSTests {
    /// A loopback server that answers the first bytes of each connection with `reply`, then
    /// reads and drops the rest.
    enum ReplyingServer {
        static func start(reply: [UInt8]) async throws -> LoopbackServer {
            try await LoopbackServer.start { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Replier(reply: reply)) }
            }
        }

        private final class Replier: ChannelInboundHandler {
            typealias InboundIn = ByteBuffer
            typealias OutboundOut = ByteBuffer
            let reply: [UInt8]
            var replied = false

            init(reply: [UInt8]) { self.reply = reply }

            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                guard !self.replied else { return }
                self.replied = true
                context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(bytes: self.reply)), promise: nil)
            }
        }
    }

    /// A GET of `http://localhost/socks/test` through a SOCKS proxy at `host`:`port`; its error.
    static func failure(proxyHost host: String, port: Int) async throws -> CourierError? {
        var configuration = SessionConfiguration.default
        configuration.proxy = .socks(host: host, port: port)
        configuration.timeoutIntervalForConnect = 600
        configuration.timeoutIntervalForRequest = 600
        return try await withManager(baseURL: nil, configuration: configuration) { manager async throws in
            await #expect(throws: CourierError.self) {
                _ = try await manager.responseOfAnyStatus(for: Request(url: URL(string: "http://localhost/socks/test")!))
            }
        }
    }

    // AHC: testProxySOCKSBogusAddress (the proxy's host is `127.0..`: no address, no name)
    @Test func aProxyHostThatIsNoAddressFails() async throws {
        let error = try await Self.failure(proxyHost: "127.0..", port: 1080)
        #expect(error?.code == .connectionFailed || error?.code == .invalidProxyConfiguration, "\(String(describing: error))")
        #expect(error?.message.contains("127.0..") == true, "\(String(describing: error))")
    }

    // AHC: testProxySOCKSFailureNoServer (the proxy port is an HTTP server's: its answer to the
    // SOCKS greeting is no SOCKS reply)
    @Test func anHTTPServerAsTheSOCKSProxyFails() async throws {
        try await withTestServer { server in
            let error = try await Self.failure(proxyHost: "127.0.0.1", port: server.port)
            #expect(error?.code == .invalidResponse || error?.code == .connectionClosed, "\(String(describing: error))")
            #expect(error?.message.contains("127.0.0.1:\(server.port)") == true, "\(String(describing: error))")
        }
    }

    // AHC: testProxySOCKSFailureInvalidServer (nothing listens on the proxy's port)
    @Test func aSOCKSProxyPortWhereNothingListensFails() async throws {
        let port = closedPort()
        let error = try await Self.failure(proxyHost: "127.0.0.1", port: port)
        #expect(error?.code == .connectionFailed, "\(String(describing: error))")
        #expect(error?.message.contains("\(port)") == true, "\(String(describing: error))")
    }

    // AHC: testProxySOCKSMisbehavingServer (the reply to the greeting says version 4 and a
    // method: AHC fails with `SOCKSError.InvalidProtocolVersion`)
    @Test func aSOCKSReplyOfAnotherVersionFails() async throws {
        let server = try await ReplyingServer.start(reply: [0x04, 0x00])
        try await withShutdown(of: server) { server in
            let error = try await Self.failure(proxyHost: "127.0.0.1", port: server.port)
            #expect(error?.code == .invalidResponse, "\(String(describing: error))")
            #expect(error?.message.contains("127.0.0.1:\(server.port)") == true, "\(String(describing: error))")
        }
    }
}
