// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/CacheTest.kt
// (https://github.com/square/okhttp), Copyright (C) 2011 The Android Open Source Project,
// licensed under the Apache License, Version 2.0.

@testable import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// The cases of OkHttp's `CacheTest` whose server does what `TestServer` does not: bodies cut
/// short by the connection's close, content codings, interim `1xx` answers, reason phrases, the
/// connection a conditional request went over. A `ScriptedHTTPServer` writes each answer byte for
/// byte; one queue serves every connection, in order (MockWebServer's).
///
/// Where OkHttp's assertion is on its cache's counters (`writeSuccessCount`,
/// `writeAbortCount`), the Courier test asserts what they stand for: whether the next request
/// reached the server. Where OkHttp's response needs no caching fields to be stored (OkHttp
/// stores any 200), the Courier test adds `Cache-Control: max-age=60`, so that a response stored
/// by mistake would answer the next request.
@Suite("Conformance: OkHttp CacheTest over a scripted server")
struct OkHttpCacheWireTests {
    /// The answers, in order, whatever connection asks.
    final class Queue: Sendable {
        private let actions: NIOLockedValueBox<[ScriptedHTTPServer.Action]>

        init(_ actions: [ScriptedHTTPServer.Action]) { self.actions = NIOLockedValueBox(actions) }

        func next() -> ScriptedHTTPServer.Action {
            self.actions.withLockedValue { actions in
                actions.isEmpty ? .respond("HTTP/1.1 500 Queue Empty\r\nContent-Length: 0\r\n\r\n") : actions.removeFirst()
            }
        }
    }

    /// Runs `body` with a server answering `actions` in order and a manager whose cache is new
    /// (in memory, or in `directory` when given).
    static func run(
        _ actions: [ScriptedHTTPServer.Action], directory: URL? = nil,
        configure: (inout SessionConfiguration) -> Void = { _ in },
        _ body: (ScriptedHTTPServer, SessionManager, ResponseCache) async throws -> Void
    ) async throws {
        let queue = Queue(actions)
        try await ScriptedHTTPServer.with({ _, _, _ in queue.next() }) { server in
            let cache = try directory.map { try ResponseCache(memoryCapacity: 0, diskCapacity: 16 << 20, directory: $0) }
                ?? ResponseCache(memoryCapacity: 16 << 20)
            var configuration = SessionConfiguration.default
            configuration.responseCache = cache
            configure(&configuration)
            try await withManager(baseURL: nil, configuration: configuration) { manager in
                try await body(server, manager, cache)
            }
        }
    }

    /// A GET of `url`, any status a response, with a timeout on every wait (60 s: no case waits
    /// for it, and a full CI run held every test for about 36 s).
    static func get(_ manager: SessionManager, _ url: URL) async throws -> DataResponse<Data> {
        var request = Request(url: url)
        request.options.timeoutInterval = 60
        return try await manager.responseOfAnyStatus(for: request)
    }

    static func text(_ response: DataResponse<Data>) -> String { String(decoding: response.value, as: UTF8.self) }

    /// An HTTP-date `seconds` from now.
    static func date(_ seconds: TimeInterval) -> String { OkHttpCacheTests.formatDate(seconds) }

    static func gzip(_ text: String) throws -> [UInt8] { try GoReadResponseTests.gzip(Array(text.utf8)) }

    /// A head with `fields` (and nothing else: the caller writes the framing).
    static func head(_ fields: [String], status: String = "200 OK") -> [UInt8] {
        Array(("HTTP/1.1 \(status)\r\n" + fields.map { "\($0)\r\n" }.joined() + "\r\n").utf8)
    }

    static let content = "ABCDE\nFGHIJKLMNOPQRSTUVWXYZ"

    /// `content` in chunks of `size` bytes, and the last chunk.
    static func chunked(_ content: String, size: Int) -> String {
        let bytes = Array(content.utf8)
        var text = ""
        for start in stride(from: 0, to: bytes.count, by: size) {
            let chunk = bytes[start..<min(start + size, bytes.count)]
            text += String(chunk.count, radix: 16) + "\r\n" + String(decoding: chunk, as: UTF8.self) + "\r\n"
        }
        return text + "0\r\n\r\n"
    }

    // MARK: A body cut short

