// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/internal/http2/HttpOverHttp2Test.kt
// (https://github.com/square/okhttp), Copyright (C) 2013 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP2
import Testing

/// `HttpOverHttp2Test`'s cases of whole connections: SETTINGS, GOAWAY, PING, server push,
/// connections opened at once, proxies.
extension OkHttpHTTP2Tests {
    // MARK: SETTINGS

    // OkHttp: settingsLimitsMaxConcurrentStreams
    @Test func settingsLimitsMaxConcurrentStreams() async throws {
        // The first answer lowers SETTINGS_MAX_CONCURRENT_STREAMS to 2 on its connection; then
        // three requests at once: two streams there, the third on a new connection.
        try await Self.run({ _, path in
            path == "/settings" ? .respondAfterSettings([HTTP2Setting(parameter: .maxConcurrentStreams, value: 2)], body: "") : .hold(path)
        }) { server, manager async throws in
            #expect(Self.text(try await Self.get(server, manager, "/settings")) == "")
            try await withThrowingTaskGroup(of: String.self) { group in
                for path in ["/ABC", "/DEF", "/GHI"] {
                    group.addTask { Self.text(try await Self.get(server, manager, path)) }
                }
                #expect(await server.changes.wait { server.heldCount == 3 }, "held: \(server.heldCount)")
                #expect(server.connectionCount == 2)
                server.releaseHeld(andLater: true)
                var bodies = Set<String>()
                for try await body in group { bodies.insert(body) }
                #expect(bodies == ["/ABC", "/DEF", "/GHI"])
            }
            let connections = server.requests.map(\.connection)
            #expect(connections.filter { $0 == 0 }.count == 3, "the SETTINGS connection carried two more: \(connections)")
            #expect(connections.filter { $0 == 1 }.count == 1, "\(connections)")
        }
    }

    /// Not in `HttpOverHttp2Test`: a server whose SETTINGS_INITIAL_WINDOW_SIZE is 0 lets no
    /// request body go until its next SETTINGS raises it (RFC 9113 6.9.2: the change applies to
    /// every open stream's window); the upload then goes whole.
    @Test func anUploadWaitsForTheServersInitialWindowToOpen() async throws {
        let upload = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        try await Self.run(
            extraSettings: [HTTP2Setting(parameter: .initialWindowSize, value: 0)],
            atHead: { _ in .sendSettings([HTTP2Setting(parameter: .initialWindowSize, value: 65535)]) },
            { _, _ in .respond("uploaded") }
        ) { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(for: Request(method: .put, url: Self.url(server), body: .data(upload)))
            #expect(Self.text(response) == "uploaded")
            #expect(server.requests.first?.body == Array(upload))
        }
    }

    /// Not in `HttpOverHttp2Test`: a server that lowers SETTINGS_INITIAL_WINDOW_SIZE while an
    /// upload is under way. RFC 9113 6.9.2: every open stream's window shrinks by the difference,
    /// below zero if more was sent already, and the client sends no more until WINDOW_UPDATEs bring
    /// it above zero again; the upload then goes whole, in smaller steps.
    @Test(arguments: [false, true])
    func anUploadGoesOnAfterTheServerLowersItsInitialWindow(streamed: Bool) async throws {
        let size = 32 * 64 * 1024
        try await Self.run(
            atHead: { _ in .sendSettings([HTTP2Setting(parameter: .initialWindowSize, value: 1000)]) },
            { _, _ in .respond("uploaded") }
        ) { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(
                for: Request(method: .put, url: Self.url(server), body: Self.upload(streamed: streamed)))
            #expect(Self.text(response) == "uploaded")
            #expect(server.requests.first?.body.count == size)
            // A second upload starts with the lowered window.
            let again = try await manager.responseOfAnyStatus(
                for: Request(method: .put, url: Self.url(server), body: Self.upload(streamed: streamed, count: 4)))
            #expect(Self.text(again) == "uploaded")
            #expect(server.requests.last?.body.count == 4 * 64 * 1024)
            #expect(server.connectionCount == 1)
        }
    }

