import CourierTesting
import Dispatch
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// A response below 400 that the task's serializer refuses goes to the retriers that want it
/// (``RequestRetrier/retriesSerializationFailures``), as Alamofire asks its retriers when a
/// serializer throws: the same task, a new attempt, one completion.
@Suite("Session: a serializer's failure goes to the retriers that want it, on a real socket")
struct SerializationRetryTests {
    struct Payload: Decodable, Sendable { let ok: Bool }

    /// What a retrier was asked: "status code retries", one line an attempt.
    final class Asked: Sendable {
        let lines = NIOLockedValueBox<[String]>([])
        var all: [String] { self.lines.withLockedValue { $0 } }

        /// A retrier that records each attempt and retries a serializer's failure `limit` times.
        func retrier(limit: Int = 1) -> Retrier {
            Retrier { attempt in
                let code = attempt.error.map { "\($0.code)" } ?? "none"
                self.lines.withLockedValue { $0.append("\(attempt.statusCode ?? 0) \(code) \(attempt.retryCount)") }
                let refused = attempt.error.map { CourierError.Code.serializationCodes.contains($0.code) } ?? false
                return refused && attempt.retryCount < limit ? .retry() : .doNotRetry
            }
        }
    }

    /// A serializer that counts the bodies it decodes.
    struct Counting<Base: ResponseSerializer>: ResponseSerializer {
        let base: Base
        let count = NIOLockedValueBox(0)

        func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> Base.Output {
            self.count.withLockedValue { $0 += 1 }
            return try self.base.responseObject(for: response, data: data)
        }

        func serialize(response: HTTPResponse?, data: Data?) -> (object: Base.Output?, error: CourierError?) {
            self.count.withLockedValue { $0 += 1 }
            return self.base.serialize(response: response, data: data)
        }
    }

    /// A route that answers 200 with `{}` (no `ok`: a `Payload` cannot be decoded) `failures`
    /// times, then 200 with `{"ok":true}`.
    static func halfWritten(_ server: TestServer, _ path: String, failures: Int) -> NIOLockedValueBox<Int> {
        failingRoute(server, path, failures: failures, status: .ok, headers: [.contentType: "application/json"], failureBody: Data("{}".utf8))
    }

