// Ported from AsyncHTTPClient's Tests/AsyncHTTPClientTests/NoBytesSentOverBodyLimitTests.swift
// and HTTPClientTests.swift (https://github.com/swift-server/async-http-client), Copyright (c)
// 2018-2022 Apple Inc. and the AsyncHTTPClient project authors, licensed under the Apache
// License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import NIOCore
import NIOPosix
import Testing

/// Uploads that must stop: a stream that yields more than its declared length (not one byte past
/// the length may reach the server, or the rest would be read as the connection's next request),
/// and a server that stops reading (the idle timeout ends the task; it does not wait forever).
/// The server is a socket that answers nothing and keeps every byte it receives.
@Suite("Conformance: AsyncHTTPClient uploads that must stop")
struct AHCUploadTests {
    /// A loopback server that answers nothing: it keeps the bytes of each connection, and notes
    /// each connection's close; with `reads` false it reads nothing (and so sees no close).
    final class SilentServer: ShutDownByAwaiting {
        struct State {
            var bytes: [[UInt8]] = []
            var closed = 0
        }

        let channel: any Channel
        let state: ObservedBox<State>
        var port: Int { self.channel.localAddress!.port! }
        var url: URL { URL(string: "http://127.0.0.1:\(self.port)/")! }
        var changes: Changes { self.state.changes }

        private init(channel: any Channel, state: ObservedBox<State>) {
            self.channel = channel
            self.state = state
        }

        static func start(reads: Bool) async throws -> SilentServer {
            let state = ObservedBox(State())
            let channel = try await ServerBootstrap(group: TestServer.eventLoopGroup)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.autoRead, value: reads)
                .childChannelInitializer { channel in
                    let index = state.withLockedValue { state -> Int in
                        state.bytes.append([])
                        return state.bytes.count - 1
                    }
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(Recorder(index: index, state: state))
                    }
                }
                .bind(host: "127.0.0.1", port: 0)
                .get()
            return SilentServer(channel: channel, state: state)
        }

        func shutdown() async {
            try? await self.channel.close()
        }

        private final class Recorder: ChannelInboundHandler {
            typealias InboundIn = ByteBuffer
            let index: Int
            let state: ObservedBox<State>

            init(index: Int, state: ObservedBox<State>) {
                self.index = index
                self.state = state
            }

            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                let bytes = self.unwrapInboundIn(data).readableBytesView
                self.state.withLockedValue { $0.bytes[self.index] += bytes }
            }

            func channelInactive(context: ChannelHandlerContext) {
                self.state.withLockedValue { $0.closed += 1 }
                context.fireChannelInactive()
            }
        }
    }

    // AHC: testNoBytesSentOverBodyLimit
    @Test func noByteOfAChunkPastTheDeclaredLengthIsSent() async throws {
        let server = try await SilentServer.start(reads: true)
        try await withShutdown(of: server) { server in
            try await withManager(baseURL: nil) { manager in
                let smuggled = "XBAD BAD BAD NOT HTTP/1.1\r\n\r\n"
                let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                    continuation.yield(ByteBuffer(string: smuggled))
                    continuation.finish()
                }
                let request = Request(method: .post, url: server.url, body: .stream(chunks, length: .known(1)))
                let error = await #expect(throws: CourierError.self) { _ = try await manager.responseOfAnyStatus(for: request) }
                #expect(error?.code == .bodyReadFailed, "\(String(describing: error))")
                #expect(error?.message.contains("declared 1 bytes") == true, "\(String(describing: error))")
                // The connection closed with the head alone, if the head went out at all.
                #expect(await server.changes.wait { server.state.read { $0.closed == $0.bytes.count } })
                for bytes in server.state.read({ $0.bytes }) {
                    let text = String(decoding: bytes, as: UTF8.self)
                    #expect(!text.contains("BAD"), "\(text)")
                    #expect(text.isEmpty || text.hasSuffix("\r\n\r\n"), "\(text)")
                }
            }
        }
    }

    // AHC: HTTP2ClientTests.testStreamRequestBodyWithFalseKnowledgeAboutLength. Over HTTP/2 a
    // stream that gives fewer or more bytes than it declared is reset, never ended: the server
    // has no whole request to answer, and the connection goes on carrying the next.
    @Test func aStreamThatMisstatesItsLengthIsResetOverHTTP2() async throws {
        var configuration = TestServer.Configuration.https()
        configuration.recordsRequests = true
        try await withTestServer(configuration) { server in
            try await withManager(baseURL: nil, securityPolicy: try Transport.trustingTestRoot()) { manager in
                for (declared, chunk) in [(10, "abcd"), (4, "abcdefghij")] {
                    let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                        continuation.yield(ByteBuffer(string: chunk))
                        continuation.finish()
                    }
                    let request = Request(method: .post, url: server.url("/anything"), body: .stream(chunks, length: .known(Int64(declared))))
                    let error = await #expect(throws: CourierError.self) { _ = try await manager.responseOfAnyStatus(for: request) }
                    #expect(error?.code == .bodyReadFailed, "\(String(describing: error))")
                }
                // Frames are read in order: once this answer is in, the resets were read too.
                let next = try await manager.responseOfAnyStatus(for: Request(url: server.url("/get")))
                #expect(next.response.status == .ok)
                #expect(server.receivedRequests.map(\.path) == ["/get"], "\(server.receivedRequests.map(\.path))")
                #expect(server.requestCountsByHTTPVersion == ["HTTP/2": 1], "\(server.requestCountsByHTTPVersion)")
                #expect(server.connectionCount == 1, "a stream's reset leaves its connection")
            }
        }
    }

    // AHC: testWriteTimeout (there, a write that takes longer than the write timeout; Courier has
    // one idle timeout for both directions, URLSession's `timeoutIntervalForRequest`)
    @Test(arguments: [false, true])
    func anUploadToAServerThatStopsReadingTimesOut(streamed: Bool) async throws {
        let server = try await SilentServer.start(reads: false)
        try await withShutdown(of: server) { server in
            var configuration = SessionConfiguration.default
            configuration.timeoutIntervalForRequest = 1
            try await withManager(baseURL: nil, configuration: configuration) { manager in
                // Far more than loopback's socket buffers hold.
                let size = 64 << 20
                let chunk = ByteBuffer(repeating: 0x61, count: 1 << 20)
                let body: RequestBody =
                    streamed
                    ? .stream(
                        AsyncThrowingStream { continuation in
                            for _ in 0..<(size >> 20) { continuation.yield(chunk) }
                            continuation.finish()
                        }, length: .known(Int64(size)))
                    : .data(Data(repeating: 0x61, count: size))
                let error = await #expect(throws: CourierError.self) {
                    _ = try await manager.responseOfAnyStatus(for: Request(method: .post, url: server.url, body: body))
                }
                #expect(error?.code == .timedOut, "\(String(describing: error))")
            }
        }
    }
}
