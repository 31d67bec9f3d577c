@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP2
import Testing

/// A request HTTP/2 cannot carry goes over HTTP/1.1, against a ``ScriptedHTTP2Server`` whose ALPN
/// offers `http/1.1` too: a server that answers HTTP_1_1_REQUIRED (a reset or a GOAWAY) gets the
/// request again over HTTP/1.1, and the origin's later requests go so at once, as Chromium does;
/// a body read once cannot go again, and the error says so.
@Suite("HTTP/1.1 where HTTP/2 cannot carry a request")
struct HTTP1FallbackTests {
    static func protocols(_ response: DataResponse<(any Sendable)?>) -> [String?] {
        response.metrics?.transactions.map(\.networkProtocolName) ?? []
    }

    /// A reset with HTTP_1_1_REQUIRED (IIS, Apache): the request (a POST: nothing was processed)
    /// goes again over HTTP/1.1, and the next request to the origin goes there directly.
    @Test func aStreamResetWithHTTP11RequiredGoesAgainOverHTTP11AndTheOriginStaysThere() async throws {
        let server = try await ScriptedHTTP2Server.start(servesHTTP1: true) { _, _ in .reset(.http11Required) }
        try await HTTP2PoolTests().withManager(server) { manager in
            let first = try await manager.post("first", parameters: ["a": "1"])
            #expect(HTTP2PoolTests.body(first) == "over HTTP/1.1")
            #expect(Self.protocols(first) == ["http/1.1"])
            #expect(server.paths == ["/first"], "refused once over HTTP/2")
            let second = try await manager.get("second")
            #expect(HTTP2PoolTests.body(second) == "over HTTP/1.1")
            #expect(Self.protocols(second) == ["http/1.1"])
            #expect(server.paths == ["/first"], "not tried over HTTP/2 again")
            #expect(server.http1Paths == ["/first", "/second"])
            #expect(server.connectionCount == 2, "the HTTP/2 connection and one HTTP/1.1 connection, reused")
        }
    }

    /// A GOAWAY with HTTP_1_1_REQUIRED that leaves the stream unprocessed: the same.
    @Test func aGoAwayWithHTTP11RequiredSendsTheRequestAgainOverHTTP11AndTheOriginStaysThere() async throws {
        let server = try await ScriptedHTTP2Server.start(servesHTTP1: true) { _, _ in .goAwayWithError(.http11Required, debug: "use HTTP/1.1") }
        try await HTTP2PoolTests().withManager(server) { manager in
            let first = try await manager.get("first")
            #expect(HTTP2PoolTests.body(first) == "over HTTP/1.1")
            #expect(Self.protocols(first) == ["http/1.1"])
            let second = try await manager.get("second")
            #expect(HTTP2PoolTests.body(second) == "over HTTP/1.1")
            #expect(server.paths == ["/first"])
            #expect(server.http1Paths == ["/first", "/second"])
        }
    }

