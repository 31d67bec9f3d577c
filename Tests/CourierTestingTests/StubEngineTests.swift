import Courier
@testable import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Records what an engine tells it, checks that calls never overlap and that completion is last.
final class RecordingDelegate: ExchangeDelegate {
    struct Log {
        var events: [String] = []
        var body: [UInt8] = []
        var response: HTTPResponse?
        var url: URL?
        var completion: CourierError??
        var inCall = false
        var overlapped = false
        var callsAfterCompletion = 0
    }

    let log = NIOLockedValueBox(Log())
    private let onChunk: @Sendable (Int) -> Void
    private let disposition: ResponseDisposition
    private let followRedirects: Bool
    private let done: AsyncStream<Void>.Continuation
    let completed: AsyncStream<Void>

    init(disposition: ResponseDisposition = .allow, followRedirects: Bool = true, onChunk: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.disposition = disposition
        self.followRedirects = followRedirects
        self.onChunk = onChunk
        (self.completed, self.done) = AsyncStream.makeStream()
    }

    private func enter(_ event: String, _ body: (inout Log) -> Void = { _ in }) {
        self.log.withLockedValue { log in
            if log.inCall { log.overlapped = true }
            if log.completion != nil { log.callsAfterCompletion += 1 }
            log.inCall = true
            log.events.append(event)
            body(&log)
        }
    }

    private func leave() { self.log.withLockedValue { $0.inCall = false } }

    func exchange(didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
        self.enter("sent \(totalBytesSent)/\(totalBytesExpectedToSend.map(String.init) ?? "?")")
        self.leave()
    }

    func exchange(willPerformRedirection response: HTTPResponse, newRequest: Request) -> Request? {
        self.enter("redirect \(response.status.code) \(newRequest.method.rawValue) \(newRequest.url.path)")
        self.leave()
        return self.followRedirects ? newRequest : nil
    }

    func exchange(didReceive response: HTTPResponse, url: URL) -> ResponseDisposition {
        self.enter("head \(response.status.code)") { $0.response = response; $0.url = url }
        self.leave()
        return self.disposition
    }

    func exchange(didReceive chunk: ByteBuffer) {
        self.enter("chunk") { $0.body += chunk.readableBytesView }
        self.leave()
        self.onChunk(chunk.readableBytes)
    }

    func exchange(didCompleteWith error: CourierError?) {
        self.enter("complete") { $0.completion = .some(error) }
        self.leave()
        self.done.yield()
        self.done.finish()
    }

    /// Waits for completion (fails the test after `limit`: a bound on a test that fails, not a
    /// timing to meet; generous, as the whole suite may keep the cooperative pool of a two-core
    /// machine busy for seconds, and a full CI run held every test for about 36 s).
    func waitForCompletion(limit: Duration = .seconds(120)) async throws -> Log {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask { for await _ in self.completed {}; return true }
            group.addTask { try await Task.sleep(for: limit); return false }
            let finished = try await group.next() ?? false
            group.cancelAll()
            #expect(finished, "the exchange did not complete in time")
            return self.log.withLockedValue { $0 }
        }
    }
}

@Suite struct StubEngineTests {
    let base = URL(string: "https://api.example.test")!

    @Test func answersInChunksAndCompletesOnce() async throws {
        let engine = StubEngine()
        let body = Data((0..<100).map { UInt8($0) })
        engine.stub(.path("/items", method: .post), StubResponse(status: .created, headerFields: [.contentType: "application/octet-stream"], body: body, chunkSize: 30))
        let delegate = RecordingDelegate()
        let request = Request(method: .post, url: base.appendingPathComponent("items"), body: .data(Data("12345".utf8)))
        _ = engine.execute(request, delegate: delegate)
        let log = try await delegate.waitForCompletion()
        #expect(log.events == ["sent 5/5", "head 201", "chunk", "chunk", "chunk", "chunk", "complete"])
        #expect(log.body == Array(body))
        #expect(log.completion == .some(nil))
        #expect(log.url?.path == "/items")
        #expect(!log.overlapped)
        #expect(log.callsAfterCompletion == 0)
        #expect(engine.requests.count == 1)
        try await engine.shutdown()
    }

