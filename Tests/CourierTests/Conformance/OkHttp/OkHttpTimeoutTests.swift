// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/WholeOperationTimeoutTest.kt and the
// timeout cases of okhttp/src/jvmTest/kotlin/okhttp3/CallTest.kt
// (https://github.com/square/okhttp), Copyright (C) 2018 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP2
import Testing

/// Twins of `WholeOperationTimeoutTest` (OkHttp's call timeout: the whole call, redirects and
/// body included) and of `CallTest`'s read timeouts, over real sockets.
///
/// OkHttp's call timeout is Courier's ``SessionConfiguration/timeoutIntervalForResource``; its
/// read timeout is ``SessionConfiguration/timeoutIntervalForRequest`` (or a request's own
/// ``RequestOptions/timeoutInterval``). OkHttp's timeouts of 250 ms are 0.5 s here; the delays
/// they are set against are as long as OkHttp's or longer, or never end (``ScriptedHTTPServer``'s
/// `.hold`), so that a timeout that does not fire fails rather than passes slowly.
/// OkHttp's `call.isCanceled()` after a call timeout is the task's state: completed, with
/// ``CourierError/Code/timedOut``.
@Suite("Conformance: OkHttp WholeOperationTimeoutTest and read timeouts")
struct OkHttpTimeoutTests {
    typealias Call = OkHttpCallTests

    static func ok(_ body: String) -> String { OkHttpConnectionReuseTests.ok(body) }

    /// OkHttp's call timeout of 250 ms.
    static func callTimeout(_ seconds: TimeInterval = 0.5) -> SessionConfiguration {
        var configuration = SessionConfiguration.default
        configuration.timeoutIntervalForResource = seconds
        return configuration
    }

    /// A body of `abc` whose next chunk never comes (OkHttp's `sleepingRequestBody`, whose sleep
    /// outlasts the timeout): ends only when the engine stops pulling it.
    static func sleepingBody() -> RequestBody {
        .stream(OkHttpServerTruncatesRequestTests.NeverEndingBody(), length: .unknown)
    }

    /// Runs a data task with a completion handler (OkHttp's `enqueue`) and returns the task and
    /// the error it completed with.
    static func enqueue(_ manager: HTTPSessionManager, _ request: Request) async -> (SessionTask, CourierError?) {
        let recorder = Recorder<CourierError?>()
        let task = manager.dataTask(with: request) { _, _, error in recorder.append(error) }
        task.resume()
        _ = await recorder.wait { !$0.isEmpty }
        #expect(recorder.count == 1)
        return (task, recorder.all.first ?? nil)
    }

    // OkHttp: defaultConfigIsNoTimeout
    @Test func defaultConfigIsSevenDays() {
        // OkHttp's calls have no whole-call timeout by default; Courier's exchanges have
        // URLSession's `timeoutIntervalForResource`, 7 days.
        #expect(SessionConfiguration.default.timeoutIntervalForResource == 7 * 24 * 3600)
    }

    // OkHttp: configureClientDefault
    @Test func configureClientDefault() {
        var configuration = SessionConfiguration.default
        configuration.timeoutIntervalForResource = 0.456
        #expect(NIOEngine.Configuration(configuration).resourceTimeout == 0.456)
    }

    // OkHttp: timeoutWritingRequest. MockWebServer answers once it has read the whole request,
    // so the server holds (the scripted server would answer a chunked request at its head: an
    // early answer, which a timeout ends with that answer, as
    // `HTTP1PoolTests.anEarlySuccessWhoseUploadStallsEndsWithTheSuccessAtTheTimeout` shows).
    @Test func timeoutWritingRequest() async throws {
        try await Call.overHTTP1(configuration: Self.callTimeout(), { _, _, _ in .hold }) { server, manager in
            let error = await Call.failure {
                try await manager.responseOfAnyStatus(for: Request(method: .post, url: server.baseURL, body: Self.sleepingBody()))
            }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
        }
    }

    // OkHttp: timeoutWritingRequestWithEnqueue (the server holds, as in timeoutWritingRequest)
    @Test func timeoutWritingRequestWithEnqueue() async throws {
        try await Call.overHTTP1(configuration: Self.callTimeout(), { _, _, _ in .hold }) { server, manager in
            let (task, error) = await Self.enqueue(manager, Request(method: .post, url: server.baseURL, body: Self.sleepingBody()))
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(task.state == .completed)
        }
    }

