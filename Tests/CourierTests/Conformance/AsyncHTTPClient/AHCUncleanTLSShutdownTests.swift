// Ported from AsyncHTTPClient's
// Tests/AsyncHTTPClientTests/HTTPClientUncleanSSLConnectionShutdownTests.swift
// (https://github.com/swift-server/async-http-client), Copyright (c) 2018-2022 Apple Inc. and
// the AsyncHTTPClient project authors, licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing

/// Twins of AsyncHTTPClient's tests of a TLS server that closes the TCP connection after its
/// answer without TLS's close_notify (an "unclean shutdown"). An answer whose framing says where
/// it ends (`Content-Length`, chunked) is whole or not by that framing, whatever the close; one
/// cut short fails. An answer framed by the close alone is where Courier and AHC differ: see
/// ``anAnswerFramedByTheCloseIsWhole()``.
@Suite("Conformance: AsyncHTTPClient unclean TLS shutdown")
struct AHCUncleanTLSShutdownTests {
    /// AHC's `HTTPBinForSSLUncleanShutdown`: answers each request by its path, then closes the
    /// TCP connection from below TLS, so no close_notify goes.
    enum UncleanServer {
        static func start() async throws -> LoopbackServer {
            var tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMBytes(Array((TestCertificates.localhostLeaf + "\n" + TestCertificates.intermediateCA).utf8))
                    .map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(TestCertificates.localhostKey.utf8), format: .pem)))
            tls.applicationProtocols = ["http/1.1"]
            let context = try NIOSSLContext(configuration: tls)
            return try await LoopbackServer.start { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ForceCloser())
                    try sync.addHandler(NIOSSLServerHandler(context: context))
                    try sync.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
                    try sync.addHandler(Answerer())
                }
            }
        }

        /// Below TLS: closes the socket when told, so that TLS has no say (no close_notify).
        private final class ForceCloser: ChannelOutboundHandler {
            typealias OutboundIn = NIOAny
            struct CloseEvent {}

            func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
                if event is CloseEvent {
                    context.close(promise: promise)
                } else {
                    context.triggerUserOutboundEvent(event, promise: promise)
                }
            }
        }

        private final class Answerer: ChannelInboundHandler {
            typealias InboundIn = HTTPServerRequestPart
            typealias OutboundOut = ByteBuffer

            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                guard case .head(let head) = self.unwrapInboundIn(data) else { return }
                let answer: String? =
                    switch head.uri {
                    case "/nocontentlength": "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nfoo"
                    case "/nocontent": "HTTP/1.1 204 OK\r\nConnection: close\r\n\r\n"
                    case "/noresponse": nil
                    case "/wrongcontentlength": "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 6\r\n\r\nfoo"
                    case "/transferencoding": "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nfoo\r\n0\r\n\r\n"
                    case "/transferencodingtruncated": "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n12\r\nfoo"
                    default: "HTTP/1.1 404 OK\r\nConnection: close\r\nContent-Length: 9\r\n\r\nNot Found"
                    }
                if let answer {
                    context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: answer)), promise: nil)
                }
                context.triggerUserOutboundEvent(ForceCloser.CloseEvent(), promise: nil)
            }
        }
    }

    static func url(_ server: LoopbackServer, _ path: String) -> URL { URL(string: "https://localhost:\(server.port)\(path)")! }

    static func run(_ body: (LoopbackServer, HTTPSessionManager) async throws -> Void) async throws {
        let server = try await UncleanServer.start()
        try await withShutdown(of: server) { server async throws in
            var configuration = SessionConfiguration.default
            configuration.responseCache = nil
            try await withManager(baseURL: nil, configuration: configuration, securityPolicy: try Transport.trustingTestRoot()) { manager async throws in
                try await body(server, manager)
            }
        }
    }

    // AHC: testEOFFramedSuccess. AHC fails with NIOSSL's `uncleanShutdown`: without close_notify
    // it cannot tell the body's end from a truncation. Courier takes the close as the end (its
    // engine's documented rule), as Go's client does (crypto/tls reads an EOF at a record
    // boundary as the end: "popular web sites seem to do this"): servers that close so are
    // common, and an answer that matters states its length (RFC 9112 6.3 makes close-framing
    // the last resort).
    @Test func anAnswerFramedByTheCloseIsWhole() async throws {
        try await Self.run { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(for: Request(url: Self.url(server, "/nocontentlength")))
            #expect(response.response.status == .ok)
            #expect(response.data == Data("foo".utf8))
        }
    }

    // AHC: testEOFFramedSuccess's `/nocontent` (a 204 has no body, whatever the close)
    @Test func aNoContentAnswerThenAnUncleanCloseIsWhole() async throws {
        try await Self.run { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(for: Request(url: Self.url(server, "/nocontent")))
            #expect(response.response.status == .noContent)
            #expect(response.data?.isEmpty != false)
        }
    }

    // AHC: testContentLength, testTransferEncoding (the framing says the answer is whole)
    @Test(arguments: ["/contentlength", "/transferencoding"])
    func aWholeAnswerThenAnUncleanCloseIsTheResponse(_ path: String) async throws {
        try await Self.run { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(for: Request(url: Self.url(server, path)))
            if path == "/contentlength" {
                #expect(response.response.status == .notFound)
                #expect(response.response.headerFields[.contentLength] == "9")
                #expect(response.data == Data("Not Found".utf8))
            } else {
                #expect(response.response.status == .ok)
                #expect(response.data == Data("foo".utf8))
            }
        }
    }

    // AHC: testContentLengthButTruncated, testTransferEncodingButTruncated (the framing says
    // more was to come: the answer is cut short)
    @Test(arguments: ["/wrongcontentlength", "/transferencodingtruncated"])
    func aTruncatedAnswerThenAnUncleanCloseFails(_ path: String) async throws {
        try await Self.run { server, manager async throws in
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.responseOfAnyStatus(for: Request(url: Self.url(server, path)))
            }
            #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            #expect(error?.response?.status == .ok)
        }
    }

    // AHC: testConnectionDrop (no answer at all)
    @Test func noAnswerThenAnUncleanCloseFails() async throws {
        try await Self.run { server, manager async throws in
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.responseOfAnyStatus(for: Request(url: Self.url(server, "/noresponse")))
            }
            #expect(error?.code == .connectionClosed, "\(String(describing: error))")
        }
    }
}