    @Test func unmatchedRequestsFailWithConnectionFailed() async throws {
        let engine = StubEngine()
        engine.stub(.path("/a", method: .get), StubResponse())
        let delegate = RecordingDelegate()
        _ = engine.execute(Request(method: .post, url: base.appendingPathComponent("a")), delegate: delegate)
        let log = try await delegate.waitForCompletion()
        #expect(log.events == ["complete"])
        #expect(log.completion??.code == .connectionFailed)
    }

    @Test func laterStubsWinAndURLMatchersUseTheQuery() async throws {
        let engine = StubEngine()
        let url = URL(string: "https://api.example.test/q?a=1")!
        engine.stub(.any(), StubResponse(status: .notFound))
        engine.stub(.url(url), StubResponse(status: .ok))
        let matched = RecordingDelegate()
        _ = engine.execute(Request(url: url), delegate: matched)
        #expect(try await matched.waitForCompletion().response?.status == .ok)
        let other = RecordingDelegate()
        _ = engine.execute(Request(url: URL(string: "https://api.example.test/q?a=2")!), delegate: other)
        #expect(try await other.waitForCompletion().response?.status == .notFound)
    }

    @Test func stubbedErrorsArriveAfterTheDelay() async throws {
        let engine = StubEngine()
        engine.stub(.any(), .failure(CourierError(.timedOut, "stubbed"), delay: .milliseconds(50)))
        let delegate = RecordingDelegate()
        let clock = ContinuousClock()
        let start = clock.now
        _ = engine.execute(Request(url: base), delegate: delegate)
        let log = try await delegate.waitForCompletion()
        #expect(clock.now - start >= .milliseconds(45))
        #expect(log.events == ["complete"])
        #expect(log.completion??.code == .timedOut)
        #expect(log.completion??.request?.url == base)
    }

    @Test func cancelDuringTheDelayCompletesWithTheCancelError() async throws {
        let engine = StubEngine()
        // A delay far past the wait's bound: only the cancel can end the exchange within it.
        // (A 10 s delay and a 2 s bound left a loaded machine 2 s to deliver the cancel.)
        // The matcher says when the exchange looked for its stub: its delay is then under way, or
        // about to be, so the cancel below must end the delay itself.
        let (matched, match) = AsyncStream<Void>.makeStream()
        engine.stub(.custom { _ in match.yield(); return true }, StubResponse(delay: .seconds(600)))
        let delegate = RecordingDelegate()
        let exchange = engine.execute(Request(url: base), delegate: delegate)
        for await _ in matched { break }
        #expect(engine.requests.count == 1)
        exchange.cancel(with: .cancelled)
        let log = try await delegate.waitForCompletion()
        #expect(log.events == ["complete"])
        #expect(log.completion??.code == .cancelled)
        exchange.cancel(with: .cancelled)  // a second cancel changes nothing
        #expect(delegate.log.withLockedValue { $0.events.count } == 1)
    }

    @Test func delegateCanCancelAtTheHead() async throws {
        let engine = StubEngine()
        engine.stub(.any(), StubResponse(body: Data(count: 100)))
        let delegate = RecordingDelegate(disposition: .cancel)
        _ = engine.execute(Request(url: base), delegate: delegate)
        let log = try await delegate.waitForCompletion()
        #expect(log.events == ["head 200", "complete"])
        #expect(log.completion??.code == .cancelled)
    }

    @Test func suspendStopsDeliveryUntilResume() async throws {
        let engine = StubEngine()
        engine.stub(.any(), StubResponse(body: Data(count: 10), chunkSize: 1))
        let holder = NIOLockedValueBox<(any Exchange)?>(nil)
        // Every chunk suspends the exchange again.
        let delegate = RecordingDelegate { _ in holder.withLockedValue { $0 }?.suspendReceiving() }
        let exchange = holder.withLockedValue { holder in
            let exchange = engine.execute(Request(url: base), delegate: delegate)
            holder = exchange
            return exchange
        }
        let stub = try #require(exchange as? StubExchange)
        // Each time the exchange waits for a resume, exactly the chunks so far have come and the
        // exchange has not completed; then one resume lets exactly one more chunk through.
        for delivered in 1..<10 {
            await stub.waitUntilParked()
            #expect(delegate.log.withLockedValue { $0.body.count } == delivered)
            #expect(delegate.log.withLockedValue { $0.completion } == nil)
            exchange.resumeReceiving()
        }
        let log = try await delegate.waitForCompletion()
        #expect(log.body.count == 10)
        #expect(log.completion == .some(nil))
        #expect(!log.overlapped)
    }

