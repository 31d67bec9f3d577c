// Ported from AsyncHTTPClient's Tests/AsyncHTTPClientTests/HTTPClientTests.swift and
// AsyncAwaitEndToEndTests.swift (https://github.com/swift-server/async-http-client), Copyright (c)
// 2018-2022 Apple Inc. and the AsyncHTTPClient project authors, licensed under the Apache
// License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Twins of AsyncHTTPClient's tests of a server that closes on the client, and of the header
/// fields a client must refuse to send (RFC 9110 5.1 and 5.5).
@Suite("Conformance: AsyncHTTPClient failures and field validation")
struct AHCFailureTests {
    // MARK: A server that closes

    // AHC: testRemoteClose, testWorksWhenServerClosesConnectionAfterReceivingRequest (a new
    // connection closed once the request is in, with no answer: that is the server's answer, and
    // the request fails, sent once)
    @Test func aNewConnectionClosedWithoutAnAnswerFailsTheRequest() async throws {
        try await AHCHTTPClientTests.overHTTP1({ _, _, _ in .close }) { server, manager async throws in
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL.appendingPathComponent("foo")))
            }
            #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            #expect(server.connectionCount == 1)
            #expect(server.receivedHeads.count == 1)
            #expect(server.receivedHeads.first?.hasPrefix("GET /foo HTTP/1.1\r\n") == true)
        }
    }

    /// The first request answered; the second, on the kept-alive connection, read and then
    /// closed without an answer; the third answered.
    static let acceptsThenRejects: ScriptedHTTPServer.Script = { connection, request, _ in
        connection == 0 && request == 1 ? .close : .respond(AHCHTTPClientTests.ok)
    }

    // AHC: testWeRecoverFromServerThatClosesTheConnectionOnUs. AHC fails the second request with
    // `remoteConnectionClosed`; Courier sends a GET found so on a reused connection again, on a
    // new one (RFC 9112 9.3.1: a client may retry an idempotent request when its connection
    // closed before the answer, as URLSession, OkHttp and Go do), and the next request works.
    @Test func aGETOnAReusedConnectionClosedUnderItGoesAgainOnANewOne() async throws {
        try await AHCHTTPClientTests.overHTTP1(Self.acceptsThenRejects) { server, manager async throws in
            #expect(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)).response.status == .ok)
            #expect(server.connectionCount == 1)
            #expect(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)).response.status == .ok)
            #expect(server.connectionCount == 2)
            #expect(server.receivedHeads.count == 3)
            #expect(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)).response.status == .ok)
            #expect(server.connectionCount == 2)
        }
    }

    // AHC: testWeRecoverFromServerThatClosesTheConnectionOnUs, with a POST: not idempotent, so
    // not sent again (the server may have acted on it); it fails as AHC's does, and the client
    // recovers: the next request goes on a new connection.
    @Test func aPOSTOnAReusedConnectionClosedUnderItFailsAndTheNextWorks() async throws {
        try await AHCHTTPClientTests.overHTTP1(Self.acceptsThenRejects) { server, manager async throws in
            let post = Request(method: .post, url: server.baseURL, body: .data(Data("a".utf8)))
            #expect(try await manager.responseOfAnyStatus(for: post).response.status == .ok)
            let error = await #expect(throws: CourierError.self) { _ = try await manager.responseOfAnyStatus(for: post) }
            #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            #expect(server.receivedHeads.count == 2)
            #expect(try await manager.responseOfAnyStatus(for: post).response.status == .ok)
            #expect(server.connectionCount == 2)
            #expect(server.receivedHeads.count == 3)
        }
    }

    // AHC: testContentLengthTooLongFails (a stream that declares 10 bytes and ends after 1: the
    // request fails; the server still waits for 9 bytes, so the connection is not used again,
    // and the next request works on a new one)
    @Test func anUploadShorterThanItsLengthFailsAndItsConnectionIsNotReused() async throws {
        try await AHCHTTPClientTests.overHTTP1({ _, _, _ in .respond(AHCHTTPClientTests.ok) }) { server, manager async throws in
            let one = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                continuation.yield(ByteBuffer(string: "1"))
                continuation.finish()
            }
            let short = Request(method: .post, url: server.baseURL.appendingPathComponent("post"), body: .stream(one, length: .known(10)))
            let error = await #expect(throws: CourierError.self) { _ = try await manager.responseOfAnyStatus(for: short) }
            #expect(error?.code == .bodyReadFailed, "\(String(describing: error))")
            #expect(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL.appendingPathComponent("get"))).response.status == .ok)
            #expect(server.connectionCount == 2)
            #expect(server.receivedHeads.count == 2)
            #expect(server.receivedHeads.last?.hasPrefix("GET /get HTTP/1.1\r\n") == true)
            #expect(await server.changes.wait { server.closedConnectionCount >= 1 }, "the first connection was left open")
        }
    }

    // MARK: Cancellation

    // AHC: testStressCancel, testCancel (100 requests to a server that never answers, each
    // cancelled as soon as it is resumed: every one fails as cancelled, none succeeds, and the
    // session's next request is answered)
    @Test func oneHundredRequestsCancelledAtOnceAllFailAsCancelled() async throws {
        let script: ScriptedHTTPServer.Script = { _, _, head in head.hasPrefix("GET /ok ") ? .respond(AHCHTTPClientTests.ok) : .hold }
        try await AHCHTTPClientTests.overHTTP1(script) { server, manager async throws in
            manager.responseSerializer = HTTPResponseSerializer()
            let completions = Recorder<CourierError?>()
            for _ in 0..<100 {
                let task = manager.dataTask(with: Request(url: server.baseURL.appendingPathComponent("wait"))) { _, _, error in completions.append(error) }
                task.resume()
                task.cancel()
            }
            #expect(await completions.wait { $0.count == 100 })
            #expect(completions.all.allSatisfy { $0?.code == .cancelled }, "\(completions.all.filter { $0?.code != .cancelled })")
            #expect(try await manager.responseOfAnyStatus(for: Request(url: server.baseURL.appendingPathComponent("ok"))).response.status == .ok)
        }
    }

    // MARK: Timeouts

    // AHC: testConnectTimeout (there a TCP connect to an address that never answers, which Linux
    // cannot stage on loopback; here a TLS server that takes the connection and never answers
    // the client hello: the connection is not made within the connect timeout, which fails the
    // request long before the request timeout)
    @Test func aConnectionNeverEstablishedFailsByTheConnectTimeout() async throws {
        let peer = try await BadTLSPeer.start(.silent)
        var configuration = SessionConfiguration.default
        configuration.timeoutIntervalForConnect = 0.3
        configuration.timeoutIntervalForRequest = 600
        do {
            try await withManager(baseURL: nil, configuration: configuration) { manager async throws in
                let error = await #expect(throws: CourierError.self) {
                    _ = try await manager.responseOfAnyStatus(for: Request(url: URL(string: "https://127.0.0.1:\(peer.port)/get")!))
                }
                #expect(error?.code == .timedOut, "\(String(describing: error))")
            }
        } catch {
            try await peer.shutdown()
            throw error
        }
        try await peer.shutdown()
    }

    // MARK: Field names and values

    /// Every byte RFC 9110 allows in a field name (a token).
    static let weirdAllowedFieldName = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

    /// Every visible ASCII byte, space and tab: all allowed in a field value.
    static let weirdAllowedFieldValue = "!\" \t#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"

    static func overBoth(_ http2: Bool, _ body: (TestServer, HTTPSessionManager) async throws -> Void) async throws {
        var serverConfiguration = http2 ? TestServer.Configuration.https() : TestServer.Configuration()
        serverConfiguration.recordsRequests = true
        try await withTestServer(serverConfiguration) { server async throws in
            try await withManager(baseURL: nil, securityPolicy: try Transport.trustingTestRoot()) { manager async throws in
                try await body(server, manager)
                #expect(Set(server.requestCountsByHTTPVersion.keys).isSubset(of: [http2 ? "HTTP/2" : "HTTP/1.1"]), "\(server.requestCountsByHTTPVersion)")
            }
        }
    }

    // AHC: testRejectsInvalidCharactersInHeaderFieldNames_http1, _http2 (the allowed name goes;
    // no other ASCII byte makes a name: swift-http-types has no `HTTPField.Name` for one, so
    // neither a `Request`'s fields nor `setValue(_:forHTTPHeaderField:)` can hold it)
    @Test(arguments: [false, true])
    func everyTokenByteGoesInAFieldName(http2: Bool) async throws {
        try await Self.overBoth(http2) { server, manager async throws in
            var request = Request(url: server.url("/get"))
            request.setValue("present", forHTTPHeaderField: Self.weirdAllowedFieldName)
            #expect(try await manager.responseOfAnyStatus(for: request).response.status == .ok)
            let received = try #require(server.receivedRequests.first)
            #expect(received.value(forHTTPHeaderField: Self.weirdAllowedFieldName) == "present")
            for byte in UInt8(0)...UInt8(127) where !Self.weirdAllowedFieldName.utf8.contains(byte) {
                let name = Self.weirdAllowedFieldName + String(decoding: [byte], as: UTF8.self)
                #expect(HTTPField.Name(name) == nil, "byte \(byte)")
                var refused = Request(url: server.url("/get"))
                refused.setValue("present", forHTTPHeaderField: name)
                #expect(refused.headerFields.isEmpty, "byte \(byte)")
            }
        }
    }

    // AHC: testRejectsInvalidCharactersInHeaderFieldValues_http1, _http2 (every visible byte,
    // space and tab go; bytes 128 to 255 (obs-text) go too)
    @Test(arguments: [false, true])
    func visibleBytesAndObsTextGoInAFieldValue(http2: Bool) async throws {
        try await Self.overBoth(http2) { server, manager async throws in
            let name = HTTPField.Name("Weird-Value")!
            var request = Request(url: server.url("/get"))
            request.headerFields[name] = Self.weirdAllowedFieldValue
            #expect(try await manager.responseOfAnyStatus(for: request).response.status == .ok)
            #expect(server.receivedRequests.first?.value(forHTTPHeaderField: "Weird-Value") == Self.weirdAllowedFieldValue)
            for byte in UInt8(128)...UInt8(255) {
                var request = Request(url: server.url("/get"))
                request.headerFields.append(HTTPField(name: name, lenientValue: Array(Self.weirdAllowedFieldValue.utf8) + [byte]))
                #expect(try await manager.responseOfAnyStatus(for: request).response.status == .ok, "byte \(byte)")
            }
            #expect(server.receivedRequests.count == 129)
        }
    }

    // AHC: testRejectsInvalidCharactersInHeaderFieldValues_http1, _http2 (a control byte other
    // than tab, which `HTTPField(name:lenientValue:)` keeps (it turns CR, LF and NUL into spaces
    // only), is refused before anything is sent: RFC 9110 5.5 allows none in a field value, and a
    // server or proxy may read one as the field's end)
    @Test(arguments: [false, true])
    func aControlByteInAFieldValueIsRefused(http2: Bool) async throws {
        try await Self.overBoth(http2) { server, manager async throws in
            let name = HTTPField.Name("Weird-Value")!
            let controls = (UInt8(0)...UInt8(31)).filter { $0 != 9 } + [127]
            for byte in controls {
                var request = Request(url: server.url("/get"))
                request.headerFields.append(HTTPField(name: name, lenientValue: Array(Self.weirdAllowedFieldValue.utf8) + [byte]))
                let value = request.headerFields[fields: name].first?.value
                if value?.utf8.contains(byte) != true {
                    // swift-http-types made it a space: what goes is legal.
                    #expect([0, 10, 13].contains(byte), "byte \(byte) was changed")
                    continue
                }
                let error = await #expect(throws: CourierError.self, "byte \(byte)") {
                    _ = try await manager.responseOfAnyStatus(for: request)
                }
                #expect(error?.code == .invalidRequest, "byte \(byte): \(String(describing: error))")
                #expect(error?.message.contains("Weird-Value") == true, "byte \(byte): \(String(describing: error))")
            }
            // The same in a trailer field (a body's trailer section, or HTTP/2's trailing HEADERS).
            var trailers = HTTPFields()
            trailers.append(HTTPField(name: name, lenientValue: Array("a".utf8) + [1]))
            let withTrailer = Request(method: .post, url: server.url("/post"), body: .data(Data("a".utf8), trailers: trailers))
            let error = await #expect(throws: CourierError.self) { _ = try await manager.responseOfAnyStatus(for: withTrailer) }
            #expect(error?.code == .invalidRequest, "\(String(describing: error))")
            #expect(error?.message.contains("trailer field Weird-Value holds the control character 0x01") == true, "\(String(describing: error))")
            #expect(server.receivedRequests.isEmpty, "\(server.receivedRequests.map { $0.headerFields })")
            #expect(server.connectionCount == 0, "refused before a connection was used")
        }
    }
}