    // OkHttp: timeoutProcessing
    @Test func timeoutProcessing() async throws {
        try await Call.overHTTP1(configuration: Self.callTimeout(), { _, _, _ in .hold }) { server, manager in
            let error = await Call.failure { try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
        }
    }

    // OkHttp: timeoutProcessingWithEnqueue
    @Test func timeoutProcessingWithEnqueue() async throws {
        try await Call.overHTTP1(configuration: Self.callTimeout(), { _, _, _ in .hold }) { server, manager in
            let (task, error) = await Self.enqueue(manager, Request(url: server.baseURL))
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(task.state == .completed)
        }
    }

    /// A head announcing 64 KiB (OkHttp's `BIG_ENOUGH_BODY`) and 1 KiB of it; the rest never comes.
    static func stalledBody() -> ScriptedHTTPServer.Action {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: \(64 * 1024)\r\n\r\n" + String(repeating: "a", count: 1024)
        return .respondInTwoParts(Array(head.utf8), then: [], gate: OneShotGate())
    }

    // OkHttp: timeoutReadingResponse
    @Test func timeoutReadingResponse() async throws {
        // 20 s: the head must come first, and a full CI run held every test for about 36 s (7 s
        // left too little margin); the test waits the timeout out, so not 60 s.
        try await Call.overHTTP1(configuration: Self.callTimeout(20), { _, _, _ in Self.stalledBody() }) { server, manager in
            // The head is returned; reading the body then fails with the call's timeout.
            let response = try await manager.stream(Request(url: server.baseURL))
            #expect(response.response.status.code == 200)
            let error = await #expect(throws: CourierError.self) {
                for try await _ in response.body {}
            }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
        }
    }

    // OkHttp: timeoutReadingResponseWithEnqueue
    @Test func timeoutReadingResponseWithEnqueue() async throws {
        // 20 s, as in timeoutReadingResponse: the head must come first.
        try await Call.overHTTP1(configuration: Self.callTimeout(20), { _, _, _ in Self.stalledBody() }) { server, manager in
            let (task, error) = await Self.enqueue(manager, Request(url: server.baseURL))
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(task.response?.status.code == 200)
            #expect(task.state == .completed)
        }
    }

    // OkHttp: singleTimeoutForAllFollowUpRequests
    @Test func singleTimeoutForAllFollowUpRequests() async throws {
        // Five redirects each 0.3 s late: no hop outlasts the 1 s timeout, all of them do.
        let hops = ["/b", "/c", "/d", "/e", "/f"]
        try await Call.overHTTP1(configuration: Self.callTimeout(1), { _, _, head in
            let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            let next = path == "/a" ? hops.first : hops.firstIndex(of: path).flatMap { $0 + 1 < hops.count ? hops[$0 + 1] : nil }
            guard let next else { return .respond(Self.ok("done")) }
            return .respondAfter("HTTP/1.1 302 Found\r\nLocation: \(next)\r\nContent-Length: 0\r\n\r\n", delay: .milliseconds(300))
        }) { server, manager in
            let error = await Call.failure {
                try await manager.responseOfAnyStatus(for: Request(url: server.baseURL.appendingPathComponent("a")))
            }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
        }
    }

