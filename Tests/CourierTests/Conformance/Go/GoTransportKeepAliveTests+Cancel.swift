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

/// Go's transport tests of cancellation, timeouts, request bodies that fail or lie about their
/// length, many requests at once, and a proxy (go1.6's `transport_test.go`).
///
/// Go's `CancelRequest` and `Request.Cancel` are a task's ``SessionTask/cancel()`` (or the calling
/// task's cancellation) here; Go's `ResponseHeaderTimeout` is a request's
/// ``RequestOptions/timeoutInterval`` (the longest wait for the next bytes). Where Go sleeps
/// before it cancels, these tests cancel on an event: the server's receiving the request, the
/// first bytes of the body. `TestTransportCancelRequestInDial`'s twin is OkHttp's
/// `cancelDuringHttpConnect` one (`OkHttpCallCancelTests`), which cancels in the same place.
extension GoTransportKeepAliveTests {
    // MARK: Cancellation

    // Go: TestTransportCancelRequest and TestCancelRequestWithChannel. A body under way, its
    // first part read, is cancelled: the rest fails with the cancellation, and what came stays.
    @Test func cancellingMidBodyFailsTheRestOfIt() async throws {
        let gate = OneShotGate()
        try await Self.withTransport({ _, _, _ in
            .respondInTwoParts(Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nHello".utf8), then: Array("World".utf8), gate: gate)
        }) { server, manager in
            let response = try await manager.stream(Request(url: server.baseURL))
            var iterator = response.body.makeAsyncIterator()
            var received = ByteBuffer()
            while received.readableBytes < 5, var chunk = try await iterator.next() { received.writeBuffer(&chunk) }
            #expect(String(buffer: received) == "Hello")
            response.task.cancel()
            let error = await #expect(throws: CourierError.self) {
                while try await iterator.next() != nil {}
            }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            #expect(await server.changes.wait { server.closedConnectionCount == 1 }, "the cancelled exchange's connection stayed open")
            gate.open()
        }
    }

    // Go: TestTransportCancelBeforeResponseHeaders. Cancelled once the server has the request,
    // before any answer: the request fails as cancelled.
    @Test func cancellingBeforeTheAnswerFailsAsCancelled() async throws {
        try await Self.withTransport({ _, _, _ in .hold }) { server, manager in
            // The caller to cancel, as Go's test cancels its request: unstructured so that the test
            // cancels it, and awaited below, so it ends with the test.
            let request = Task { try await Self.fetch(manager, server.baseURL) }
            #expect(await server.changes.wait { server.receivedHeads.count == 1 })
            request.cancel()
            let error = await #expect(throws: CourierError.self) { try await request.value }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            #expect(await server.changes.wait { server.closedConnectionCount == 1 }, "the cancelled exchange's connection stayed open")
        }
    }

