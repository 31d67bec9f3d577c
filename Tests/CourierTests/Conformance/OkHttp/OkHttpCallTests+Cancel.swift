// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/CallTest.kt
// (https://github.com/square/okhttp), Copyright (C) 2013 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// `CallTest`'s cancellation cases, over real sockets. OkHttp's `Call.cancel()` is
/// ``SessionTask/cancel()``, its `enqueue` a data task with a completion handler (which must run
/// exactly once), its `execute()` the async API, cancelled through the calling task or the task.
///
/// The moment OkHttp cancels at (an event listener's `requestHeadersStart`, a dispatcher that
/// sees the request) is an event here too: the server's receipt of the head, or a hook.
@Suite("Conformance: OkHttp CallTest cancellation")
struct OkHttpCallCancelTests {
    typealias Call = OkHttpCallTests

    static func ok(_ body: String) -> String { OkHttpConnectionReuseTests.ok(body) }

    /// A data task for `request` whose completions (error, or nil for a success) go to the
    /// returned recorder; its body is taken as bytes (OkHttp's), not the manager's JSON.
    static func task(_ manager: HTTPSessionManager, _ request: Request) -> (SessionTask, Recorder<CourierError?>) {
        manager.responseSerializer = HTTPResponseSerializer()
        let recorder = Recorder<CourierError?>()
        let task = manager.dataTask(with: request) { _, _, error in recorder.append(error) }
        return (task, recorder)
    }

    // OkHttp: canceledBeforeExecute
    @Test func canceledBeforeExecute() async throws {
        try await Call.overHTTP1({ _, _, _ in .respond(Self.ok("a")) }) { server, manager in
            let (task, completions) = Self.task(manager, Request(url: server.baseURL))
            task.cancel()
            task.resume()
            #expect(await completions.wait { !$0.isEmpty })
            #expect(completions.all.first??.code == .cancelled, "\(completions.all)")
            #expect(task.state == .completed)
            #expect(server.connectionCount == 0)
        }
    }

    /// A resolver that never answers, and says when it was asked.
    struct HangingResolver: HostNameResolver {
        let asked = Recorder<String>()
        func addresses(of host: String) async throws -> [String] {
            self.asked.append(host)
            try await untilCancelled()
        }
    }

    // OkHttp: cancelDuringHttpConnect (the connection waits for its name's lookup); Go:
    // TestTransportCancelRequestInDial (cancelled twice: a second cancel used to panic).
    @Test func cancelDuringHttpConnect() async throws {
        var configuration = SessionConfiguration.default
        let resolver = HangingResolver()
        configuration.hostNameResolver = resolver
        // Only the cancel may end the task: the resolver is asked on a task of its own, which a
        // loaded run of the whole suite (its first seconds, every test starting on two cores)
        // once ran after the 10 s connect timeout had already failed the request.
        configuration.timeoutIntervalForConnect = 600
        try await withManager(baseURL: nil, configuration: configuration) { manager in
            let (task, completions) = Self.task(manager, Request(url: URL(string: "http://courier-test.example/")!))
            task.resume()
            #expect(await resolver.asked.wait { !$0.isEmpty })
            task.cancel()
            task.cancel()
            #expect(await completions.wait { !$0.isEmpty })
            #expect(completions.all.first??.code == .cancelled, "\(completions.all)")
            #expect(completions.count == 1)
        }
    }

    // OkHttp: cancelImmediatelyAfterEnqueue
    @Test func cancelImmediatelyAfterEnqueue() async throws {
        try await Call.overHTTP1({ _, _, _ in .hold }) { server, manager in
            let (task, completions) = Self.task(manager, Request(url: server.baseURL.appendingPathComponent("a")))
            task.resume()
            task.cancel()
            #expect(await completions.wait { !$0.isEmpty })
            #expect(completions.all.first??.code == .cancelled, "\(completions.all)")
            #expect(completions.count == 1)
        }
    }