    // OkHttp: timeoutFollowingRedirectOnNewConnection
    @Test func timeoutFollowingRedirectOnNewConnection() async throws {
        try await ScriptedHTTPServer.with({ _, _, _ in .hold }) { other in
            let redirect = "HTTP/1.1 302 Found\r\nLocation: \(other.baseURL.absoluteString)\r\nContent-Length: 0\r\n\r\n"
            // A call timeout of 20 s, not OkHttp's 250 ms: in a full parallel run 0.5 s, and then
            // 3 s, passed before the redirected request reached the other server, which holds it,
            // and a full CI run held every test for about 36 s (10 s left too little margin). The
            // test waits the timeout out, so not 60 s.
            try await Call.overHTTP1(configuration: Self.callTimeout(20), { _, _, _ in .respond(redirect) }) { server, manager in
                let error = await Call.failure { try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)) }
                #expect(error?.code == .timedOut, "\(String(describing: error))")
                // The redirected request reached the other server (its loop may read it after
                // the client's timeout fired).
                #expect(await other.changes.wait { other.receivedHeads.count == 1 }, "\(other.receivedHeads)")
            }
        }
    }

    // OkHttp: noTimeout
    @Test func noTimeout() async throws {
        // The answer 0.25 s late and a body of 64 KiB, well inside a call timeout of 60 s (OkHttp's
        // 5 s ran out in CI, where a full parallel run held every test for about 36 s; a deadline
        // read in the wrong unit, or started from the wrong instant, still fails here).
        let body = String(repeating: "a", count: 64 * 1024)
        try await Call.overHTTP1(configuration: Self.callTimeout(60), { _, _, _ in .respondAfter(Self.ok(body), delay: .milliseconds(250)) }) {
            server, manager in
            let response = try await manager.responseOfAnyStatus(for: Call.post(server.baseURL, "abcdef"))
            #expect(Call.text(response) == body)
        }
    }

    // MARK: CallTest's read timeouts

    // OkHttp: readTimeoutFails (OkHttp's second route is a second connection here)
    @Test func readTimeoutFails() async throws {
        // The first connection never answers; a later one does. A connection whose request timed
        // out is not reused.
        // The timeout is the first request's own: the second, on a new connection, keeps the
        // session's 60 s (with 0.5 s it timed out in a full parallel run).
        try await Call.overHTTP1({ connection, _, _ in
            connection == 0 ? .hold : .respond(Self.ok("success!"))
        }) { server, manager in
            var first = Request(url: server.baseURL)
            first.options.timeoutInterval = 0.5
            let error = await Call.failure { try await manager.responseOfAnyStatus(for: first) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(Call.text(response) == "success!")
            #expect(server.connectionCount == 2)
        }
    }

    // OkHttp: timeoutsUpdatedOnReusedConnections
    @Test func timeoutsUpdatedOnReusedConnections() async throws {
        // The second answer's body stalls after its first byte; that request's own timeout of
        // 0.5 s applies on the connection the first one (timeout 60 s) left.
        try await Call.overHTTP1({ _, request, _ in
            request == 0
                ? .respond(Self.ok("abc"))
                : .respondInTwoParts(Array("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nd".utf8), then: [], gate: OneShotGate())
        }) { server, manager in
            let first = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(Call.text(first) == "abc")
            var second = Request(url: server.baseURL)
            second.options.timeoutInterval = 0.5
            let error = await Call.failure { try await manager.responseOfAnyStatus(for: second) }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(server.connectionCount == 1)
        }
    }

    // OkHttp: timeoutsUpdatedOnReusedConnections (the other way: a short timeout does not outlive
    // its request on the connection it leaves)
    @Test func shortTimeoutDoesNotOutliveItsRequest() async throws {
        try await Call.overHTTP1({ _, request, _ in
            request == 0 ? .respond(Self.ok("abc")) : .respondAfter(Self.ok("def"), delay: .milliseconds(20500))
        }) { server, manager in
            // 20 s for the first (which must succeed: a full CI run held every test for about
            // 36 s, and 7 s left too little margin), and the second's answer later than that, which
            // the test waits for, so not 60 s.
            var first = Request(url: server.baseURL)
            first.options.timeoutInterval = 20
            let text = Call.text(try await manager.responseOfAnyStatus(for: first))
            #expect(text == "abc")
            let second = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(Call.text(second) == "def")
            #expect(server.connectionCount == 1)
        }
    }

    // OkHttp: timeoutWritingRequest (with no call timeout: the idle timeout alone)
    @Test func stalledRequestBodyTimesOutWithTheIdleTimeout() async throws {
        // The body stalls after `abc` and the server waits for the rest: nothing moves either way
        // for longer than the request's idle timeout, which ends the exchange.
        try await Call.overHTTP1(configuration: Call.configuration(readTimeout: 0.5), { _, _, _ in .hold }) { server, manager in
            let error = await Call.failure {
                try await manager.responseOfAnyStatus(for: Request(method: .post, url: server.baseURL, body: Self.sleepingBody()))
            }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
        }
    }

    // OkHttp: connectionsNotReusedWithRedirectIfDiscardingResponseIsSlow (a body that never ends)
    @Test func redirectWhoseBodyNeverEndsIsFollowed() async throws {
        // OkHttp discards a redirect's body for 100 ms at most, then follows on a new connection;
        // Courier reads it for a second at most, half the idle timeout when that is shorter
        // (`NIOExchange.redirectDrainLimit`). A 302 whose chunked body stalls after one chunk: the
        // redirect's target is known from its head, and its body is of no use to anyone. Before,
        // the body was drained whole, and the idle timeout failed the request.
        let head = "HTTP/1.1 302 Found\r\nLocation: /b\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n"
        // An idle timeout of 60 s: it must not fire (a full CI run held every test for about 36 s,
        // and 7 s left too little margin); a body drained whole still fails the request by it.
        try await Call.overHTTP1(configuration: Call.configuration(readTimeout: 60), { connection, _, _ in
            connection == 0 ? .respondInTwoParts(Array(head.utf8), then: [], gate: OneShotGate()) : .respond(Self.ok("b"))
        }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(Call.text(response) == "b")
            #expect(server.connectionCount == 2, "the stalled redirect's connection was not reused")
        }
    }

    /// As ``redirectWhoseBodyNeverEndsIsFollowed()`` over HTTP/2: a 302 whose stream stays open
    /// with no body. The redirect is followed once the drain limit passes, the stalled stream is
    /// reset (CANCEL) and the connection carries the redirect's target.
    @Test func redirectWhoseStreamNeverEndsIsFollowedOverHTTP2() async throws {
        // 60 s, as over HTTP/1.1: the idle timeout must not fire.
        try await Call.overHTTP2(configuration: Call.configuration(readTimeout: 60), { _, path in
            path == "/a" ? .respondWithBlock([(":status", "302"), ("location", "/b")], endStream: false) : .respond("b")
        }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Request(url: Call.url(server, "/a")))
            #expect(Call.text(response) == "b")
            #expect(await server.changes.wait { server.resetsReceived == [.cancel] })
        }
    }
}