    /// OkHttp: serverDisconnectsPrematurelyWithContentLengthHeader,
    /// serverDisconnectsPrematurelyWithChunkedEncoding. The first answer, which a cache could
    /// keep for a minute, stops after 16 bytes of its body and the connection closes: the
    /// request fails with the bytes that came, nothing is stored, and the next request reaches
    /// the server.
    @Test(arguments: ["length", "chunked"])
    func serverDisconnectsPrematurely(_ framing: String) async throws {
        let full = framing == "length"
            ? String(decoding: Self.head(["Cache-Control: max-age=60", "Content-Length: 27"]), as: UTF8.self) + Self.content
            : String(decoding: Self.head(["Cache-Control: max-age=60", "Transfer-Encoding: chunked"]), as: UTF8.self)
                + Self.chunked(Self.content, size: 16)
        let headLength = full.utf8.count - (framing == "length" ? 27 : Self.chunked(Self.content, size: 16).utf8.count)
        let cut = Array(full.utf8.prefix(headLength + (framing == "length" ? 16 : 4 + 16)))
        try await Self.run([
            .respondBytesThenClose(cut),
            .respond("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nRequest #2"),
        ]) { server, manager, cache async throws in
            let error = await #expect(throws: CourierError.self) { _ = try await Self.get(manager, server.baseURL) }
            #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            #expect(error?.data.map { String(decoding: $0, as: UTF8.self) } == "ABCDE\nFGHIJKLMNO", "the bytes that came")
            #expect(cache.isEmpty)
            #expect(try await Self.text(Self.get(manager, server.baseURL)) == "Request #2")
            #expect(server.receivedHeads.count == 2)
        }
    }

    /// OkHttp: clientPrematureDisconnectWithContentLengthHeader,
    /// clientPrematureDisconnectWithChunkedEncoding, clientPrematureDisconnectWithNoLengthHeaders.
    /// The client reads the first five bytes of a body a cache could keep for a minute and stops
    /// (the rest is held back by the server): nothing is stored, and the next request reaches the
    /// server.
    @Test(arguments: ["length", "chunked", "close"])
    func clientPrematureDisconnect(_ framing: String) async throws {
        let gate = OneShotGate()
        defer { gate.open() }
        let fields = ["Cache-Control: max-age=60"]
            + (framing == "length" ? ["Content-Length: 27"] : framing == "chunked" ? ["Transfer-Encoding: chunked"] : [])
        let body = Array((framing == "chunked" ? Self.chunked(Self.content, size: 1024) : Self.content).utf8)
        let split = framing == "chunked" ? 4 + 5 : 5
        try await Self.run([
            .respondInTwoParts(Self.head(fields) + body.prefix(split), then: Array(body.dropFirst(split)), gate: gate),
            .respond("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nRequest #2"),
        ]) { server, manager, cache async throws in
            let stream = try await manager.stream(Request(url: server.baseURL))
            var received: [UInt8] = []
            for try await chunk in stream.body {
                received += chunk.readableBytesView
                if received.count >= 5 { break }
            }
            #expect(String(decoding: received, as: UTF8.self) == "ABCDE")
            stream.task.cancel()
            #expect(cache.isEmpty)
            #expect(try await Self.text(Self.get(manager, server.baseURL)) == "Request #2")
            #expect(server.receivedHeads.count == 2)
        }
    }

    // MARK: Content codings

    /// OkHttp: gzipAndVaryOnAcceptEncoding. The engine asks for gzip below the cache; the stored
    /// answer varies on a field the caller never set, and answers the next request.
    @Test func gzipAndVaryOnAcceptEncoding() async throws {
        let gzipped = try Self.gzip("ABCABCABC")
        try await Self.run([
            .respondBytes(
                Self.head([
                    "Content-Encoding: gzip", "Vary: Accept-Encoding", "Cache-Control: max-age=60", "Content-Length: \(gzipped.count)",
                ]) + gzipped),
            .respond("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nFAIL"),
        ]) { server, manager, _ async throws in
            #expect(try await Self.text(Self.get(manager, server.baseURL)) == "ABCABCABC")
            #expect(try await Self.text(Self.get(manager, server.baseURL)) == "ABCABCABC")
            #expect(server.receivedHeads.count == 1)
        }
    }