    // Go: TestCancelRequestWithChannelBeforeDo. A request whose task is cancelled before it is
    // made fails as cancelled.
    @Test func aRequestCancelledBeforeItIsMadeFails() async throws {
        try await Self.withTransport({ _, _, _ in .respond(Self.ok("late")) }) { server, manager in
            // A caller already cancelled when it makes the request; awaited below, so it ends with
            // the test.
            let request = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await Self.fetch(manager, server.baseURL)
            }
            let error = await #expect(throws: CourierError.self) { try await request.value }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
        }
    }

    // Go: TestTransportResponseCancelRace. Cancelling a task that has ended, its body read and
    // its connection given back, does not touch the connection: the next request reuses it.
    @Test func cancellingAFinishedTaskLeavesItsConnectionAlone() async throws {
        let body = String(repeating: "\0", count: 1024)
        try await Self.withTransport({ _, _, _ in .respond(Self.ok(body)) }) { server, manager in
            let response = try await manager.stream(Request(url: server.baseURL))
            var length = 0
            for try await chunk in response.body { length += chunk.readableBytes }
            #expect(length == 1024)
            response.task.cancel()
            let next = try await Self.fetch(manager, server.baseURL)
            #expect(next.value.count == 1024)
            #expect(Self.reused(next) == true)
            #expect(server.connectionCount == 1)
        }
    }

    // MARK: Timeouts

    // Go: TestTransportResponseHeaderTimeout. A fast answer, an answer that never comes (the
    // request's own timeout, short, fails it), then a fast answer again, on a new connection.
    @Test func aTimedOutRequestDoesNotSpoilTheNext() async throws {
        try await Self.withTransport({ _, _, head in
            head.hasPrefix("GET /slow ") ? .hold : .respond(Self.ok("fast"))
        }) { server, manager in
            let fast = try await Self.fetch(manager, server.baseURL.appendingPathComponent("fast"))
            #expect(Self.text(fast) == "fast")
            var slow = Request(url: server.baseURL.appendingPathComponent("slow"))
            // Only this request has a short timeout: it must fire, and no other does.
            slow.options.timeoutInterval = 0.25
            let error = await #expect(throws: CourierError.self) { try await manager.responseOfAnyStatus(for: slow) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            let fastAgain = try await Self.fetch(manager, server.baseURL.appendingPathComponent("fast"))
            #expect(Self.text(fastAgain) == "fast")
            // The slow request's head went out before its timeout's clock started; the server's
            // loop may read it after the timeout fired.
            #expect(await server.changes.wait { server.receivedHeads.count == 3 }, "\(server.receivedHeads)")
            #expect(server.connectionCount == 2)
        }
    }

    // MARK: Request bodies

    /// A request body of `chunks` that throws `failure` after them, if any.
    static func body(_ chunks: [String], failingWith failure: (any Error)? = nil) -> AsyncThrowingStream<ByteBuffer, any Error> {
        AsyncThrowingStream { continuation in
            for chunk in chunks { continuation.yield(ByteBuffer(string: chunk)) }
            continuation.finish(throwing: failure)
        }
    }

    struct FakeError: Error, CustomStringConvertible {
        var description: String { "fake error" }
    }

    // Go: TestTransportClosesBodyOnError. A body that fails after 1 MiB fails the request with
    // its error; the server never gets the body whole (the connection closes under it).
    @Test func aRequestBodyThatFailsFailsTheRequest() async throws {
        var configuration = SessionConfiguration.default
        configuration.expectContinueThreshold = nil
        try await Self.withTransport(configuration: configuration, { _, _, _ in .respond(Self.ok("read")) }) { server, manager in
            let megabyte = String(repeating: "x", count: 1 << 20)
            let post = Request(
                method: .post, url: server.baseURL,
                body: .stream(Self.body([megabyte], failingWith: FakeError()), length: .known(2 << 20)))
            let error = await #expect(throws: CourierError.self) { try await manager.responseOfAnyStatus(for: post) }
            #expect(error?.code == .bodyReadFailed, "\(String(describing: error))")
            #expect("\(String(describing: error))".contains("fake error"), "\(String(describing: error))")
            #expect(await server.changes.wait { server.closedConnectionCount == 1 })
            #expect(server.receivedBodyLengths.isEmpty)
        }
    }

    // Go: TestTransportPersistConnLeakShortBody. A body longer than its announced length fails
    // the request, each time, and leaves no connection behind.
    @Test func aRequestBodyLongerThanItsLengthFails() async throws {
        try await Self.withTransport({ _, _, _ in .respond(Self.ok("read")) }) { server, manager in
            for _ in 0..<5 {
                let post = Request(method: .post, url: server.baseURL, body: .stream(Self.body(["Hello"]), length: .known(3)))
                let error = await #expect(throws: CourierError.self) { try await manager.responseOfAnyStatus(for: post) }
                #expect(error != nil)
            }
            // Whatever the server read of them, none of the connections is kept.
            #expect(await server.changes.wait { server.closedConnectionCount == server.connectionCount })
            let pool = try #require((manager.engine as? NIOEngine)?.pool)
            #expect(await eventually { pool.liveConnections.load(ordering: .relaxed) == 0 }, "a connection was kept")
        }
    }

    // Go: TestTransportPrefersResponseOverWriteError. The server refuses a 2 MiB PUT with a 400
    // as soon as its head is in, reading none of the body: the 400 is the answer, each time, not
    // the failed write. No `Expect: 100-continue`, so that the body is under way.
    @Test func aRefusalWinsOverTheFailedUpload() async throws {
        var configuration = SessionConfiguration.default
        configuration.expectContinueThreshold = nil
        let refusal = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        try await Self.withTransport(configuration: configuration, { _, _, _ in .respondWithoutReadingBody(refusal) }) { server, manager in
            let body = Data(repeating: UInt8(ascii: "a"), count: 2 << 20)
            for _ in 0..<5 {
                let response = try await manager.responseOfAnyStatus(for: Request(method: .put, url: server.baseURL, body: .data(body)))
                #expect(response.response.status.code == 400)
            }
            #expect(server.connectionCount == 5)
        }
    }

    // MARK: Many requests at once

    // Go: TestTransportConcurrency. Fifty requests at once, each answered with its own query:
    // every body is its own request's, over at most the per-host limit of connections.
    @Test func concurrentRequestsGetTheirOwnAnswers() async throws {
        try await Self.withTransport({ _, _, head in
            let target = head.split(separator: " ").dropFirst().first ?? ""
            let echo = target.split(separator: "=").last.map(String.init) ?? ""
            return .respond(Self.ok(echo))
        }) { server, manager in
            let bodies = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for number in 0..<50 {
                    group.addTask {
                        let url = URL(string: "/?echo=request-\(number)", relativeTo: server.baseURL)!.absoluteURL
                        return (number, Self.text(try await Self.fetch(manager, url)))
                    }
                }
                return try await group.reduce(into: [Int: String]()) { $0[$1.0] = $1.1 }
            }
            #expect((0..<50).allSatisfy { bodies[$0] == "request-\($0)" })
            #expect(server.connectionCount <= SessionConfiguration.default.httpMaximumConnectionsPerHost)
        }
    }

    // MARK: Proxies

    // Go: TestTransportProxy. A request for an `http` URL goes to the proxy, in absolute form.
    @Test func anHTTPProxyGetsTheRequestInAbsoluteForm() async throws {
        let target = URL(string: "http://127.0.0.1:\(closedPort())/")!
        try await ScriptedHTTPServer.with({ _, _, _ in .respond(Self.ok("")) }) { proxy in
            var configuration = SessionConfiguration.default
            configuration.proxy = .http(host: "127.0.0.1", port: proxy.port)
            try await withManager(baseURL: nil, configuration: configuration) { manager in
                _ = try await manager.responseOfAnyStatus(for: Request(method: .head, url: target))
                #expect(proxy.receivedHeads.first?.hasPrefix("HEAD \(target.absoluteString) HTTP/1.1\r\n") == true, "\(proxy.receivedHeads)")
            }
        }
    }
}