    /// Not in `HttpOverHttp2Test`: with SETTINGS_HEADER_TABLE_SIZE 0 the client's header
    /// compression uses no dynamic table, and many requests with the same fields are decoded
    /// whole (RFC 7541 4.2); the same when the server lowers it to 0 after the client's table
    /// has entries (the next block starts with a table size update, RFC 7541 4.2 and 6.3).
    @Test(arguments: [false, true])
    func aHeaderTableOfZeroIsHonoured(loweredLater: Bool) async throws {
        let zero = [HTTP2Setting(parameter: .headerTableSize, value: 0)]
        try await Self.run(extraSettings: loweredLater ? [] : zero, { index, _ in
            loweredLater && index == 2 ? .respondAfterSettings(zero, body: "\(index)") : .respond("\(index)")
        }) { server, manager async throws in
            for index in 0..<6 {
                var request = Request(url: Self.url(server, "/same"))
                request.headerFields[HTTPField.Name("X-Repeated")!] = "the same value each time"
                #expect(Self.text(try await manager.responseOfAnyStatus(for: request)) == "\(index)")
            }
            #expect(server.requests.count == 6)
            #expect(server.requests.allSatisfy { $0.value(of: "x-repeated") == "the same value each time" })
            #expect(server.connectionCount == 1)
        }
    }

    // MARK: GOAWAY

    // OkHttp: connectionNotReusedAfterShutdown
    @Test func connectionNotReusedAfterShutdown() async throws {
        try await Self.run({ index, _ in index == 0 ? .respondThenGoAway("ABC") : .respond(index == 1 ? "DEF" : "XXX") }) {
            server, manager async throws in
            #expect(Self.text(try await Self.get(server, manager)) == "ABC")
            #expect(Self.text(try await Self.get(server, manager)) == "DEF")
            #expect(server.requests.map(\.connection) == [0, 1])
        }
    }

    // OkHttp: connectionShutdownAfterHealthCheck
    @Test func connectionShutdownAfterItWasChosen() async throws {
        // OkHttp's GOAWAY comes between its health check and its request; here it comes as the
        // request arrives and names the one before it as the last processed: the request, sent
        // on a connection the client took as healthy, goes again on a new one.
        try await Self.run({ index, _ in index == 0 ? .respond("ABC") : index == 1 ? .goAway : .respond("DEF") }) { server, manager async throws in
            #expect(Self.text(try await Self.get(server, manager)) == "ABC")
            #expect(Self.text(try await Self.get(server, manager)) == "DEF")
            #expect(server.connectionCount == 2)
            #expect(server.requests.map(\.connection) == [0, 0, 1])
        }
    }