    /// OkHttp: nonIdentityEncodingAndConditionalCache (`expires` in the past) and
    /// nonIdentityEncodingAndFullCache (in the future). A gzipped answer, stored, then answered
    /// again by `304`s: the body is the decoded text each time, whichever store held it.
    @Test(arguments: [(-3600.0, false), (3600.0, false), (-3600.0, true), (3600.0, true)])
    func nonIdentityEncoding(expires: TimeInterval, onDisk: Bool) async throws {
        let gzipped = try Self.gzip("ABCABCABC")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-okhttp-cache-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let notModified = "HTTP/1.1 304 Not Modified\r\n\r\n"
        try await Self.run(
            [
                .respondBytes(
                    Self.head([
                        "Last-Modified: \(Self.date(-7200))", "Expires: \(Self.date(expires))", "Content-Encoding: gzip",
                        "Content-Length: \(gzipped.count)",
                    ]) + gzipped),
                .respond(notModified), .respond(notModified),
            ], directory: onDisk ? directory : nil
        ) { server, manager, _ async throws in
            for _ in 0..<3 {
                let response = try await Self.get(manager, server.baseURL)
                #expect(response.response.status.code == 200)
                #expect(Self.text(response) == "ABCABCABC")
            }
            #expect(server.receivedHeads.count == (expires < 0 ? 3 : 1))
        }
    }

    /// OkHttp: notModifiedSpecifiesEncoding, changedGzippedContentIsNotModifiedAndSpecifiesNewEncoding,
    /// previouslyNotGzippedContentIsNotModifiedAndSpecifiesGzipEncoding. A `304` whose
    /// `Content-Encoding` differs from the stored answer's does not change how the stored body is
    /// read (RFC 9111 3.2 lets a cache that stores decoded bodies keep the coding out of the
    /// update); the third request, stale again, gets the server's new body.
    @Test(arguments: [("gzip", "gzip"), ("gzip", "identity"), (nil, "gzip")] as [(String?, String)])
    func notModifiedSpecifiesEncoding(stored: String?, inNotModified: String) async throws {
        let body = stored == nil ? Array("ABCABCABC".utf8) : try Self.gzip("ABCABCABC")
        try await Self.run([
            .respondBytes(
                Self.head(
                    ["Content-Type: text/plain", "Last-Modified: \(Self.date(-7200))", "Expires: \(Self.date(-3600))"]
                        + (stored.map { ["Content-Encoding: \($0)"] } ?? []) + ["Content-Length: \(body.count)"]) + body),
            .respond("HTTP/1.1 304 Not Modified\r\nContent-Type: text/plain\r\nContent-Encoding: \(inNotModified)\r\n\r\n"),
            .respond("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nDEFDEFDEF"),
        ]) { server, manager, _ async throws in
            #expect(try await Self.text(Self.get(manager, server.baseURL)) == "ABCABCABC")
            let revalidated = try await Self.get(manager, server.baseURL)
            #expect(Self.text(revalidated) == "ABCABCABC")
            #expect(revalidated.response.status.code == 200)
            #expect(try await Self.text(Self.get(manager, server.baseURL)) == "DEFDEFDEF")
            #expect(server.receivedHeads.count == 3)
        }
    }

    // MARK: Interim answers, reason phrases, framing

    /// OkHttp: responseCachingWith1xxInformationalResponse (102 and 103 before the 200).
    @Test(arguments: [102, 103])
    func responseCachingWith1xxInformationalResponse(_ interim: Int) async throws {
        try await Self.run([
            .respond(
                "HTTP/1.1 \(interim) Interim\r\n\r\nHTTP/1.1 200 OK\r\nLast-Modified: \(Self.date(-3600))\r\n"
                    + "Expires: \(Self.date(3600))\r\nContent-Length: 5\r\n\r\nABCDE"),
        ]) { server, manager, cache async throws in
            let first = try await Self.get(manager, server.baseURL)
            #expect(first.response.status.code == 200 && Self.text(first) == "ABCDE")
            #expect(!cache.isEmpty)
            let second = try await Self.get(manager, server.baseURL)
            #expect(second.response.status.code == 200 && Self.text(second) == "ABCDE")
            #expect(server.receivedHeads.count == 1)
        }
    }

