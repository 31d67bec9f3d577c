// Ported from Go's src/net/http/transport_test.go (the go1.6 tree, commit 01a5a2f7,
// https://go.dev/), Copyright 2011 The Go Authors. All rights reserved. Use of this source code
// is governed by a BSD-style licence.

import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Synchronization
import Testing

@testable import Courier

/// Go's client transport tests of connection reuse (go1.6's `net/http/transport_test.go`):
/// `TestTransportKeepAlives`, `TestTransportConnectionCloseOnResponse`,
/// `TestTransportConnectionCloseOnRequest`, `TestTransportIdleCacheKeys`,
/// `TestTransportReadToEndReusesConn`, `TestTransportMaxPerHostIdleConns`,
/// `TestTransportHeadResponses`, `TestTransportHeadChunkedResponse`,
/// `TestTransportServerClosingUnexpectedly` and `TestRetryIdempotentRequestsOnError`, over real loopback sockets through a
/// ``HTTPSessionManager`` and its ``NIOEngine``.
///
/// Go's handlers are played by a ``ScriptedHTTPServer``, which answers as Go's server would and
/// counts connections: Go's `hostPortHandler` answers with the client's address, so that two
/// equal bodies mean one connection; here it answers with the server's number for the connection
/// (``hostPort(_:_:_:)``). Go's `connSet.check` (every connection closed once the transport's idle
/// ones are) is the end of ``withTransport(configuration:_:_:)``: once the manager is invalidated,
/// every connection the server accepted has closed.
///
/// Where Courier differs on purpose:
/// - Courier has no `DisableKeepAlives`: a ``SessionConfiguration/connectionIdleTimeout`` of 0
///   keeps no connection idle, so each request has one of its own, but the request does not say
///   `Connection: close` (Go's does; `TestTransportConnectionCloseOnRequestDisableKeepAlive` has
///   no twin). A request that says it itself is honoured, as in Go.
/// - Courier has no `CloseIdleConnections` and no cap on idle connections
///   (`MaxIdleConnsPerHost`): a manager's idle connections close with its invalidation or their
///   idle timeout, and ``SessionConfiguration/httpMaximumConnectionsPerHost`` caps every
///   connection to a host, idle or busy. `TestTransportMaxPerHostIdleConns`' twin holds that cap
///   with three requests at once: two connections, the third request waits for one of them.
/// - Go's idle cache keys (`|http|127.0.0.1:port`) are the pool's hosts here
///   (``ConnectionPool/hostCount``, ``ConnectionPool/key(for:)``).
@Suite("Conformance: Go transport keep-alive tests")
struct GoTransportKeepAliveTests {
    /// Go's `hostPortHandler`: the body names the connection (Go: the client's address);
    /// `X-Saw-Close` says whether the request said `Connection: close`; with `?close=true`, or
    /// when the request said `Connection: close`, the answer says `Connection: close` and the
    /// connection closes after it (as Go's server does).
    static func hostPort(_ connection: Int, _ request: Int, _ head: String) -> ScriptedHTTPServer.Action {
        let lines = head.split(separator: "\r\n").map { $0.lowercased() }
        let sawClose = lines.dropFirst().contains { $0.hasPrefix("connection:") && $0.contains("close") }
        let askedToClose = lines.first?.contains("close=true") == true
        let closes = sawClose || askedToClose
        let body = "connection \(connection)"
        var fields = "Content-Length: \(body.utf8.count)\r\nX-Saw-Close: \(sawClose)\r\n"
        if closes { fields += "Connection: close\r\n" }
        return .respond("HTTP/1.1 200 OK\r\n\(fields)\r\n\(body)", thenClose: closes)
    }

    /// A `200 OK` with `body` and its length, kept alive.
    static func ok(_ body: String, _ fields: String = "") -> String {
        "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\n\(fields)\r\n\(body)"
    }

