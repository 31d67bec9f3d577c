import CourierTesting
import Foundation
import HTTPTypes
import InMemoryTracing
import Logging
import NIOConcurrencyHelpers
import Testing
import Tracing

@testable import Courier

@Suite("Session: event monitors, hooks and notifications from the same events; a logger and a span per task")
struct SessionMonitoringTests {
    @Test("A GET's events, in order, on the monitor's queue; the AFNetworking notifications still come")
    func lifecycle() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            manager.completionQueue = TestQueues.completion
            defer { manager.invalidate(cancelingTasks: true) }
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            let resumed = NIOLockedValueBox(0)
            let observer = NotificationCenter.default.addObserver(forName: .taskDidResume, object: nil, queue: nil) { _ in
                resumed.withLockedValue { $0 += 1 }
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            let done = AsyncStream<Void>.makeStream()
            manager.responseSerializer = DataResponseSerializer()
            let task = manager.dataTask(with: Request(url: server.url("/bytes/3000"))) { _, _, _ in done.continuation.yield() }
            task.resume()
            var iterator = done.stream.makeAsyncIterator()
            await iterator.next()
            await monitor.wait(for: "serialized")
            let lines = monitor.lines(for: task).filter { !$0.hasPrefix("received") }
            #expect(lines == ["created", "resumed", "response 200", "metrics", "completed ok", "serialized ok"])
            #expect(monitor.lines(for: task).contains("received 3000"))
            #expect(resumed.withLockedValue { $0 } >= 1)
            let metrics = try #require(monitor.metrics(for: task))
            #expect(metrics.attempts.count == 1)
            #expect(metrics.bytesReceived == 3000)
            #expect(metrics.attempts[0].responseStart != nil && metrics.attempts[0].exchangeStart != nil)
            #expect(metrics.duration >= metrics.attempts[0].end - metrics.attempts[0].start)
        }
    }

    @Test("Suspend, resume, cancel and redirects reach the monitor; a task made but never resumed only says created")
    func otherEvents() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            manager.completionQueue = TestQueues.completion
            defer { manager.invalidate(cancelingTasks: true) }
            let monitor = RecordingEventMonitor()
            manager.eventMonitors = [monitor]
            let redirected = try await manager.data(for: Request(url: server.url("/redirect/2")))
            #expect(redirected.response.status == .ok)
            await monitor.wait(for: "redirect 302", count: 2)
            // A head that comes 10 s late: however long this thread is descheduled between the
            // calls below, nothing arrives between them.
            let task = manager.dataTask(with: Request(url: server.url("/delay/10")), completionHandler: nil)
            task.resume()
            task.suspend()
            task.cancel()
            await monitor.wait(for: "completed cancelled")
            #expect(monitor.lines(for: task) == ["created", "resumed", "suspended", "cancelled", "metrics", "completed cancelled"])
        }
    }

    /// An engine whose one exchange does only what the test says: it keeps its delegate and the
    /// error it was cancelled with, and delivers nothing on its own.
    final class HandEngine: Engine, Sendable {
        final class Handle: Exchange, Sendable {
            let cancelledWith = NIOLockedValueBox<CourierError?>(nil)
            func cancel(with error: CourierError) { self.cancelledWith.withLockedValue { $0 = $0 ?? error } }
            func suspendReceiving() {}
            func resumeReceiving() {}
        }
        let delegate = NIOLockedValueBox<(any ExchangeDelegate)?>(nil)
        let handle = Handle()
        func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange {
            self.delegate.withLockedValue { $0 = delegate }
            delegate.exchangeWillStart(self.handle)
            return self.handle
        }
        func shutdown() async throws {}
    }

    /// The head an engine's loop delivers after the caller's `cancel()` (which on a busy machine
    /// beat the cancel to the exchange, with the server on a loop of its own) is refused: no
    /// monitor, hook or task hears of a response, and the task ends with the caller's cancel, not
    /// with the refusal's error that names the response.
    @Test("A head that comes after cancel() is refused: the task ends cancelled, without a response")
    func aHeadAfterCancelIsRefused() async throws {
        let engine = HandEngine()
        let manager = SessionManager(engine: engine)
        manager.completionQueue = TestQueues.completion
        defer { manager.invalidate(cancelingTasks: true) }
        let monitor = RecordingEventMonitor()
        manager.eventMonitors = [monitor]
        let heard = NIOLockedValueBox(0)
        manager.hooks.dataTaskDidReceiveResponse = { _, _, _ in
            heard.withLockedValue { $0 += 1 }
            return .allow
        }
        let url = URL(string: "https://example.com/drip")!
        let task = manager.dataTask(with: Request(url: url), completionHandler: nil)
        task.resume()
        let delegate = try #require(await eventually { engine.delegate.withLockedValue { $0 } != nil } ? engine.delegate.withLockedValue { $0 } : nil)
        task.cancel()
        let head = HTTPResponse(status: .ok, headerFields: [.contentLength: "5"])
        #expect(delegate.exchange(didReceive: head, url: url) == .cancel)
        #expect(task.response == nil)
        #expect(heard.withLockedValue { $0 } == 0)
        // The engine completes with the first cancel it got.
        let first = try #require(engine.handle.cancelledWith.withLockedValue { $0 })
        delegate.exchange(didCompleteWith: CourierError(.cancelled, "cancelled on receiving the response", response: head))
        await monitor.wait(for: "completed")
        #expect(first.code == .cancelled)
        #expect(monitor.lines(for: task) == ["created", "resumed", "cancelled", "metrics", "completed cancelled"])
        #expect(task.response == nil)
        #expect(task.error?.code == .cancelled)
        #expect(task.error?.response == nil, "the caller's cancel, not the refusal's error")
    }

    /// `suspend()` and `resume()` racing on two threads, round after round: the monitor hears
    /// the task's changes in the order they were made, so resumes and suspends alternate and the
    /// last one heard is the task's state. Before, each was queued after the task's lock, and a
    /// resume could be heard before the suspend it followed (the task resumed, its monitor last
    /// told of a suspend).
    @Test("Racing suspend() and resume(): the monitor hears them in the order the task changed")
    func racingSuspendsAndResumesAreHeardInOrder() async throws {
        let engine = HandEngine()
        let manager = SessionManager(engine: engine)
        manager.completionQueue = TestQueues.completion
        defer { manager.invalidate(cancelingTasks: true) }
        let monitor = RecordingEventMonitor()
        manager.eventMonitors = [monitor]
        let task = manager.dataTask(with: Request(url: URL(string: "https://example.com/held")!), completionHandler: nil)
        task.resume()
        let delegate = try #require(await eventually { engine.delegate.withLockedValue { $0 } != nil } ? engine.delegate.withLockedValue { $0 } : nil)
        for _ in 0..<500 {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { task.suspend() }
                group.addTask { task.resume() }
            }
        }
        // Every call returned, its event queued: the monitor's serial queue has them all once
        // this block runs.
        monitor.queue.sync {}
        let heard = monitor.lines(for: task).filter { $0 == "resumed" || $0 == "suspended" }
        #expect(heard.first == "resumed")
        let repeated = zip(heard, heard.dropFirst()).filter { $0 == $1 }.count
        #expect(repeated == 0, "a change heard twice in a row \(repeated) times, out of \(heard.count)")
        #expect(heard.last == (task.state == .suspended ? "suspended" : "resumed"))
        task.cancel()
        delegate.exchange(didCompleteWith: CourierError(.cancelled, "cancelled"))
        await monitor.wait(for: "completed")
        #expect(Array(monitor.lines(for: task).suffix(3)) == ["cancelled", "metrics", "completed cancelled"])
    }

    @Test("Any number of monitors, each gets everything")
    func severalMonitors() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let monitors = (0..<3).map { _ in RecordingEventMonitor() }
            manager.eventMonitors = monitors
            _ = try await manager.data(for: Request(url: server.url("/get")))
            for monitor in monitors {
                await monitor.wait(for: "serialized")
                #expect(monitor.lines().filter { !$0.hasPrefix("received") } == ["created", "resumed", "response 200", "metrics", "completed ok", "serialized ok"])
            }
        }
    }

    @Test("A logger per request, else the session's: the task's identifier as metadata; nothing above debug")
    func logging() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let (sessionLogger, sessionMessages) = RecordingLogHandler.logger()
            let (requestLogger, requestMessages) = RecordingLogHandler.logger()
            manager.logger = sessionLogger
            _ = try await manager.data(for: Request(url: server.url("/get")))
            var request = Request(url: server.url("/get"))
            request.logger = requestLogger
            _ = try await manager.data(for: request)
            #expect(sessionMessages.withLockedValue { $0 } == ["trace: attempt started", "debug: task completed"])
            #expect(requestMessages.withLockedValue { $0 } == ["trace: attempt started", "debug: task completed"])
        }
    }

    @Test("A span per task with a child per hop: each hop's context is in its header fields and on the request the engine gets; retries are the task span's events")
    func tracing() async throws {
        try await withTestServer { server in
            let tracer = InMemoryTracer()
            let seen = NIOLockedValueBox<[String]>([])
            let hits = NIOLockedValueBox(0)
            server.route("/traced") { request in
                seen.withLockedValue { $0.append(request.value(forHTTPHeaderField: InMemoryTracer.spanIDKey) ?? "none") }
                let hit = hits.withLockedValue { $0 += 1; return $0 }
                return hit == 1 ? TestServer.Response(status: .badGateway) : .text("ok")
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.tracer = tracer
            let clock = ManualRetryClock()
            manager.retryClock = clock
            manager.interceptor = RetryPolicy()
            let response = try await manager.data(for: Request(url: server.url("/traced")))
            #expect(response.request.serviceContext != nil)
            let spans = tracer.finishedSpans
            #expect(spans.count == 3)
            let span = try #require(spans.last)
            #expect(span.operationName == "GET")
            #expect(span.kind == .client)
            #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
            #expect(span.attributes["http.request.resend_count"]?.toSpanAttribute() == .int64(1))
            #expect(span.events.map(\.name) == ["courier.retry"])
            // The hops: one per attempt, children of the task's span, each seen by the server.
            let hops = Array(spans.dropLast())
            #expect(hops.map(\.operationName) == ["GET hop", "GET hop"])
            #expect(hops.allSatisfy { $0.parentSpanID == span.spanID && $0.traceID == span.traceID })
            #expect(seen.withLockedValue { $0 } == hops.map(\.spanID))
            #expect(hops.map { $0.attributes["http.response.status_code"]?.toSpanAttribute() } == [.int64(502), .int64(200)])
            #expect(hops.map { $0.attributes["courier.attempt"]?.toSpanAttribute() } == [.int64(1), .int64(2)])
            // OpenTelemetry's attributes of each physical request.
            #expect(hops.map { $0.attributes["http.request.resend_count"]?.toSpanAttribute() } == [nil, .int64(1)])
            #expect(hops.allSatisfy { $0.attributes["server.address"]?.toSpanAttribute() == .string("127.0.0.1") })
            #expect(hops.allSatisfy { $0.attributes["server.port"]?.toSpanAttribute() == .int64(Int64(server.port)) })
            #expect(hops.allSatisfy { $0.attributes["network.protocol.version"]?.toSpanAttribute() == .string("1.1") })
            #expect(response.request.serviceContext?.inMemorySpanContext?.spanID == hops.last?.spanID)
        }
    }

    @Test("A request's operationName names its task span and every hop's (a redirect's too), and stays on its metrics")
    func operationName() async throws {
        try await withTestServer { server in
            let tracer = InMemoryTracer()
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.tracer = tracer
            let metrics = NIOLockedValueBox<[TaskMetrics]>([])
            manager.hooks.taskDidFinishCollectingMetrics = { _, _, collected in metrics.withLockedValue { $0.append(collected) } }
            var request = Request(url: server.url("/redirect-to?url=/get"))
            request.operationName = "listItems"
            let response = try await manager.data(for: request)
            let spans = tracer.finishedSpans
            #expect(spans.map(\.operationName) == ["listItems hop", "listItems hop", "listItems"])
            #expect(spans.last?.attributes["courier.operation"]?.toSpanAttribute() == .string("listItems"))
            #expect(spans.last?.attributes["http.request.method"]?.toSpanAttribute() == .string("GET"))
            #expect(response.metrics?.operationName == "listItems")
            #expect(metrics.withLockedValue { $0.map(\.operationName) } == ["listItems"])
            #expect(response.request.operationName == "listItems", "the redirected request keeps it")
            // Without one, the method names them, as before.
            _ = try await manager.data(for: Request(url: server.url("/get")))
            #expect(tracer.finishedSpans.suffix(2).map(\.operationName) == ["GET hop", "GET"])
        }
    }

    /// OpenTelemetry's HTTP and URL conventions: a method it does not know is `_OTHER` (the
    /// original in `http.request.method_original`) and names the span `HTTP`; `url.full` has
    /// its user information and presigned URLs' signatures and access keys as `REDACTED`; the
    /// task span's `server.port` is the one the URL means (it was left out for a default port).
    @Test func spansFollowOpenTelemetrysConventionsForMethodsURLsAndPorts() async throws {
        try await withTestServer { server in
            let tracer = InMemoryTracer()
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.tracer = tracer
            var request = Request(url: URL(string: "http://ann:secret@127.0.0.1:\(server.port)/anything?sig=abc&q=1&X-Goog-Signature=d%20e")!)
            request.method = HTTPRequest.Method("FOO")!
            // The test server answers a method it does not know 400: the spans are the same.
            _ = try? await manager.data(for: request)
            let spans = tracer.finishedSpans
            #expect(spans.map(\.operationName) == ["HTTP hop", "HTTP"])
            for span in spans {
                #expect(span.attributes["http.request.method"]?.toSpanAttribute() == .string("_OTHER"))
                #expect(span.attributes["http.request.method_original"]?.toSpanAttribute() == .string("FOO"))
                #expect(
                    span.attributes["url.full"]?.toSpanAttribute()
                        == .string("http://REDACTED:REDACTED@127.0.0.1:\(server.port)/anything?sig=REDACTED&q=1&X-Goog-Signature=REDACTED"))
            }
        }
        #expect(TaskSpan.redacted(URL(string: "https://h.test/a?signature=x&q=%2F")!) == "https://h.test/a?signature=x&q=%2F")
        let tracer = InMemoryTracer()
        let span = TaskSpan.start(tracer: tracer, for: Request(url: URL(string: "https://h.test/")!), parent: .topLevel)
        #expect(span.span.attributes["server.port"]?.toSpanAttribute() == .int64(443))
        #expect(span.span.attributes["http.request.method"]?.toSpanAttribute() == .string("GET"))
        #expect(span.span.attributes["http.request.method_original"] == nil)
        span.span.end()
    }

    @Test("A redirect ends its hop's span and starts the next hop's, whose context the redirected request carries")
    func tracingRedirects() async throws {
        try await withTestServer { server in
            let tracer = InMemoryTracer()
            let seen = NIOLockedValueBox<[String]>([])
            server.route("/traced-target") { request in
                seen.withLockedValue { $0.append(request.value(forHTTPHeaderField: InMemoryTracer.spanIDKey) ?? "none") }
                return .text("ok")
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.tracer = tracer
            _ = try await manager.data(for: Request(url: server.url("/redirect-to?url=/traced-target")))
            let spans = tracer.finishedSpans
            #expect(spans.count == 3)
            let task = try #require(spans.last)
            let hops = Array(spans.dropLast())
            #expect(hops.allSatisfy { $0.parentSpanID == task.spanID })
            #expect(hops.map { $0.attributes["http.response.status_code"]?.toSpanAttribute() } == [.int64(302), .int64(200)])
            #expect(hops.map { $0.attributes["courier.redirect"]?.toSpanAttribute() } == [nil, .int64(1)])
            #expect(hops.map { $0.attributes["http.request.resend_count"]?.toSpanAttribute() } == [nil, .int64(1)], "a redirect is a resend")
            #expect(seen.withLockedValue { $0 } == [hops[1].spanID])
        }
    }

    @Test("The process's tracer is read when a task is made: a tracer that appears after the manager was made traces")
    func theTracerIsReadWhenATaskStarts() async throws {
        try await withTestServer { server in
            let bootstrapped = NIOLockedValueBox<InMemoryTracer?>(nil)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            // Stands in for InstrumentationSystem, which a test process can bootstrap only once.
            manager.settings.withLockedValue { $0.interception.systemTracer = { bootstrapped.withLockedValue { $0 } } }
            #expect(manager.tracer == nil)
            _ = try await manager.data(for: Request(url: server.url("/get")))
            let tracer = InMemoryTracer()
            bootstrapped.withLockedValue { $0 = tracer }
            #expect(manager.tracer != nil)
            _ = try await manager.data(for: Request(url: server.url("/get")))
            #expect(tracer.finishedSpans.map(\.operationName) == ["GET hop", "GET"])
            // Set to nil, the session traces nothing, bootstrapped tracer or not.
            manager.tracer = nil
            _ = try await manager.data(for: Request(url: server.url("/get")))
            #expect(tracer.finishedSpans.count == 2)
        }
    }
}