    /// OkHttp: responseCachingAndInputStreamSkipWithFixedLength, …WithChunkedEncoding,
    /// …WithNoLengthHeaders. The stored answer keeps its reason phrase (`200 Fantastic`) and its
    /// whole body, however it was framed (one-byte chunks; a body ended by the close), in memory
    /// and on disk.
    @Test(arguments: ["length", "chunked", "close"], [false, true])
    func responseCachingKeepsReasonAndBody(_ framing: String, onDisk: Bool) async throws {
        let content = "I love puppies but hate spiders"
        let fields = ["Last-Modified: \(Self.date(-3600))", "Expires: \(Self.date(3600))"]
        let answer: ScriptedHTTPServer.Action = switch framing {
        case "length": .respondBytes(Self.head(fields + ["Content-Length: \(content.utf8.count)"], status: "200 Fantastic") + Array(content.utf8))
        case "chunked": .respondBytes(Self.head(fields + ["Transfer-Encoding: chunked"], status: "200 Fantastic") + Array(Self.chunked(content, size: 1).utf8))
        default: .respondBytesThenClose(Self.head(fields, status: "200 Fantastic") + Array(content.utf8))
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-okhttp-cache-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await Self.run([answer], directory: onDisk ? directory : nil) { server, manager, _ async throws in
            let first = try await Self.get(manager, server.baseURL)
            #expect(Self.text(first) == content)
            let second = try await Self.get(manager, server.baseURL)
            #expect(Self.text(second) == content)
            #expect(second.response.status.code == 200)
            #expect(second.response.status.reasonPhrase == "Fantastic")
            #expect(server.receivedHeads.count == 1)
        }
    }

    // MARK: Connections and cookies

    /// OkHttp: connectionIsReturnedToPoolAfterConditionalSuccess, conditionalCacheHitIsNotDoublePooled.
    /// A revalidation answered `304` leaves its connection for the next request: three
    /// requests, one connection.
    @Test func connectionIsReturnedToPoolAfterConditionalSuccess() async throws {
        try await Self.run([
            .respond("HTTP/1.1 200 OK\r\nLast-Modified: \(Self.date(-3600))\r\nCache-Control: max-age=0\r\nContent-Length: 1\r\n\r\nA"),
            .respond("HTTP/1.1 304 Not Modified\r\n\r\n"),
            .respond("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nB"),
        ]) { server, manager, _ async throws in
            #expect(try await Self.text(Self.get(manager, server.baseURL.appendingPathComponent("a"))) == "A")
            let revalidated = try await Self.get(manager, server.baseURL.appendingPathComponent("a"))
            #expect(Self.text(revalidated) == "A")
            let other = try await Self.get(manager, server.baseURL.appendingPathComponent("b"))
            #expect(Self.text(other) == "B")
            #expect(other.metrics?.transactions.last?.isReusedConnection == true)
            #expect(server.connectionCount == 1)
            #expect(server.receivedHeads.count == 3)
            #expect(server.receivedHeads[1].contains("If-Modified-Since: "), "\(server.receivedHeads[1])")
        }
    }

    /// OkHttp: cachePlusCookies. The `304`'s `Set-Cookie` is stored, not the one the stored
    /// answer carried.
    @Test func cachePlusCookies() async throws {
        try await Self.run(
            [
                .respond(
                    "HTTP/1.1 200 OK\r\nSet-Cookie: a=FIRST\r\nLast-Modified: \(Self.date(-3600))\r\nCache-Control: max-age=0\r\n"
                        + "Content-Length: 1\r\n\r\nA"),
                .respond("HTTP/1.1 304 Not Modified\r\nSet-Cookie: a=SECOND\r\n\r\n"),
            ], configure: { $0.httpCookieStorage = MemoryCookieStorage() }
        ) { server, manager, _ async throws in
            let store = try #require(manager.configuration.httpCookieStorage)
            #expect(try await Self.text(Self.get(manager, server.baseURL)) == "A")
            #expect(store.cookieHeader(for: server.baseURL) == "a=FIRST")
            #expect(try await Self.text(Self.get(manager, server.baseURL)) == "A")
            #expect(store.cookieHeader(for: server.baseURL) == "a=SECOND")
            #expect(server.receivedHeads.count == 2)
            #expect(server.receivedHeads[1].contains("Cookie: a=FIRST"), "\(server.receivedHeads[1])")
        }
    }
}