    // OkHttp: cancelAll (Courier: invalidating the manager, cancelling its tasks)
    @Test func cancelAll() async throws {
        try await Call.overHTTP1({ _, _, _ in .hold }) { server, manager in
            let (task, completions) = Self.task(manager, Request(url: server.baseURL))
            task.resume()
            #expect(await server.changes.wait { server.receivedHeads.count == 1 })
            await manager.invalidate(cancelingTasks: true)
            #expect(await completions.wait { !$0.isEmpty })
            #expect(completions.all.first??.code == .cancelled, "\(completions.all)")
            #expect(completions.count == 1)
        }
    }

    // OkHttp: cancelBeforeBodyIsRead
    @Test func cancelBeforeBodyIsRead() async throws {
        // The head and the first byte of `def`; the rest waits for a gate opened after the cancel.
        let gate = OneShotGate()
        try await Call.overHTTP1({ _, _, _ in
            .respondInTwoParts(Array("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nd".utf8), then: Array("ef".utf8), gate: gate)
        }) { server, manager in
            let response = try await manager.stream(Request(url: server.baseURL.appendingPathComponent("a")))
            response.task.cancel()
            gate.open()
            let error = await #expect(throws: CourierError.self) {
                for try await _ in response.body {}
            }
            #expect(error?.code == .cancelled, "\(String(describing: error))")
            #expect(server.receivedHeads.count == 1)
        }
    }

    /// OkHttp's dispatcher that cancels the call as the request arrives and then answers `A`:
    /// the server's answer waits for `gate`, which the test opens once it has cancelled.
    static func cancelledAsTheRequestArrives(
        _ send: @escaping @Sendable (HTTPSessionManager, URL) async -> CourierError?
    ) async throws {
        let gate = OneShotGate()
        try await Call.overHTTP1({ _, _, _ in .respondWhenOpen(Self.ok("A"), gate: gate) }) { server, manager in
            let url = server.baseURL.appendingPathComponent("a")
            async let error = send(manager, url)
            #expect(await server.changes.wait { server.receivedHeads.count == 1 })
            for task in manager.tasks { task.cancel() }
            gate.open()
            let failure = await error
            #expect(failure?.code == .cancelled, "\(String(describing: failure))")
            #expect(server.receivedHeads.first?.hasPrefix("GET /a ") == true)
        }
    }

    // OkHttp: cancelInFlightBeforeResponseReadThrowsIOE
    @Test func cancelInFlightBeforeResponseReadThrowsIOE() async throws {
        try await Self.cancelledAsTheRequestArrives { manager, url in
            await Call.failure { try await manager.responseOfAnyStatus(for: Request(url: url)) }
        }
    }

    // OkHttp: canceledBeforeResponseReadSignalsOnFailure
    @Test func canceledBeforeResponseReadSignalsOnFailure() async throws {
        try await Self.cancelledAsTheRequestArrives { manager, url in
            let (task, completions) = Self.task(manager, Request(url: url))
            task.resume()
            _ = await completions.wait { !$0.isEmpty }
            return completions.all.first ?? nil
        }
    }

    // OkHttp: cancelInFlightBeforeResponseReadThrowsIOE_HTTP_2,
    // canceledBeforeResponseReadSignalsOnFailure_HTTP_2
    @Test func cancelInFlightBeforeResponseReadThrowsIOE_HTTP_2() async throws {
        try await Call.withMock(http2: true) { server, manager in
            let arrival = ArrivalAction()
            server.server.routeCallingOnArrival("/a", arrival)
            let (task, completions) = Self.task(manager, Request(url: server.url("/a")))
            arrival.set { task.cancel() }
            task.resume()
            #expect(await completions.wait { !$0.isEmpty })
            #expect(completions.all.first??.code == .cancelled, "\(completions.all)")
            // The connection outlives the cancelled stream.
            server.enqueue(Call.mock(body: "after"))
            let after = try await manager.responseOfAnyStatus(for: Request(url: server.url("/")))
            #expect(Call.text(after) == "after")
            #expect(server.server.connectionCount == 1)
        }
    }

    // OkHttp: canceledBeforeIOSignalsOnFailure
    @Test func canceledBeforeIOSignalsOnFailure() async throws {
        // One connection at most (OkHttp's `maxRequests = 1`): B waits for the connection A holds,
        // and is cancelled as A reaches the server.
        var configuration = SessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = 1
        let gate = OneShotGate()
        try await Call.overHTTP1(configuration: configuration, { _, request, _ in
            request == 0 ? .respondWhenOpen(Self.ok("A"), gate: gate) : .respond(Self.ok("C"))
        }) { server, manager in
            let (taskA, completionsA) = Self.task(manager, Request(url: server.baseURL.appendingPathComponent("a")))
            let (taskB, completionsB) = Self.task(manager, Request(url: server.baseURL.appendingPathComponent("b")))
            taskA.resume()
            #expect(await server.changes.wait { server.receivedHeads.count == 1 })
            taskB.resume()
            taskB.cancel()
            #expect(await completionsB.wait { !$0.isEmpty })
            #expect(completionsB.all.first??.code == .cancelled, "\(completionsB.all)")
            gate.open()
            #expect(await completionsA.wait { !$0.isEmpty })
            #expect(completionsA.all == [nil])
            // B never went out, and the connection A leaves carries the next request.
            let next = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL.appendingPathComponent("c")))
            #expect(Call.text(next) == "C")
            #expect(server.receivedHeads.map { $0.split(separator: " ")[1] } == ["/a", "/c"])
            #expect(server.connectionCount == 1)
            #expect(completionsB.count == 1)
        }
    }

    // OkHttp: canceledAfterResponseIsDeliveredBreaksStreamButSignalsOnce
    @Test func canceledAfterResponseIsDeliveredBreaksStreamButSignalsOnce() async throws {
        try await Call.overHTTP1({ _, _, _ in .respond(Self.ok("A")) }) { server, manager in
            // The task is cancelled as its response head is delivered (OkHttp's `onResponse`).
            var hooks = manager.hooks
            hooks.dataTaskDidReceiveResponse = { _, task, _ in
                task.cancel()
                return .allow
            }
            manager.hooks = hooks
            let (task, completions) = Self.task(manager, Request(url: server.baseURL))
            task.resume()
            #expect(await completions.wait { !$0.isEmpty })
            // Either the body was whole already, or the cancel broke it: one completion either way.
            let outcome = completions.all.first ?? nil
            #expect(outcome == nil || outcome?.code == .cancelled, "\(String(describing: outcome))")
            // A later exchange's completion comes after any second one this task could make.
            manager.hooks.dataTaskDidReceiveResponse = nil
            _ = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(completions.count == 1)
            #expect(task.state == .completed)
        }
    }

    // OkHttp: cancelAfterResponseBodyEnd
    @Test func cancelAfterResponseBodyEnd() async throws {
        try await Call.overHTTP1({ _, request, _ in .respond(Self.ok(request == 0 ? "abc" : "def")) }) { server, manager in
            let (task, completions) = Self.task(manager, Request(url: server.baseURL))
            task.resume()
            #expect(await completions.wait { !$0.isEmpty })
            #expect(completions.all == [nil])
            task.cancel()
            #expect(task.state == .completed)
            #expect(task.error == nil)
            // The late cancel takes nothing down: the pooled connection carries the next request.
            let next = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(Call.text(next) == "def")
            #expect(next.metrics?.transactions.last?.isReusedConnection == true)
            #expect(server.connectionCount == 1)
            #expect(completions.count == 1)
        }
    }

    // OkHttp: cancelDuringHttpsConnect (the server takes the TCP connection and never answers TLS)
    @Test func cancelDuringHttpsConnect() async throws {
        // The connect timeout far off: a full run on one core once stalled this test longer than
        // the default 10 s between the connection's start and the cancel, and the task ended
        // timed out instead.
        var configuration = SessionConfiguration.default
        configuration.timeoutIntervalForConnect = 120
        try await Call.overHTTP1(configuration: configuration, { _, _, _ in .hold }) { server, manager in
            let (task, completions) = Self.task(manager, Request(url: URL(string: "https://127.0.0.1:\(server.port)/")!))
            task.resume()
            #expect(await server.changes.wait { server.connectionCount == 1 })
            task.cancel()
            #expect(await completions.wait { !$0.isEmpty })
            #expect(completions.all.first??.code == .cancelled, "\(completions.all)")
            // The connection being made is not the task's: the pool goes on making it for the
            // next request (it closes after its handshake timeout, or idle), as a connection
            // whose requester left does in AsyncHTTPClient; not waited for here.
        }
    }
}