    @Test func cancelWhileSuspendedCompletes() async throws {
        let engine = StubEngine()
        engine.stub(.any(), StubResponse(body: Data(count: 10), chunkSize: 1))
        let delegate = RecordingDelegate()
        let exchange = engine.execute(Request(url: base), delegate: delegate)
        exchange.suspendReceiving()
        exchange.cancel(with: CourierError(.timedOut, "deadline"))
        let log = try await delegate.waitForCompletion()
        #expect(log.completion??.code == .timedOut)
        #expect(log.events.last == "complete")
    }

    @Test func redirectsAskTheDelegate() async throws {
        let engine = StubEngine()
        engine.stub(.path("/old"), .redirect(to: "/new", status: .seeOther))
        engine.stub(.path("/new", method: .get), .json("{}"))
        let follows = RecordingDelegate()
        _ = engine.execute(Request(method: .post, url: base.appendingPathComponent("old"), body: .data(Data("x".utf8))), delegate: follows)
        let log = try await follows.waitForCompletion()
        #expect(log.events == ["sent 1/1", "redirect 303 GET /new", "head 200", "chunk", "complete"])
        #expect(log.url?.path == "/new")

        let stops = RecordingDelegate(followRedirects: false)
        _ = engine.execute(Request(url: base.appendingPathComponent("old")), delegate: stops)
        let stopped = try await stops.waitForCompletion()
        #expect(stopped.events == ["redirect 303 GET /new", "head 303", "complete"])
    }

    /// Redirect stubs go by the request's redirect policy and NIOEngine's rule
    /// (`RedirectPlanner`). Before, the stub engine had a rule of its own: a request that did not
    /// follow redirects (`.disallow`, which a session manager puts in each request) followed them
    /// all the same, a redirect to another origin took the request's `Authorization` along, and
    /// one to `ftp:` was followed.
    @Test func redirectsGoByThePolicyAndTheEnginesRule() async throws {
        let engine = StubEngine()
        engine.stub(.any(), .json("{}"))
        engine.stub(.path("/old"), .redirect(to: "https://other.example.test/new"))
        engine.stub(.path("/ftp"), .redirect(to: "ftp://files.example.test/new"))
        var request = Request(url: base.appendingPathComponent("old"))
        request.headerFields[.authorization] = "Bearer secret"

        let follows = RecordingDelegate()
        _ = engine.execute(request, delegate: follows)
        let followed = try await follows.waitForCompletion()
        #expect(followed.events == ["redirect 302 GET /new", "head 200", "chunk", "complete"])
        #expect(engine.requests.last?.url.host == "other.example.test")
        #expect(engine.requests.last?.headerFields[.authorization] == nil, "credentials stay on their origin")

        var disallowed = request
        disallowed.options.redirectPolicy = .disallow
        let stays = RecordingDelegate()
        _ = engine.execute(disallowed, delegate: stays)
        let stayed = try await stays.waitForCompletion()
        #expect(stayed.events == ["head 302", "complete"])

        let unsupported = RecordingDelegate()
        _ = engine.execute(Request(url: base.appendingPathComponent("ftp")), delegate: unsupported)
        let refused = try await unsupported.waitForCompletion()
        #expect(refused.events == ["head 302", "complete"])
    }

    @Test func shutdownFailsRunningAndNewExchanges() async throws {
        let engine = StubEngine()
        // A delay far past any stall of a loaded machine: only the shutdown can end the exchange.
        engine.stub(.any(), StubResponse(delay: .seconds(600)))
        let running = RecordingDelegate()
        _ = engine.execute(Request(url: base), delegate: running)
        try await engine.shutdown()
        #expect(try await running.waitForCompletion().completion??.code == .sessionInvalidated)
        let late = RecordingDelegate()
        _ = engine.execute(Request(url: base), delegate: late)
        #expect(try await late.waitForCompletion().completion??.code == .sessionInvalidated)
    }
}