    /// A body read once cannot go again: the request fails with the server's answer and what to
    /// do; the origin's next request goes over HTTP/1.1 all the same.
    @Test func aOneShotStreamRefusedWithHTTP11RequiredFailsSayingWhy() async throws {
        let server = try await ScriptedHTTP2Server.start(servesHTTP1: true) { _, _ in .reset(.http11Required) }
        try await HTTP2PoolTests().withManager(server) { manager in
            var request = Request(method: .post, url: URL(string: "https://localhost:\(server.port)/upload")!)
            request.body = oneShotBody("abc")
            let error = await #expect(throws: CourierError.self) {
                try await manager.response(for: request, serializer: DataResponseSerializer())
            }
            #expect(error?.code == .connectionClosed)
            let message = error?.message ?? ""
            #expect(message.contains("the server reset the HTTP/2 stream (HTTP_1_1_REQUIRED): the server wants this request over HTTP/1.1"), "\(message)")
            #expect(message.contains("only when its body can be sent again"), "\(message)")
            #expect(message.contains("httpVersion = .http1Only"), "\(message)")
            #expect(server.http1Paths == [], "not sent again")

            let next = try await manager.get("next")
            #expect(HTTP2PoolTests.body(next) == "over HTTP/1.1")
            #expect(server.paths == ["/upload"])
            #expect(server.http1Paths == ["/next"])
        }
        #expect(HTTP2GoAwayRefusal(errorCode: .http11Required, debugData: nil).description.contains("the server wants this request over HTTP/1.1"))
    }

    /// Through an HTTP proxy's CONNECT tunnel: the HTTP/1.1 connection takes the same route, in a
    /// tunnel of its own.
    @Test func theFallbackTakesTheSameProxyRoute() async throws {
        let server = try await ScriptedHTTP2Server.start(servesHTTP1: true) { _, _ in .reset(.http11Required) }
        try await withShutdown(of: try await TestProxy.start(upstreamPort: server.port)) { proxy in
            try await HTTP2PoolTests().withManager(server, configure: { $0.proxy = .http(host: "127.0.0.1", port: proxy.port) }) { manager in
                let response = try await manager.get("tunnelled")
                #expect(HTTP2PoolTests.body(response) == "over HTTP/1.1")
                #expect(Self.protocols(response) == ["http/1.1"])
                #expect(server.http1Paths == ["/tunnelled"])
                #expect(proxy.connectTargets == ["localhost:\(server.port)", "localhost:\(server.port)"], "\(proxy.connectTargets)")
            }
        }
    }

    /// A header field of 22 KB makes a header block larger than the server's frame (16 KiB), and
    /// Courier sends no CONTINUATION frames: that request goes over HTTP/1.1, whole; the next
    /// small one still goes over HTTP/2.
    @Test func aRequestHeadTooLargeForAnHTTP2FrameGoesOverHTTP11Alone() async throws {
        let server = try await ScriptedHTTP2Server.start(servesHTTP1: true) { _, _ in .respond("over HTTP/2") }
        try await HTTP2PoolTests().withManager(server) { manager in
            // Bytes of every value, which no Huffman code makes shorter: 22 KB stays over 16 KiB.
            let cookie = String((0..<22_000).map { Character(UnicodeScalar(UInt8(33 + $0 % 94))) })
            let large = try await manager.get("large", headers: [HTTPField.Name("x-large")!: cookie])
            #expect(HTTP2PoolTests.body(large) == "over HTTP/1.1")
            #expect(Self.protocols(large) == ["http/1.1"])
            #expect(server.http1LongestFieldValue == 22_000)
            let small = try await manager.get("small")
            #expect(HTTP2PoolTests.body(small) == "over HTTP/2")
            #expect(Self.protocols(small) == ["h2"])
            #expect(server.paths == ["/small"])
            #expect(server.http1Paths == ["/large"])
        }
    }
}

extension HTTP1FallbackTests {
    /// The same request against a server that speaks only HTTP/2: it cannot go either way, and
    /// the error says both, not only what the HTTP/1.1 connection met.
    @Test func aRequestHeadTooLargeForAnHTTP2OnlyServerFailsSayingWhy() async throws {
        let server = try await ScriptedHTTP2Server.start { _, _ in .respond("over HTTP/2") }
        try await HTTP2PoolTests().withManager(server) { manager in
            let cookie = String((0..<22_000).map { Character(UnicodeScalar(UInt8(33 + $0 % 94))) })
            do {
                _ = try await manager.get("large", headers: [HTTPField.Name("x-large")!: cookie])
                Issue.record("the request should have failed")
            } catch let error as CourierError {
                // Before: only "the response could not be parsed: a response that is not HTTP/1.1".
                #expect(error.code == .invalidResponse)
                #expect(error.message.contains("does not fit in one of the server's HTTP/2 frames"), "\(error.message)")
                #expect(error.message.contains("not HTTP/1.1"), "\(error.message)")
            }
            let small = try await manager.get("small")
            #expect(HTTP2PoolTests.body(small) == "over HTTP/2")
        }
    }
}
