@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

/// A folded header line (obs-fold) in a response head is read as one line with spaces in place of
/// the line break (RFC 9112 section 5.2, for a user agent): ``ResponseHeadMender`` alone, in
/// front of NIO's decoder on an `EmbeddedChannel`, and over a socket.
@Suite("HTTP/1.1 obs-fold")
struct HTTP1ObsFoldTests {
    static let folded = "HTTP/1.1 200 OK\r\nX-Folded: first\r\n  second\r\n\tthird\r\nContent-Length: 9\r\n\r\nbody\r\n  x"

    /// Runs `text` through a mender in pieces cut at `cuts`, giving back what it passes on.
    private func unfold(_ text: String, cuts: [Int], expectHeadAt: Set<Int> = [0]) -> String {
        HTTP1HeadMendingTests.mend(text, cuts: cuts, expectHeadAt: expectHeadAt)
    }

    @Test func aFoldBecomesSpacesAndNothingMoves() {
        let unfolded = self.unfold(Self.folded, cuts: [])
        #expect(unfolded == "HTTP/1.1 200 OK\r\nX-Folded: first    second  \tthird\r\nContent-Length: 9\r\n\r\nbody\r\n  x")
        #expect(unfolded.utf8.count == Self.folded.utf8.count)
    }

    @Test func aFoldSplitAnywhereIsFoundTheSame() {
        let whole = self.unfold(Self.folded, cuts: [])
        for cut in 1..<Self.folded.utf8.count {
            #expect(self.unfold(Self.folded, cuts: [cut]) == whole, "cut at \(cut)")
        }
        // One byte at a time.
        #expect(self.unfold(Self.folded, cuts: Array(1..<Self.folded.utf8.count)) == whole)
    }

    @Test func theBodyIsNeverTouched() {
        // After the head, a body that looks like a fold stays as it is, until the next request.
        let text = "HTTP/1.1 200 OK\r\nA: b\r\n\r\nx\r\n y\r\nHTTP/1.1 200 OK\r\nC: d\r\n e\r\n\r\n"
        let second = text.utf8.count - "HTTP/1.1 200 OK\r\nC: d\r\n e\r\n\r\n".utf8.count
        #expect(self.unfold(text, cuts: [second], expectHeadAt: [0, second]) == "HTTP/1.1 200 OK\r\nA: b\r\n\r\nx\r\n y\r\nHTTP/1.1 200 OK\r\nC: d   e\r\n\r\n")
        // Without a new request, nothing after the head is looked at.
        #expect(self.unfold(text, cuts: [second], expectHeadAt: [0]) == text)
    }

    @Test func anInterimHeadIsFollowedByTheFinalOne() {
        // The bare LFs that end the folded line and the head get their CRs (HTTP1HeadMendingTests).
        let text = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nA: b\n c\n\nz\r\n y"
        #expect(self.unfold(text, cuts: []) == "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nA: b  c\r\n\r\nz\r\n y")
    }

    @Test func whitespaceAfterTheStatusLineIsLeftForTheDecoder() {
        // Not a fold (no field line to continue): NIO's decoder refuses it, as RFC 9112 allows.
        let text = "HTTP/1.1 200 OK\r\n A: b\r\n\r\n"
        #expect(self.unfold(text, cuts: []) == text)
    }

    @Test func nioDecoderReadsTheUnfoldedHead() throws {
        let channel = EmbeddedChannel()
        let watcher = HTTP1ReadWatcher()
        try channel.pipeline.syncOperations.addHandler(watcher)
        try channel.pipeline.syncOperations.addHTTPClientHandlers()
        try channel.writeOutbound(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")))
        try channel.writeOutbound(HTTPClientRequestPart.end(nil))
        // Split inside the fold's line break: the watcher holds the break back until it knows.
        let bytes = Array(Self.folded.utf8)
        let cut = Self.folded.utf8.count - "\n  second\r\n\tthird\r\nContent-Length: 9\r\n\r\nbody\r\n  x".utf8.count
        try channel.writeInbound(ByteBuffer(bytes: bytes[..<cut]))
        try channel.writeInbound(ByteBuffer(bytes: bytes[cut...]))
        guard case .head(let head) = try channel.readInbound(as: HTTPClientResponsePart.self) else {
            Issue.record("no head")
            return
        }
        let value = try #require(head.headers.first(name: "X-Folded"))
        #expect(value.split(whereSeparator: { $0 == " " || $0 == "\t" }) == ["first", "second", "third"])
        #expect(!value.contains("\r") && !value.contains("\n"))
        var body = ByteBuffer()
        while let part = try channel.readInbound(as: HTTPClientResponsePart.self) {
            if case .body(var chunk) = part { body.writeBuffer(&chunk) }
        }
        #expect(String(buffer: body) == "body\r\n  x", "the body is untouched")
        #expect(watcher.sawBytes)
        _ = try? channel.finish()
    }

    @Test func overASocketAFoldedFieldIsOneField() async throws {
        let server = try await ScriptedHTTPServer.start { _, request, _ in
            // Two responses on one connection (the second head is unfolded too), then a 100
            // before a folded final head.
            switch request {
            case 0: .respond("HTTP/1.1 200 OK\r\nX-Folded: one\r\n two\r\nContent-Length: 2\r\n\r\nok")
            case 1: .respond("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Folded: three\r\n\tfour\r\n\r\nok")
            default: .respond("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-Folded: five\r\n six\r\nContent-Length: 2\r\n\r\nok")
            }
        }
        do {
            try await withManager(baseURL: server.baseURL) { manager in
                for expected in [["one", "two"], ["three", "four"], ["five", "six"]] {
                    let response = try await manager.response(method: .get, urlString: "a", serializer: DataResponseSerializer())
                    #expect(response.value == Data("ok".utf8))
                    let value = try #require(response.response.headerFields[HTTPField.Name("X-Folded")!])
                    #expect(value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init) == expected)
                }
                #expect(server.connectionCount == 1, "the connection was reused")
            }
            await server.shutdown()
        } catch {
            await server.shutdown()
            throw error
        }
    }
}