    // OkHttp: recoverFromConnectionNoNewStreamsOnFollowUp
    @Test func followUpsLeaveAConnectionThatTakesNoNewStreams() async throws {
        // OkHttp's first call gets a 401 and its authenticator waits while a second call's reset
        // makes the connection take no new exchange; the follow-up then goes on a new
        // connection, and so does the redirect after it. Here the connection stops taking
        // streams as the follow-up arrives (a GOAWAY naming the 401's stream as the last
        // processed): the follow-up goes again on a new connection. OkHttp's redirect then
        // reuses that connection; Courier's pool learned from the GOAWAY that left a stream
        // unprocessed that the host processes one stream a connection (nginx's
        // `keepalive_requests`, `ConnectionPoolStateMachine.Host.Learned`), so the redirect
        // opens a third.
        let challenge = Action.answer(status: 401, fields: [("www-authenticate", #"Basic realm="protected area""#)])
        let moved = Action.answer(status: 301, fields: [("location", "/foo")])
        let script: [Action] = [challenge, .goAway, moved, .respond("ABC")]
        try await Self.run({ index, _ in index < script.count ? script[index] : .respond("unexpected") }) { server, manager async throws in
            let url = URL(string: "https://username:password@localhost:\(server.port)/")!
            let response = try await manager.responseOfAnyStatus(for: Request(url: url))
            #expect(Self.text(response) == "ABC")
            let requests = server.requests
            #expect(requests.map(\.connection) == [0, 0, 1, 2])
            #expect(requests.map { $0.value(of: ":path") } == ["/", "/", "/", "/foo"])
            #expect(requests.dropFirst().allSatisfy { $0.value(of: "authorization") == "Basic dXNlcm5hbWU6cGFzc3dvcmQ=" })
        }
    }

    /// Not in `HttpOverHttp2Test`: a GOAWAY that leaves an upload unprocessed as its HEADERS
    /// arrive (part of its body already out, RFC 9113 6.8): a body in memory goes again whole on a
    /// new connection; a streamed one, whose first chunks are gone, fails.
    @Test(arguments: [false, true])
    func anUploadDroppedByGoAwayMidwayGoesAgainWhenItCan(streamed: Bool) async throws {
        let dropped = NIOLockedValueBox(false)
        try await Self.run(
            atHead: { _ in
                dropped.withLockedValue { done in
                    defer { done = true }
                    return done ? nil : .goAway
                }
            },
            { _, _ in .respond("uploaded") }
        ) { server, manager async throws in
            let request = Request(method: .put, url: Self.url(server), body: Self.upload(streamed: streamed))
            if streamed {
                let error = await OkHttpCallTests.failure { try await manager.responseOfAnyStatus(for: request) }
                #expect(error != nil)
            } else {
                #expect(Self.text(try await manager.responseOfAnyStatus(for: request)) == "uploaded")
                #expect(server.requests.map(\.body.count) == [32 * 64 * 1024])
                #expect(server.connectionCount == 2)
            }
        }
    }

    // OkHttp: responseHeadersAfterGoaway
    @Test func responseHeadersAfterGoaway() async throws {
        try await Self.run({ _, path in path == "/slow" ? .hold("ABC") : .respondThenGoAway("DEF") }) { server, manager async throws in
            async let slow = Self.get(server, manager, "/slow")
            #expect(await server.changes.wait { server.heldCount == 1 })
            #expect(Self.text(try await Self.get(server, manager, "/fast")) == "DEF")
            // The GOAWAY named both streams as processed: the held one is answered on the
            // draining connection.
            server.releaseHeld()
            #expect(Self.text(try await slow) == "ABC")
            #expect(server.connectionCount == 1)
        }
    }

    // OkHttp: shutdownAfterLateCoalescing
    @Test func shutdownWhileTwoCallsShareTheConnection() async throws {
        // OkHttp closes the server as its second call takes the connection, and expects both
        // calls to fail. Here the server closes each connection once a request arrives: both
        // fail (a new connection closed under the request is the server's answer), none hangs,
        // and the pool lets go of every connection.
        try await Self.run({ _, _ in .close }) { server, manager async throws in
            try await withThrowingTaskGroup(of: CourierError.Code?.self) { group in
                for _ in 0..<2 {
                    group.addTask { await OkHttpCallTests.failure { try await Self.get(server, manager) }?.code }
                }
                for try await code in group {
                    #expect(code == .connectionClosed, "\(String(describing: code))")
                }
            }
        }
    }

    // MARK: PING

    // OkHttp: pingsTransmitted
    @Test func pingsTransmittedOnAnIdleConnection() async throws {
        // OkHttp pings at its interval whatever the connection does. Courier pings a connection
        // with no stream open that heard nothing for `http2PingInterval`: after the answer, the
        // idle connection is pinged, answered, and kept for the next request. (At most five
        // PINGs a second: more, on a test kept idle for long by a loaded machine, pass the
        // server's limit on control frames, 200 in 30 s, and it ends the connection. A minute
        // for each answer, as in HTTP2PoolTests: with the default 10 s, a late answer on a loaded
        // machine closes the connection, and a full CI run held every test for about 36 s.)
        let configure: (inout SessionConfiguration) -> Void = {
            $0.http2PingInterval = 0.2
            $0.http2PingTimeout = 60
        }
        try await Self.run(configure: configure, { index, _ in .respond("ABC\(index)") }) { server, manager async throws in
            let response = try await Self.get(server, manager)
            #expect(Self.text(response) == "ABC0")
            #expect(response.metrics?.transactions.last?.networkProtocolName == "h2")
            #expect(await server.changes.wait { server.pingCount >= 1 }, "PINGs: \(server.pingCount)")
            #expect(Self.text(try await Self.get(server, manager)) == "ABC1")
            #expect(server.connectionCount == 1)
        }
    }

    // OkHttp: missingPongsFailsConnection
    // OkHttp: streamTimeoutDegradesConnectionAfterNoPong
    @Test func aServerThatStopsAnsweringFailsTheStreamByItsTimeout() async throws {
        // OkHttp's PINGs go unanswered and fail the call after about a second, before its read
        // timeout. Courier pings only idle connections: a stream waiting on a server that stopped
        // answering fails by its own timeout (`timeoutIntervalForRequest`), then its connection
        // takes no new stream, and the next request goes on a fresh one at once (OkHttp's second
        // call times out too, on the degraded connection).
        try await Self.run(
            configure: {
                $0.http2PingInterval = 0.1
                $0.http2PingTimeout = 0.2
            },
            { index, _ in index == 0 ? .hold("never") : .respond("fresh connection") }
        ) { server, manager async throws in
            // A Task, not `async let`: awaited inside `#expect(throws:)`'s closure, just below.
            let stalled = Task { try await Self.get(server, manager, timeout: 1) }
            #expect(await server.changes.wait { server.heldCount == 1 })
            server.stopAnswering()
            let error = await #expect(throws: CourierError.self) { try await stalled.value }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(Self.text(try await Self.get(server, manager)) == "fresh connection")
            #expect(server.connectionCount == 2)
        }
    }

    // MARK: Server push

    // OkHttp: serverSendsPushPromise_GET
    // OkHttp: serverSendsPushPromise_HEAD
    @Test func aPushPromiseIsAConnectionError() async throws {
        // OkHttp takes the pushed request (its client leaves push on) and ignores it. Courier
        // sends SETTINGS_ENABLE_PUSH 0, and RFC 9113 8.4: a client that disabled push treats a
        // PUSH_PROMISE as a connection error of type PROTOCOL_ERROR. The request fails; the next
        // goes on a new connection.
        try await Self.run({ index, _ in index == 0 ? .pushThenRespond(path: "/foo/bar", body: "ABCDE") : .respond("next") }) {
            server, manager async throws in
            let error = await OkHttpCallTests.failure { try await Self.get(server, manager, "/foo") }
            #expect(error != nil)
            #expect(Self.text(try await Self.get(server, manager)) == "next")
            #expect(server.connectionCount == 2)
        }
    }

    // MARK: Connections opened at once

    // OkHttp: concurrentHttp2ConnectionsDeduplicated
    @Test func concurrentRequestsToANewHostShareOneConnection() async throws {
        // OkHttp connects twice (it cannot know the protocol before the handshake) and keeps one.
        // Courier's pool waits for the first connection's protocol: requests made at once to a
        // new host open one HTTP/2 connection.
        try await Self.run({ _, path in .hold(path) }) { server, manager async throws in
            try await withThrowingTaskGroup(of: String.self) { group in
                for path in ["/call1", "/call2"] {
                    group.addTask { Self.text(try await Self.get(server, manager, path)) }
                }
                #expect(await server.changes.wait { server.heldCount == 2 })
                server.releaseHeld(andLater: true)
                var bodies = Set<String>()
                for try await body in group { bodies.insert(body) }
                #expect(bodies == ["/call1", "/call2"])
            }
            #expect(server.connectionCount == 1)
        }
    }

    // MARK: Proxies

    // OkHttp: http2WithProxy
    // OkHttp: proxyAuthenticateOnConnect
    @Test func http2ThroughAnAuthenticatingProxy() async throws {
        // OkHttp's proxy refuses the first CONNECT with 407, and its authenticator answers.
        // Courier sends the configured credentials with the first CONNECT (Basic, preemptively),
        // so one CONNECT does; the request inside the tunnel is HTTP/2, without them.
        let server = try await ScriptedHTTP2Server.start { _, _ in .respond("ABCDE") }
        let proxy = try await TestProxy.start(upstreamPort: server.port, credentials: ("courier", "secret"))
        do {
            try await HTTP2PoolTests().withManager(server, configure: {
                $0.proxy = .http(host: "127.0.0.1", port: proxy.port, username: "courier", password: "secret")
            }) { manager async throws in
                let response = try await manager.responseOfAnyStatus(for: Request(url: Self.url(server, "/foo")))
                #expect(Self.text(response) == "ABCDE")
                #expect(response.response.status.code == 200)
                #expect(response.metrics?.transactions.last?.networkProtocolName == "h2")
                #expect(proxy.connectTargets == ["localhost:\(server.port)"])
                #expect(proxy.proxyAuthorizations.last == "Basic Y291cmllcjpzZWNyZXQ=")
                let request = try #require(server.requests.first)
                #expect(request.value(of: ":path") == "/foo")
                #expect(request.value(of: ":authority") == "localhost:\(server.port)")
                #expect(request.value(of: "proxy-authorization") == nil)
            }
        } catch {
            try? await proxy.shutdown()
            throw error
        }
        try await proxy.shutdown()
    }
}