    /// Runs `body` with a server answering as `script` says and a manager; then invalidates the
    /// manager and checks that every connection the server accepted closed (Go's `connSet.check`
    /// after `CloseIdleConnections`).
    static func withTransport(
        configuration: SessionConfiguration = .default,
        _ script: @escaping ScriptedHTTPServer.Script,
        _ body: (ScriptedHTTPServer, HTTPSessionManager) async throws -> Void
    ) async throws {
        try await ScriptedHTTPServer.with(script) { server in
            // `withManager` invalidates the manager when the body ends, thrown or not.
            try await withManager(baseURL: nil, configuration: configuration) { manager in try await body(server, manager) }
            #expect(
                await server.changes.wait { server.closedConnectionCount == server.connectionCount },
                "\(server.connectionCount - server.closedConnectionCount) of \(server.connectionCount) connections left open")
        }
    }

    /// Go's `fetch`: a GET of `url` (with `Connection: close` when `close`), its body read whole.
    static func fetch(_ manager: HTTPSessionManager, _ url: URL, close: Bool = false) async throws -> DataResponse<Data> {
        var request = Request(url: url)
        if close { request.headerFields[.connection] = "close" }
        return try await manager.responseOfAnyStatus(for: request)
    }

    static func text(_ response: DataResponse<Data>) -> String { String(decoding: response.value, as: UTF8.self) }

    static func reused(_ response: DataResponse<Data>) -> Bool? { response.metrics?.transactions.last?.isReusedConnection }

    // MARK: Keep-alive and Connection: close

    // Go: TestTransportKeepAlives
    @Test(arguments: [false, true])
    func keepAlives(disableKeepAlives: Bool) async throws {
        // Go's DisableKeepAlives is an idle timeout of 0 here: no connection is kept idle.
        var configuration = SessionConfiguration.default
        if disableKeepAlives { configuration.connectionIdleTimeout = 0 }
        try await Self.withTransport(configuration: configuration, Self.hostPort) { server, manager in
            let first = try await Self.fetch(manager, server.baseURL)
            if disableKeepAlives {
                // The connection closes once the response is in, before the next request.
                #expect(await server.changes.wait { server.closedConnectionCount == 1 }, "the connection was kept")
            }
            let second = try await Self.fetch(manager, server.baseURL)
            #expect(Self.text(first) == "connection 0")
            #expect(Self.text(second) == (disableKeepAlives ? "connection 1" : "connection 0"))
            #expect(Self.reused(second) == !disableKeepAlives)
            #expect(server.connectionCount == (disableKeepAlives ? 2 : 1))
        }
    }

    // Go: TestTransportConnectionCloseOnResponse
    @Test(arguments: [false, true])
    func connectionCloseOnResponse(connectionClose: Bool) async throws {
        try await Self.withTransport(Self.hostPort) { server, manager in
            let url = URL(string: "/?close=\(connectionClose)", relativeTo: server.baseURL)!.absoluteURL
            let first = try await Self.fetch(manager, url)
            let second = try await Self.fetch(manager, url)
            #expect(first.response.headerFields[.connection] == (connectionClose ? "close" : nil))
            #expect(Self.text(first) == "connection 0")
            #expect(Self.text(second) == (connectionClose ? "connection 1" : "connection 0"))
            #expect(server.connectionCount == (connectionClose ? 2 : 1))
        }
    }

    // Go: TestTransportConnectionCloseOnRequest
    @Test(arguments: [false, true])
    func connectionCloseOnRequest(connectionClose: Bool) async throws {
        try await Self.withTransport(Self.hostPort) { server, manager in
            let first = try await Self.fetch(manager, server.baseURL, close: connectionClose)
            let second = try await Self.fetch(manager, server.baseURL, close: connectionClose)
            for response in [first, second] {
                #expect(response.response.headerFields[HTTPField.Name("X-Saw-Close")!] == "\(connectionClose)")
            }
            #expect(Self.text(first) == "connection 0")
            #expect(Self.text(second) == (connectionClose ? "connection 1" : "connection 0"))
            #expect(Self.reused(second) == !connectionClose)
            #expect(server.connectionCount == (connectionClose ? 2 : 1))
        }
    }

    // MARK: The pool's idle connections

    // Go: TestTransportIdleCacheKeys
    @Test func idleConnectionsAreKeptByHost() async throws {
        try await ScriptedHTTPServer.with(Self.hostPort) { server in
            let manager = HTTPSessionManager(baseURL: nil, configuration: .default)
            manager.completionQueue = TestQueues.completion
            do {
                let pool = try #require((manager.engine as? NIOEngine)?.pool)
                #expect(pool.hostCount == 0)
                _ = try await Self.fetch(manager, server.baseURL)
                // Go: one key, `|http|127.0.0.1:port`.
                let key = try #require(pool.key(for: server.baseURL))
                #expect(key.description == "http://127.0.0.1:\(server.port)")
                #expect(pool.hostCount == 1)
                #expect(pool.liveConnections.load(ordering: .relaxed) == 1)
                // Go's CloseIdleConnections: the manager's invalidation.
                await manager.invalidate(cancelingTasks: false)
                #expect(await server.changes.wait { server.closedConnectionCount == 1 }, "the idle connection stayed open")
                #expect(await eventually { pool.hostCount == 0 }, "hosts left: \(pool.hostCount)")
                // The connection's object is freed after the pool let go of it.
                #expect(await eventually { pool.liveConnections.load(ordering: .relaxed) == 0 }, "a closed connection was not freed")
            } catch {
                await manager.invalidate(cancelingTasks: true)
                throw error
            }
        }
    }

    // Go: TestTransportMaxPerHostIdleConns (Courier caps every connection to a host, not the idle
    // ones: see the suite's comment)
    @Test func connectionsPerHostAreCappedAndTheWaitingRequestReusesOne() async throws {
        let gates = [OneShotGate(), OneShotGate()]
        var configuration = SessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = 2
        try await Self.withTransport(configuration: configuration, { connection, request, _ in
            // Each connection's first answer waits for its gate; the rest come at once. (A third
            // connection, which the cap forbids, answers at once too: the count below then fails
            // the test, where indexing the gates would have stopped the whole test process.)
            request == 0 && connection < gates.count
                ? .respondWhenOpen(Self.ok("res\(connection + 1)"), gate: gates[connection]) : .respond(Self.ok("res3"))
        }) { server, manager in
            let pool = try #require((manager.engine as? NIOEngine)?.pool)
            let bodies = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<3 { group.addTask { Self.text(try await Self.fetch(manager, server.baseURL)) } }
                #expect(await server.changes.wait { server.receivedHeads.count == 2 })
                #expect(await eventually { pool.waitingHopCount == 1 }, "the third request waits for one of the two connections")
                #expect(pool.liveConnections.load(ordering: .relaxed) == 2)
                gates[0].open()
                #expect(await server.changes.wait { server.receivedHeads.count == 3 })
                gates[1].open()
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(bodies.sorted() == ["res1", "res2", "res3"])
            #expect(server.connectionCount == 2)
            // Both connections are idle now, and kept: Go's two idle connections.
            #expect(pool.liveConnections.load(ordering: .relaxed) == 2)
            #expect(server.closedConnectionCount == 0)
        }
    }

    // MARK: Bodies read to the end, or not

    // Go: TestTransportReadToEndReusesConn
    @Test(arguments: ["content-length", "chunked"])
    func aBodyReadToTheEndGivesItsConnectionBack(_ framing: String) async throws {
        let message = "foobar"
        let answer =
            framing == "chunked"
            ? "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n\(message)\r\n0\r\n\r\n"
            : Self.ok(message)
        try await Self.withTransport({ _, _, _ in .respond(answer) }) { server, manager in
            for _ in 0..<3 {
                // Streamed, read to its end and no further: nothing else gives the connection back.
                let response = try await manager.stream(Request(url: server.baseURL))
                #expect(response.response.headerFields[.contentLength] == (framing == "chunked" ? nil : "6"))
                var received = ByteBuffer()
                for try await var chunk in response.body { received.writeBuffer(&chunk) }
                #expect(String(buffer: received) == message)
            }
            #expect(server.connectionCount == 1, "the server saw \(server.connectionCount) connections")
        }
    }

    // Go: TestTransportGzip's first half (a large body read in part, then closed), without gzip:
    // the connection of a body left half-read is not used for the next request.
    @Test(arguments: ["content-length", "chunked"])
    func aBodyLeftHalfReadDoesNotGiveItsConnectionBack(_ framing: String) async throws {
        let large = String(repeating: "a", count: 4 << 20)
        let head =
            framing == "chunked"
            ? "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(String(large.utf8.count, radix: 16))\r\n\(large)\r\n0\r\n\r\n"
            : Self.ok(large)
        try await Self.withTransport({ _, _, requestHead in
            requestHead.hasPrefix("GET /large ") ? .respond(head) : .respond(Self.ok("small"))
        }) { server, manager in
            let response = try await manager.stream(Request(url: server.baseURL.appendingPathComponent("large")))
            var read = 0
            for try await chunk in response.body {
                read += chunk.readableBytes
                break  // Go: res.Body.Close() after a few bytes
            }
            #expect(read > 0 && read < large.utf8.count)
            let small = try await Self.fetch(manager, server.baseURL.appendingPathComponent("small"))
            #expect(Self.text(small) == "small")
            #expect(Self.reused(small) == false)
            #expect(server.connectionCount == 2)
        }
    }

    // MARK: HEAD

    // Go: TestTransportHeadResponses
    @Test func headResponsesWithAContentLengthHaveNoBody() async throws {
        try await Self.withTransport({ _, _, head in
            head.hasPrefix("HEAD ") ? .respond("HTTP/1.1 200 OK\r\nContent-Length: 123\r\n\r\n") : .respond(Self.ok("not a HEAD"))
        }) { server, manager in
            for _ in 0..<2 {
                let response = try await manager.responseOfAnyStatus(for: Request(method: .head, url: server.baseURL))
                #expect(response.response.headerFields[.contentLength] == "123")
                #expect(response.value.isEmpty, "a bogus body: \(Self.text(response))")
            }
            #expect(server.receivedHeads.allSatisfy { $0.hasPrefix("HEAD ") })
            #expect(server.connectionCount == 1)
        }
    }

    // Go: TestTransportHeadChunkedResponse
    @Test func headResponsesSayingChunkedHaveNoBody() async throws {
        try await Self.withTransport({ connection, _, head in
            head.hasPrefix("HEAD ")
                ? .respond("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Client-Connection: \(connection)\r\n\r\n")
                : .respond(Self.ok("not a HEAD"))
        }) { server, manager in
            let first = try await manager.responseOfAnyStatus(for: Request(method: .head, url: server.baseURL))
            let second = try await manager.responseOfAnyStatus(for: Request(method: .head, url: server.baseURL))
            let name = HTTPField.Name("X-Client-Connection")!
            #expect(first.response.headerFields[name] == "0")
            #expect(second.response.headerFields[name] == "0")
            #expect(first.value.isEmpty && second.value.isEmpty)
            #expect(Self.reused(second) == true)
            #expect(server.connectionCount == 1)
        }
    }

    // MARK: A server closing idle connections

    // Go: TestTransportServerClosingUnexpectedly. Go's server closes every client connection while
    // they are idle (`CloseClientConnections`); here it closes the connection once the second
    // response is written, saying nothing of it. The next request goes on a new connection, not
    // failing: when the close is seen before (`waitForClose`), and when it is not.
    @Test(arguments: [true, false])
    func aServerClosingAnIdleConnection(waitForClose: Bool) async throws {
        try await Self.withTransport({ connection, request, _ in
            .respond(Self.ok("connection \(connection)"), thenClose: connection == 0 && request == 1)
        }) { server, manager in
            let first = try await Self.fetch(manager, server.baseURL)
            let second = try await Self.fetch(manager, server.baseURL)
            #expect(Self.text(first) == Self.text(second))
            if waitForClose {
                #expect(await server.changes.wait { server.closedConnectionCount == 1 })
            }
            let third = try await Self.fetch(manager, server.baseURL)
            #expect(Self.text(third) == "connection 1")
            #expect(server.connectionCount == 2)
        }
    }

    /// Answers the first request, closes the connection without an answer when the next one
    /// reaches it, and answers on a new connection.
    static let closesTheSecondRequest: ScriptedHTTPServer.Script = { connection, request, _ in
        switch (connection, request) {
        case (0, 0): .respond(Self.ok("first"))
        case (0, _): .close
        default: .respond(Self.ok("again"))
        }
    }

    // Go: TestRetryIdempotentRequestsOnError (and the race TestTransportServerClosingUnexpectedly
    // retries around): a kept-alive connection closes, without an answer, as the next request
    // reaches it. An idempotent request is sent again, on a new connection.
    @Test(arguments: ["GET", "HEAD", "PUT", "DELETE"])
    func anIdempotentRequestOnAConnectionClosedUnderItIsSentAgain(_ method: String) async throws {
        try await Self.withTransport(Self.closesTheSecondRequest) { server, manager in
            _ = try await Self.fetch(manager, server.baseURL)
            let body: RequestBody = method == "PUT" ? .data(Data("put".utf8)) : .empty
            let request = Request(method: HTTPRequest.Method(method)!, url: server.baseURL, body: body)
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status.code == 200)
            #expect(server.receivedHeads.count == 3)
            #expect(server.receivedHeads.dropFirst().allSatisfy { $0.hasPrefix("\(method) ") })
            #expect(server.connectionCount == 2)
        }
    }

    // Go: TestRetryIdempotentRequestsOnError's rule, the other way: a request is sent again only
    // when idempotent. A POST written on a reused connection that closes without an answer may
    // have been processed: it fails, and is not sent again.
    @Test func aPostOnAConnectionClosedUnderItFails() async throws {
        try await Self.withTransport(Self.closesTheSecondRequest) { server, manager in
            _ = try await Self.fetch(manager, server.baseURL)
            let post = Request(method: .post, url: server.baseURL, body: .data(Data("post".utf8)))
            let error = await #expect(throws: CourierError.self) { try await manager.responseOfAnyStatus(for: post) }
            #expect(error != nil)
            #expect(server.receivedHeads.count == 2)
            #expect(server.connectionCount == 1)
        }
    }
}