/// A tracer is the caller's code: its spans were started (and, for WebSocket tasks, given the
/// response) while the task's lock was held, so a tracer that reads the manager's tasks (each
/// task's lock) stopped the process, or hung it in a release build.
@Suite("Session: a tracer may read the manager while it starts a span")
struct TracerReadingTheManagerTests {
    struct ReadingTracer: Tracer {
        let base = InMemoryTracer()
        let manager: SessionManager
        let reads = NIOLockedValueBox(0)

        func startSpan<Instant: TracerInstant>(
            _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
            function: String, file fileID: String, line: UInt
        ) -> InMemorySpan {
            _ = self.manager.tasks
            _ = self.manager.webSocketTasks
            self.reads.withLockedValue { $0 += 1 }
            return self.base.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
        }

        func forceFlush() { self.base.forceFlush() }

        func extract<Carrier, Extract>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
        where Extract: Extractor, Extract.Carrier == Carrier {
            self.base.extract(carrier, into: &context, using: extractor)
        }

        func inject<Carrier, Inject>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
        where Inject: Injector, Inject.Carrier == Carrier {
            self.base.inject(context, into: &carrier, using: injector)
        }
    }

    // A generous limit: the whole suite, run in parallel on two cores, takes tests a minute.
    @Test(.timeLimit(.minutes(5)))
    func aDataTaskAndAWebSocketTaskAreTracedByATracerThatReadsTheManager() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            let tracer = ReadingTracer(manager: manager)
            manager.tracer = tracer
            #expect(try await manager.data(for: Request(url: server.url("/get"))).response.status == .ok)
            let task = manager.webSocketTask(with: Request(url: WebSocketOverSocketTests.url(server, "echo")))
            try await task.waitUntilOpen()
            task.cancel()
            await task.waitUntilFinished()
            #expect(tracer.reads.withLockedValue { $0 } >= 4, "a task span and a hop span each")
            // The tracer holds the manager, which holds the tracer: the cycle ends here.
            manager.tracer = nil
            await manager.invalidate(cancelingTasks: true)
        }
    }
}