    @Test("A body the serializer refuses is sent again on the same task, then decoded; the retrier saw the serializer's error", arguments: Transport.allCases)
    func aRefusedBodyIsRetried(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let hits = Self.halfWritten(server, "/half-written", failures: 1)
            let asked = Asked()
            manager.interceptor = asked.retrier()
            let monitor = RecordingEventMonitor()
            manager.eventMonitors.append(monitor)
            let serializer = Counting(base: DecodableResponseSerializer(Payload.self))
            let response = try await manager.response(for: Request(url: server.url("/half-written")), serializer: serializer)
            #expect(response.value.ok)
            // Once a response: the caller took what the check made of the second.
            #expect(serializer.count.withLockedValue { $0 } == 2)
            #expect(hits.withLockedValue { $0 } == 2)
            #expect(asked.all == ["200 responseSerializationFailed 0"])
            await monitor.wait(for: "serialized")
            let lines = monitor.lines()
            #expect(lines.filter { $0.hasPrefix("created") }.count == 1)
            #expect(lines.filter { $0.hasPrefix("retry") } == ["retry custom 0.0 seconds"])
            #expect(lines.filter { $0.hasPrefix("completed") } == ["completed ok"])
            #expect(lines.filter { $0.hasPrefix("serialized") } == ["serialized ok"])
            #expect(manager.tasks.isEmpty)
        }
    }

    @Test("When the retriers decline, the task ends with the serializer's error, which the caller does not make again")
    func aDeclinedRetryEndsWithTheSerializersError() async throws {
        try await withTestServer { server in
            let hits = Self.halfWritten(server, "/never", failures: .max)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let asked = Asked()
            manager.interceptor = asked.retrier(limit: 0)
            let serializer = Counting(base: DecodableResponseSerializer(Payload.self))
            let error = await #expect(throws: CourierError.self) {
                try await manager.response(for: Request(url: server.url("/never")), serializer: serializer)
            }
            #expect(error?.code == .responseSerializationFailed)
            #expect(error?.underlyingError is DecodingError)
            #expect(error?.response?.status == .ok)
            #expect(error?.data == Data("{}".utf8))
            #expect(hits.withLockedValue { $0 } == 1)
            #expect(asked.all == ["200 responseSerializationFailed 0"])
            // The check's serialization is the caller's: the serializer ran once.
            #expect(serializer.count.withLockedValue { $0 } == 1)
        }
    }

    @Test("An optional output that the check made reaches the caller, decoded once; a body that gives none is nil, not an error")
    func optionalOutputs() async throws {
        try await withTestServer { server in
            _ = Self.halfWritten(server, "/object", failures: 0)
            server.route("/nothing") { _ in TestServer.Response(status: .ok, headerFields: [.contentType: "application/json"], body: Data()) }
            let manager = HTTPSessionManager(baseURL: server.baseURL)
            defer { manager.invalidate(cancelingTasks: true) }
            let asked = Asked()
            manager.interceptor = asked.retrier()
            let serializer = Counting(base: JSONResponseSerializer())
            let object = try await manager.response(for: Request(url: server.url("/object")), serializer: serializer)
            #expect((object.value as? [String: any Sendable])?["ok"] as? Bool == true)
            #expect(serializer.count.withLockedValue { $0 } == 1)
            let nothing = try await manager.response(for: Request(url: server.url("/nothing")), serializer: serializer)
            #expect(nothing.value == nil)
            let erased = try await manager.get("object")
            #expect((erased.value as? [String: any Sendable])?["ok"] as? Bool == true)
            #expect(asked.all.isEmpty)
        }
    }

    @Test("A completion handler's serializer is checked too, and the handler runs once with the retried response")
    func completionHandlersAreChecked() async throws {
        try await withTestServer { server in
            let hits = Self.halfWritten(server, "/handler", failures: 2)
            let manager = HTTPSessionManager(baseURL: server.baseURL)
            defer { manager.invalidate(cancelingTasks: true) }
            manager.completionQueue = TestQueues.completion
            manager.responseSerializer = DecodableResponseSerializer(Payload.self)
            let asked = Asked()
            manager.interceptor = asked.retrier(limit: 2)
            let calls = NIOLockedValueBox(0)
            let object: (any Sendable)? = await awaitCallback { finish in
                manager.get(
                    "handler",
                    success: { _, object in calls.withLockedValue { $0 += 1 }; finish(object) },
                    failure: { _, _ in calls.withLockedValue { $0 += 1 }; finish(nil) })
            }
            #expect((object as? Payload)?.ok == true)
            #expect(hits.withLockedValue { $0 } == 3)
            #expect(asked.all == ["200 responseSerializationFailed 0", "200 responseSerializationFailed 1"])
            #expect(calls.withLockedValue { $0 } == 1)
        }
    }

    @Test("A retry policy alone does not check: one request, the serializer's error; with a serializer's code in its list, it retries")
    func retryPoliciesCheckOnlyWhenTheirCodesSaySo() async throws {
        #expect(!RetryPolicy().retriesSerializationFailures)
        #expect(!Adapter { request, _ in request }.retriesSerializationFailures)
        #expect(!RequestCompressor().retriesSerializationFailures)
        #expect(Retrier { _ in .doNotRetry }.retriesSerializationFailures)
        #expect(!Interceptor(retriers: [RetryPolicy()]).retriesSerializationFailures)
        #expect(Interceptor(retriers: [RetryPolicy(), Retrier { _ in .doNotRetry }]).retriesSerializationFailures)
        try await withTestServer { server in
            let plain = Self.halfWritten(server, "/plain", failures: 1)
            let listed = Self.halfWritten(server, "/listed", failures: 1)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            var policy = RetryPolicy()
            policy.random = { 0 }
            manager.interceptor = policy
            #expect(manager.tasks.isEmpty)
            let task = manager.dataTask(with: Request(url: server.url("/plain"))) { _, _, _ in }
            #expect(!task.delegate.interception.checksSerialization)
            task.cancel()
            await #expect(throws: CourierError.self) {
                try await manager.response(for: Request(url: server.url("/plain")), serializer: DecodableResponseSerializer(Payload.self))
            }
            #expect(plain.withLockedValue { $0 } == 1)
            policy.retryableErrorCodes.insert(.responseSerializationFailed)
            #expect(policy.retriesSerializationFailures)
            manager.interceptor = policy
            let response = try await manager.response(for: Request(url: server.url("/listed")), serializer: DecodableResponseSerializer(Payload.self))
            #expect(response.value.ok)
            #expect(listed.withLockedValue { $0 } == 2)
        }
    }

    /// The Interceptors article's example, as written there.
    struct RefreshOn401: RequestInterceptor {
        var retriesSerializationFailures: Bool { false }
        func retry(_ attempt: FailedAttempt) async throws -> RetryDecision {
            attempt.statusCode == 401 ? .retry(reason: .authentication) : .doNotRetry
        }
    }

    @Test("A retrier that says it never retries a serializer's failure is not asked about one (the Interceptors article's example)")
    func aRetrierCanOptOut() async throws {
        try await withTestServer { server in
            let hits = Self.halfWritten(server, "/opted-out", failures: 1)
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            manager.interceptor = RefreshOn401()
            let error = await #expect(throws: CourierError.self) {
                try await manager.response(for: Request(url: server.url("/opted-out")), serializer: DecodableResponseSerializer(Payload.self))
            }
            #expect(error?.code == .responseSerializationFailed)
            #expect(hits.withLockedValue { $0 } == 1)
            let task = manager.dataTask(with: Request(url: server.url("/opted-out"))) { _, _, _ in }
            #expect(!task.delegate.interception.checksSerialization)
            task.cancel()
        }
    }

    struct Token: AuthenticationCredential { let value: String; var requiresRefresh: Bool { false } }

    /// Bearer tokens; a 200 whose body is `{"error":"expired"}` is a refusal when `readsBodies`.
    struct BodyReadingAuthenticator: Authenticator {
        let readsBodies: Bool
        let refreshes = NIOLockedValueBox(0)
        func apply(_ credential: Token, to request: inout Request) { request.headerFields[.authorization] = "Bearer \(credential.value)" }
        func refresh(_ credential: Token) async throws -> Token {
            self.refreshes.withLockedValue { $0 += 1 }
            return Token(value: "fresh")
        }
        func didRequest(_ request: Request, with response: HTTPResponse, failDueToAuthenticationError error: CourierError?) -> Bool {
            response.status == .unauthorized || error?.data == Data(#"{"error":"expired"}"#.utf8)
        }
        func isRequest(_ request: Request, authenticatedWith credential: Token) -> Bool {
            request.headerFields[.authorization] == "Bearer \(credential.value)"
        }
        var refreshesOnSerializationFailures: Bool { self.readsBodies }
    }

    @Test("An authentication interceptor skips the check unless its authenticator reads refusals in bodies; then a 200 with an expired token's body refreshes and retries")
    func authenticatorsOptIn() async throws {
        try await withTestServer { server in
            server.route("/me") { request in
                let fresh = request.headerFields[.authorization] == "Bearer fresh"
                return TestServer.Response(
                    headerFields: [.contentType: "application/json"], body: Data((fresh ? #"{"ok":true}"# : #"{"error":"expired"}"#).utf8))
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let plain = BodyReadingAuthenticator(readsBodies: false)
            manager.interceptor = AuthenticationInterceptor(authenticator: plain, credential: Token(value: "old"))
            #expect(!AuthenticationInterceptor(authenticator: plain).retriesSerializationFailures)
            await #expect(throws: CourierError.self) {
                try await manager.response(for: Request(url: server.url("/me")), serializer: DecodableResponseSerializer(Payload.self))
            }
            #expect(plain.refreshes.withLockedValue { $0 } == 0)
            let reading = BodyReadingAuthenticator(readsBodies: true)
            manager.interceptor = AuthenticationInterceptor(authenticator: reading, credential: Token(value: "old"))
            let response = try await manager.response(for: Request(url: server.url("/me")), serializer: DecodableResponseSerializer(Payload.self))
            #expect(response.value.ok)
            #expect(reading.refreshes.withLockedValue { $0 } == 1)
        }
    }

    @Test("Cancelled while its serializer checks, the task ends at once, cancelled, once; nothing of it stays alive")
    func cancelledWhileChecking() async throws {
        try await withTestServer { server in
            let hits = Self.halfWritten(server, "/slow-check", failures: 0)
            let manager = SessionManager()
            let asked = Asked()
            manager.interceptor = asked.retrier()
            let entered = OneShotGate()
            let release = DispatchSemaphore(value: 0)
            let serializer = DecodableResponseSerializer(Payload.self).validating { _, _ in
                entered.open()
                release.wait()
            }
            weak var weakTask: SessionTask?
            let completions = NIOLockedValueBox(0)
            let done = AsyncStream<CourierError?>.makeStream()
            do {
                let task = manager.dataTask(with: Request(url: server.url("/slow-check"))) { _, _, error in
                    completions.withLockedValue { $0 += 1 }
                    done.continuation.yield(error)
                }
                weakTask = task
                task.delegate.state.withLockedValue { $0.checkingSerializer = serializer }
                task.resume()
                #expect(await entered.wait(), "the serializer was never entered")
                task.cancel()
            }
            var results = done.stream.makeAsyncIterator()
            let error = await results.next()
            #expect(error??.code == .cancelled)
            release.signal()
            await manager.invalidate(cancelingTasks: true)
            #expect(completions.withLockedValue { $0 } == 1)
            #expect(hits.withLockedValue { $0 } == 1)
            #expect(asked.all.isEmpty)
            // The check's own task lets go of the task once the released serializer returns, which
            // on a loaded machine may come after the invalidation.
            #expect(await eventually { weakTask == nil })
        }
    }
}
