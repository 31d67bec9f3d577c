@testable import Courier
import CourierTesting
import Dispatch
import Foundation
import NIOConcurrencyHelpers
import HTTPTypes
import Testing

/// AFNetworking 2.x's operation API over a real socket: operations on queues, the operation
/// manager's verbs, cancellation, pausing, progress and batches.
@Suite("HTTP request operations")
struct HTTPRequestOperationTests {
    /// Where the operations' blocks run in these tests (the main queue is not serviced here).
    static let queue = DispatchQueue(label: "courier.tests.operations")

    private func withOperationManager<T>(
        _ server: TestServer,
        _ body: (HTTPRequestOperationManager) async throws -> T
    ) async throws -> T {
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.completionQueue = Self.queue
        do {
            let result = try await body(manager)
            await manager.invalidate(cancelingOperations: true)
            return result
        } catch {
            await manager.invalidate(cancelingOperations: true)
            throw error
        }
    }

    /// What a `success` or `failure` saw.
    enum Outcome: Sendable {
        case success(HTTPRequestOperation, (any Sendable)?, onQueue: Bool)
        case failure(HTTPRequestOperation?, CourierError, onQueue: Bool)

        var error: CourierError? {
            if case .failure(_, let error, _) = self { return error }
            return nil
        }
        var object: (any Sendable)? {
            if case .success(_, let object, _) = self { return object }
            return nil
        }
    }

    /// A `success` that blocks its queue until `proceed` is signalled, and the `failure` beside it:
    /// `started` hears either begin, `hasReturned` says whether `success` has returned.
    final class HeldSuccess: Sendable {
        let started = Recorder<Void>()
        let proceed = DispatchSemaphore(value: 0)
        private let returned = NIOLockedValueBox(false)

        var hasReturned: Bool { self.returned.withLockedValue { $0 } }

        var success: HTTPRequestOperation.Success {
            { _, _ in
                self.started.append(())
                self.proceed.wait()
                self.returned.withLockedValue { $0 = true }
            }
        }

        var failure: HTTPRequestOperationManager.Failure { { _, _ in self.started.append(()) } }
    }

    /// A route at `path` that answers 200 with JSON and counts the requests that reach it.
    private static func counted(_ server: TestServer, _ path: String) -> @Sendable () -> Int {
        let hits = NIOLockedValueBox(0)
        server.route(path) { _ in
            hits.withLockedValue { $0 += 1 }
            return TestServer.Response(headerFields: [.contentType: "application/json"], body: Data(#"{"ok":true}"#.utf8))
        }
        return { hits.withLockedValue { $0 } }
    }

    /// A manager invalidated before any operation: a task made afterwards fails at once with
    /// ``CourierError/Code/sessionInvalidated``, and nothing connects (its base URL is never reached).
    private static func invalidatedManager() async -> HTTPRequestOperationManager {
        let manager = HTTPRequestOperationManager(baseURL: URL(string: "http://127.0.0.1:9/"))
        manager.completionQueue = Self.queue
        manager.responseSerializer = HTTPResponseSerializer()
        await manager.invalidate(cancelingOperations: true)
        return manager
    }

    private static func onQueue() -> Bool {
        DispatchQueue.getSpecific(key: TestQueues.key) == "operations"
    }

    init() {
        Self.queue.setSpecific(key: TestQueues.key, value: "operations")
    }

    @Test func getRunsOnTheQueueAndReportsOnTheCompletionQueue() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let outcome: Outcome = await awaitCallback { done in
                    manager.get("get", parameters: ["q": "a b"], success: { operation, object in
                        done(.success(operation, object, onQueue: Self.onQueue()))
                    }, failure: { operation, error in
                        done(.failure(operation, error, onQueue: Self.onQueue()))
                    })
                }
                guard case .success(let operation, let object, let onQueue) = outcome else {
                    Issue.record("failed: \(String(describing: outcome.error))")
                    return
                }
                #expect(onQueue)
                #expect(operation.isFinished && !operation.isExecuting)
                #expect(operation.response?.status.code == 200)
                #expect(object.json?["args"] as? [String: any Sendable] != nil)
                #expect(operation.responseObject.json?["url"] as? String == server.url("/get?q=a%20b").absoluteString)
                #expect(operation.responseString?.contains("\"q\"") == true)
                #expect(operation.responseData?.isEmpty == false)
                #expect(operation.error == nil)
                #expect(operation.task?.state == .completed)
            }
        }
    }

    @Test func everyVerbReachesTheServer() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let verbs: [(HTTPRequest.Method, String)] = [(.post, "post"), (.put, "put"), (.patch, "patch"), (.delete, "delete")]
                for (method, path) in verbs {
                    let outcome: Outcome = await awaitCallback { done in
                        let success: HTTPRequestOperationManager.Success = { done(.success($0, $1, onQueue: true)) }
                        let failure: HTTPRequestOperationManager.Failure = { done(.failure($0, $1, onQueue: true)) }
                        switch method {
                        case .post: manager.post(path, parameters: ["k": "v"], success: success, failure: failure)
                        case .put: manager.put(path, parameters: ["k": "v"], success: success, failure: failure)
                        case .patch: manager.patch(path, parameters: ["k": "v"], success: success, failure: failure)
                        default: manager.delete(path, parameters: ["k": "v"], success: success, failure: failure)
                        }
                    }
                    #expect(outcome.error == nil, "\(method)")
                    let echoed = outcome.object.json
                    let sent = method == .delete ? echoed?["args"] : echoed?["form"]
                    #expect((sent as? [String: any Sendable])?["k"] as? String == "v", "\(method)")
                }
                let head: Int? = await awaitCallback { done in
                    manager.head("get", success: { done($0.response?.status.code) }, failure: { _, _ in done(nil) })
                }
                #expect(head == 200)
                #expect(server.requestCount == 5)
            }
        }
    }

    @Test func aMultipartPostSendsItsParts() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let outcome: Outcome = await awaitCallback { done in
                    manager.post("post", parameters: ["album": "cats"], constructingBodyWith: { form in
                        form.appendPart(withFileData: Data("meow".utf8), name: "note", fileName: "note.txt", mimeType: "text/plain")
                    }, success: { done(.success($0, $1, onQueue: true)) }, failure: { done(.failure($0, $1, onQueue: true)) })
                }
                #expect(outcome.error == nil)
                #expect((outcome.object.json?["form"] as? [String: any Sendable])?["album"] as? String == "cats")
                #expect((outcome.object.json?["files"] as? [String: any Sendable])?["note"] as? String == "meow")
            }
        }
    }

    @Test func aRequestThatCannotBeBuiltCallsFailureWithNoOperation() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let returned = NIOLockedValueBox<HTTPRequestOperation?>(nil)
                let outcome: Outcome = await awaitCallback { done in
                    let made = manager.get("http://exa mple.com/%", failure: { operation, error in
                        done(.failure(operation, error, onQueue: Self.onQueue()))
                    })
                    returned.withLockedValue { $0 = made }
                }
                guard case .failure(let operation, let error, let onQueue) = outcome else {
                    Issue.record("succeeded")
                    return
                }
                #expect(operation == nil && returned.withLockedValue { $0 } == nil)
                #expect(error.code == .invalidURL)
                #expect(onQueue)
                #expect(manager.operationQueue.operationCount == 0)
                #expect(server.requestCount == 0)
            }
        }
    }

    @Test func dependenciesOrderTheRequests() async throws {
        try await withTestServer(.recording) { server in
            try await self.withOperationManager(server) { manager in
                let done = Recorder<String>()
                let first = manager.httpRequestOperation(with: Request(url: server.url("/delay/0.2")), success: { _, _ in done.append("first") }, failure: nil)
                let second = manager.httpRequestOperation(with: Request(url: server.url("/get")), success: { _, _ in done.append("second") }, failure: nil)
                second.addDependency(first)
                for operation in [second, first] { manager.operationQueue.addOperation(operation) }
                #expect(await done.wait { $0.count == 2 })
                #expect(done.all == ["first", "second"])
                #expect(server.receivedRequests.map(\.path) == ["/delay/0.2", "/get"])
            }
        }
    }

    @Test func theQueueBoundsHowManyRunAtOnce() async throws {
        try await withTestServer { server in
            // The server holds the 1st, 3rd and 5th request until the next one is in, so a queue
            // that runs two at a time shows two in flight, and never more (one at a time would
            // show one, after 20-second waits: 60 s in all, within the recorder's bound). The
            // wait ends as soon as the partner arrives; 5 s once was its bound, which a partner
            // slowed by a loaded machine could miss.
            let counts = NIOLockedValueBox((arrived: 0, inFlight: 0, most: 0))
            server.route("/pair") { _ in
                let arrival = counts.withLockedValue { $0.arrived += 1; $0.inFlight += 1; $0.most = max($0.most, $0.inFlight); return $0.arrived }
                let partner = arrival.isMultiple(of: 2) ? arrival : arrival + 1
                let deadline = ContinuousClock.now + .seconds(20)
                while counts.withLockedValue({ $0.arrived }) < partner, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                }
                counts.withLockedValue { $0.inFlight -= 1 }
                return TestServer.Response(body: Data("ok".utf8))
            }
            try await self.withOperationManager(server) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                manager.operationQueue.maxConcurrentOperationCount = 2
                let done = Recorder<Bool>()
                for _ in 0..<6 {
                    manager.get("pair", success: { _, _ in done.append(true) }, failure: { _, _ in done.append(false) })
                }
                #expect(await done.wait { $0.count == 6 })
                #expect(done.all == Array(repeating: true, count: 6))
                #expect(counts.withLockedValue { $0.most } == 2)
            }
        }
    }

    @Test func cancellingBeforeTheStartSendsNothingAndFails() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let outcome: Outcome = await awaitCallback { done in
                    let operation = manager.httpRequestOperation(
                        with: Request(url: server.url("/get")),
                        success: { done(.success($0, $1, onQueue: true)) }, failure: { done(.failure($0, $1, onQueue: true)) })
                    operation.cancel()
                    manager.operationQueue.addOperation(operation)
                }
                #expect(outcome.error?.code == .cancelled)
                #expect(server.requestCount == 0)
            }
        }
    }

    @Test func cancellingARunningOperationEndsItWithCancelled() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let outcome: Outcome = await awaitCallback { done in
                    // Cancels when the request reaches the server, which answers only 10 s later.
                    let arrival = ArrivalAction()
                    server.routeCallingOnArrival("/hold", arrival)
                    guard let operation = manager.get("hold", success: { done(.success($0, $1, onQueue: true)) }, failure: { done(.failure($0, $1, onQueue: true)) }) else { return }
                    arrival.set { operation.cancel() }
                }
                guard case .failure(let operation?, let error, _) = outcome else {
                    Issue.record("not a failure with an operation")
                    return
                }
                #expect(error.code == .cancelled)
                #expect(operation.isCancelled && operation.isFinished)
            }
        }
    }

    @Test func aSerializerErrorFailsTheOperationAndKeepsTheBody() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let outcome: Outcome = await awaitCallback { done in
                    manager.get("html", success: { done(.success($0, $1, onQueue: true)) }, failure: { done(.failure($0, $1, onQueue: true)) })
                }
                guard case .failure(let operation?, let error, _) = outcome else {
                    Issue.record("not a failure with an operation")
                    return
                }
                #expect(error.code == .unacceptableContentType)
                #expect(operation.error?.code == .unacceptableContentType)
                #expect(operation.responseObject == nil)
                #expect(operation.responseString?.contains("<html") == true)
            }
        }
    }

    /// `responseString` decodes as ``StringResponseSerializer`` does: a body labelled windows-1252,
    /// or US-ASCII (read as windows-1252), with a byte the code page leaves undefined (81) is text.
    /// It was nil: Foundation's `.windowsCP1252` refuses that byte.
    @Test func responseStringDecodesWindows1252AsTheStringSerializerDoes() async throws {
        try await withTestServer { server in
            // "café", a space, 81 (undefined: the C1 control U+0081), 80 (the euro sign).
            let body = Data([0x63, 0x61, 0x66, 0xE9, 0x20, 0x81, 0x80])
            let charsets = ["windows-1252", "us-ascii"]
            for charset in charsets {
                server.route("/text-\(charset)") { _ in
                    TestServer.Response(headerFields: [.contentType: "text/plain; charset=\(charset)"], body: body)
                }
            }
            try await self.withOperationManager(server) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                for charset in charsets {
                    let outcome: Outcome = await awaitCallback { done in
                        manager.get("text-\(charset)", success: { done(.success($0, $1, onQueue: true)) }, failure: { done(.failure($0, $1, onQueue: true)) })
                    }
                    guard case .success(let operation, _, _) = outcome else {
                        Issue.record("\(charset): \(String(describing: outcome.error))")
                        continue
                    }
                    #expect(operation.responseString == "café \u{81}€", "\(charset)")
                    let serialized = try StringResponseSerializer().responseObject(for: operation.response, data: operation.responseData)
                    #expect(operation.responseString == serialized, "\(charset)")
                }
            }
        }
    }

    /// A status the serializer does not accept, with a body it can read: the failure block's
    /// operation holds what the serializer made of it (an API's error message), as AFNetworking
    /// 2.x's `responseObject` does. It was nil.
    @Test func aRefusedStatusKeepsTheBodysObjectForTheFailureBlock() async throws {
        try await withTestServer { server in
            server.route("/refused") { _ in .json(#"{"message":"bad"}"#, status: .init(code: 422)) }
            try await self.withOperationManager(server) { manager in
                let outcome: Outcome = await awaitCallback { done in
                    manager.get("refused", success: { done(.success($0, $1, onQueue: true)) }, failure: { done(.failure($0, $1, onQueue: true)) })
                }
                guard case .failure(let operation?, let error, _) = outcome else {
                    Issue.record("not a failure with an operation")
                    return
                }
                #expect(error.code == .unacceptableStatusCode)
                #expect(operation.error?.code == .unacceptableStatusCode)
                #expect(operation.responseObject.json?["message"] as? String == "bad")
            }
        }
    }

    /// Waits for events, not for time: paused once its request is on the server, the operation
    /// gets the answer's head (and the bytes of the read under way) but does not complete until
    /// it is resumed.
    @Test func pausingHoldsTheOperationUntilResumed() async throws {
        try await withTestServer { server in
            let arrived = NotificationWaiter()
            let answer = OneShotGate()
            server.route("/held") { _ in
                arrived.deliver(nil)
                await withCheckedContinuation { continuation in answer.whenOpen { continuation.resume() } }
                return TestServer.Response(body: Data((0..<5).map { "chunk \($0)\n" }.joined().utf8))
            }
            let engine = EventRecordingEngine()
            let manager = HTTPRequestOperationManager(sessionManager: HTTPSessionManager(baseURL: server.baseURL, engine: engine))
            manager.completionQueue = Self.queue
            manager.responseSerializer = HTTPResponseSerializer()
            let finished = Recorder<CourierError?>()
            let done = NotificationWaiter()
            let operation = manager.httpRequestOperation(
                with: Request(url: server.url("/held")),
                success: { _, _ in
                    finished.append(nil)
                    done.deliver(nil)
                },
                failure: { _, error in
                    finished.append(error)
                    done.deliver(nil)
                })
            manager.operationQueue.addOperation(operation)
            _ = await arrived.wait()
            operation.pause()
            #expect(operation.isPaused)
            #expect(await engine.wait { $0.contains(.suspend) }, "pausing did not stop the exchange")
            answer.open()
            #expect(await engine.wait { $0.contains(.head) }, "the answer never came")
            #expect(finished.count == 0)
            #expect(operation.isExecuting)
            operation.resume()
            _ = await done.wait()
            #expect(finished.all == [nil])
            #expect(operation.responseString?.contains("chunk 4") == true)
            #expect(!engine.completedWhileSuspended, "the exchange completed while the operation was paused")
            await manager.invalidate(cancelingOperations: true)
        }
    }

    @Test func progressBlocksReportStepsAndTotals() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                let body = Data(repeating: 7, count: 300_000)
                var request = Request(method: .post, url: server.url("/courier/upload"))
                request.body = .data(body)
                let uploads = Recorder<(Int64, Int64, Int64)>()
                let downloads = Recorder<(Int64, Int64, Int64)>()
                let finished = Recorder<CourierError?>()
                let operation = manager.httpRequestOperation(with: request, success: { _, _ in finished.append(nil) }, failure: { _, error in finished.append(error) })
                operation.setUploadProgressBlock { uploads.append(($0, $1, $2)) }
                operation.setDownloadProgressBlock { downloads.append(($0, $1, $2)) }
                manager.operationQueue.addOperation(operation)
                #expect(await finished.wait { $0.count == 1 })
                let outcome = try #require(finished.all.first, "the operation never finished")
                #expect(outcome == nil)
                // Blocks run on the completion queue, before or after the completion: wait for the queue.
                await withCheckedContinuation { continuation in Self.queue.async { continuation.resume() } }
                #expect(uploads.count >= 2)
                #expect(uploads.all.map(\.0).reduce(0, +) == Int64(body.count), "the steps add up")
                #expect(uploads.all.last?.1 == Int64(body.count))
                #expect(uploads.all.allSatisfy { $0.2 == Int64(body.count) })
                #expect(downloads.all.last?.1 == Int64(operation.responseData?.count ?? -1))
            }
        }
    }

    /// The head is the operation's as soon as it came: a download progress block reads it while the
    /// body is still arriving (AFNetworking's idiom reads its expected length there). It was nil
    /// until the operation finished. The server sends the body's first bytes and holds the rest
    /// until a progress block has run, so the block surely runs before the end (with a paced body
    /// a busy machine ran every block after it).
    @Test func theResponseIsReadableInProgressBlocksWhileTheBodyArrives() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                let (gate, release) = AsyncStream<Void>.makeStream()
                server.route("/held-after-some") { _ in
                    TestServer.Response(body: Data(repeating: 0x2A, count: 4_000), bodyHeldUntil: { for await _ in gate { break } },
                                        bytesSentBeforeHold: 1_000)
                }
                let finished = Recorder<CourierError?>()
                let operation = manager.httpRequestOperation(
                    with: Request(url: server.url("/held-after-some")),
                    success: { _, _ in finished.append(nil) }, failure: { _, error in finished.append(error) })
                let seen = Recorder<(finished: Bool, status: Int?, read: Int64)>()
                operation.setDownloadProgressBlock { [unowned operation] _, read, _ in
                    seen.append((operation.isFinished, operation.response?.status.code, read))
                    release.yield()
                }
                manager.operationQueue.addOperation(operation)
                #expect(await finished.wait { $0.count == 1 })
                #expect(finished.all == [nil])
                await withCheckedContinuation { continuation in Self.queue.async { continuation.resume() } }
                let first = try #require(seen.all.first, "no progress block ran")
                #expect(first.read <= 1_000 && !first.finished, "the first block ran while the rest of the body was held: \(seen.all)")
                #expect(first.status == 200, "\(seen.all)")
                #expect(seen.all.last?.read == 4_000)
            }
        }
    }

    /// AFNetworking's download progress: (bytes read this time, total read, expected), expected
    /// being the response's `Content-Length`, or -1 when it has none (a chunked body).
    @Test func downloadProgressExpectsTheContentLengthOrMinusOne() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                for (path, expected) in [("/bytes/200000", Int64(200_000)), ("/stream-bytes/200000?chunk_size=20000", Int64(-1))] {
                    let downloads = Recorder<(Int64, Int64, Int64)>()
                    let finished = Recorder<CourierError?>()
                    let operation = manager.httpRequestOperation(
                        with: Request(url: server.url(path)), success: { _, _ in finished.append(nil) }, failure: { _, error in finished.append(error) })
                    operation.setDownloadProgressBlock { downloads.append(($0, $1, $2)) }
                    manager.operationQueue.addOperation(operation)
                    #expect(await finished.wait { $0.count == 1 })
                    #expect(finished.all == [nil], "\(path)")
                    // Blocks run on the completion queue: wait for what is queued there.
                    await withCheckedContinuation { continuation in Self.queue.async { continuation.resume() } }
                    #expect(!downloads.all.isEmpty, "\(path)")
                    #expect(downloads.all.map(\.0).reduce(0, +) == 200_000, "\(path): the steps add up")
                    #expect(downloads.all.last?.1 == 200_000, "\(path)")
                    #expect(downloads.all.allSatisfy { $0.2 == expected }, "\(path): \(downloads.all.map(\.2))")
                }
            }
        }
    }

    @Test func aBatchReportsProgressAndCompletesAfterEverySuccess() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let successes = Recorder<String>()
                let operations = ["/get", "/delay/0.1", "/status/404"].map { path in
                    manager.httpRequestOperation(
                        with: Request(url: server.url(path)),
                        success: { _, _ in successes.append(path) }, failure: { _, _ in successes.append("failed " + path) })
                }
                let progress = Recorder<(Int, Int)>()
                let completed: [HTTPRequestOperation] = await awaitCallback { done in
                    let batch = HTTPRequestOperation.batch(
                        of: operations, completionQueue: Self.queue,
                        progress: { progress.append(($0, $1)) },
                        completion: { done($0) })
                    #expect(batch.count == 4)
                    #expect(Set(batch[3].dependencies.map(ObjectIdentifier.init)) == Set(operations.map(ObjectIdentifier.init)), "the completion depends on every operation")
                    manager.operationQueue.addOperations(batch, waitUntilFinished: false)
                }
                #expect(completed.count == 3)
                #expect(completed.allSatisfy { $0.isFinished })
                #expect(successes.count == 3, "every success or failure ran before the batch completion")
                #expect(successes.all.contains("failed /status/404"))
                #expect(progress.all.map(\.0) == [1, 2, 3])
                #expect(progress.all.allSatisfy { $0.1 == 3 })
            }
        }
    }

    /// A batched operation's `success` runs in the batch's group, not in the group it had from
    /// its manager (AFNetworking sets every operation's `completionGroup`): the batch completion
    /// comes after it. It kept the manager's group, and the completion did not wait for it.
    @Test func aBatchWaitsForTheSuccessOfOperationsThatHadAGroup() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let managersGroup = DispatchGroup()
                manager.completionGroup = managersGroup
                manager.completionQueue = DispatchQueue(label: "courier.tests.operations.batch-success")
                let held = HeldSuccess()
                let operation = manager.httpRequestOperation(with: Request(url: server.url("/get")), success: held.success, failure: held.failure)
                let completion = Recorder<Bool>()
                let batch = HTTPRequestOperation.batch(of: [operation], completionQueue: Self.queue, completion: { _ in
                    completion.append(held.hasReturned)
                })
                for operation in batch { manager.operationQueue.addOperation(operation) }
                #expect(await held.started.wait { $0.count == 1 })
                // Not waiting: whether the manager's group is entered while `success` runs.
                #expect(managersGroup.wait(timeout: .now()) == .success, "success runs in the manager's group, not the batch's")
                #expect(completion.count == 0)
                held.proceed.signal()
                #expect(await completion.wait { $0.count == 1 })
                #expect(completion.all == [true], "the batch completion ran before success returned")
            }
        }
    }

    /// A batch's progress counts go 1, 2, … n in the order they are reported. The count was taken
    /// when an operation's completion block ran and handed to the completion queue after the
    /// lock: two operations ending together could queue (2, n) before (1, n). Many operations on a
    /// queue that runs them all at once, a serial completion queue. A stress test (the old code
    /// failed it only when two completion blocks interleaved); it cannot fail on correct code.
    @Test func aBatchReportsItsProgressInOrder() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                let count = 100
                let operations = (0..<count).map { _ in
                    manager.httpRequestOperation(with: Request(url: server.url("/get")), success: nil, failure: nil)
                }
                let progress = Recorder<(Int, Int)>()
                let completed: [HTTPRequestOperation] = await awaitCallback { done in
                    let batch = HTTPRequestOperation.batch(
                        of: operations, completionQueue: Self.queue,
                        progress: { progress.append(($0, $1)) },
                        completion: { done($0) })
                    manager.operationQueue.addOperations(batch, waitUntilFinished: false)
                }
                #expect(completed.count == count)
                #expect(progress.all.map(\.0) == Array(1...count))
                #expect(progress.all.allSatisfy { $0.1 == count })
            }
        }
    }

    /// A retrier that wants a serializer's failures (Alamofire's way) is asked about an
    /// operation's, as about an `async` call's: a 200 whose body the operation's serializer
    /// refuses is sent again on the same task. The operation's task checked nothing.
    @Test func aSerializerFailureOfAnOperationGoesToTheRetrier() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let hits = failingRoute(
                    server, "/half-written", failures: 1, status: .ok, headers: [.contentType: "application/json"], failureBody: Data("[1,".utf8))
                let asked = NIOLockedValueBox<[String]>([])
                manager.sessionManager.interceptor = Retrier { attempt in
                    asked.withLockedValue { $0.append(attempt.error.map { "\($0.code)" } ?? "none") }
                    return attempt.error?.code == .responseSerializationFailed && attempt.retryCount == 0 ? .retry() : .doNotRetry
                }
                manager.responseSerializer = JSONResponseSerializer()
                let outcome: Outcome = await awaitCallback { done in
                    manager.get("half-written", success: { done(.success($0, $1, onQueue: true)) }, failure: { done(.failure($0, $1, onQueue: true)) })
                }
                #expect(outcome.error == nil, "\(String(describing: outcome.error))")
                #expect(hits.withLockedValue { $0 } == 2)
                #expect(asked.withLockedValue { $0 } == ["responseSerializationFailed"])
            }
        }
    }

    @Test func invalidatingLetsTheRunningOperationFinishAndFailsTheQueuedOnes() async throws {
        try await withTestServer { server in
            // `/hold` answers once the test has invalidated the manager.
            let arrived = OneShotGate()
            let released = OneShotGate()
            server.route("/hold") { _ in
                arrived.open()
                await withCheckedContinuation { continuation in released.whenOpen { continuation.resume() } }
                return TestServer.Response(body: Data("held".utf8))
            }
            let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
            manager.completionQueue = Self.queue
            manager.responseSerializer = HTTPResponseSerializer()
            manager.operationQueue.maxConcurrentOperationCount = 1
            let outcomes = Recorder<(String, CourierError.Code?)>()
            for path in ["hold", "get"] {
                manager.get(path, success: { _, _ in outcomes.append((path, nil)) }, failure: { _, error in outcomes.append((path, error.code)) })
            }
            #expect(await arrived.wait(), "the held request never reached the server")
            Self.invalidateAtOnce(manager)
            released.open()
            #expect(await outcomes.wait { $0.count == 2 })
            let byPath = Dictionary(uniqueKeysWithValues: outcomes.all.map { ($0.0, $0.1) })
            #expect(byPath["hold"]! == nil, "the running operation finished")
            #expect(byPath["get"]! == .sessionInvalidated)
            #expect(server.requestCount == 1)
            await manager.invalidate(cancelingOperations: false)
        }
    }

    /// The synchronous invalidation (an `async` caller would get the `async` twin).
    private static func invalidateAtOnce(_ manager: HTTPRequestOperationManager) {
        manager.invalidate(cancelingOperations: false)
    }

    /// Nobody keeps these operations: Foundation may run a completion block after its queue let go
    /// of the operation, and the block must still have it.
    @Test func operationsNobodyKeepsStillCallBack() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let done = Recorder<Bool>()
                for _ in 0..<200 {
                    manager.get("get", success: { operation, _ in done.append(operation.response?.status.code == 200) }, failure: { _, _ in done.append(false) })
                }
                #expect(await done.wait { $0.count == 200 })
                #expect(done.all.allSatisfy { $0 })
            }
        }
    }

    @Test func aStandaloneOperationRunsOnTheSharedManagerWhenStarted() async throws {
        try await withTestServer { server in
            let operation = HTTPRequestOperation(request: Request(url: server.url("/bytes/64")))
            operation.completionQueue = Self.queue
            let outcome: Outcome = await awaitCallback { done in
                operation.setCompletionBlockWithSuccess({ done(.success($0, $1, onQueue: Self.onQueue())) }, failure: { done(.failure($0, $1, onQueue: true)) })
                operation.start()
            }
            #expect(outcome.error == nil)
            #expect((outcome.object as? Data)?.count == 64)
            #expect(operation.sessionManager === HTTPSessionManager.shared)
        }
    }

    /// As AFNetworking's `cancel`, which does nothing to a finished operation: `isCancelled` stays
    /// false and the result stands. A second `start()` makes no second task, and the completion ran
    /// once.
    @Test func aFinishedOperationIgnoresCancelAndStart() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                let outcomes = Recorder<CourierError?>()
                let operation = manager.httpRequestOperation(
                    with: Request(url: server.url("/get")),
                    success: { _, _ in outcomes.append(nil) }, failure: { _, error in outcomes.append(error) })
                manager.operationQueue.addOperation(operation)
                #expect(await outcomes.wait { $0.count == 1 })
                let task = operation.task
                operation.cancel()
                operation.start()
                #expect(!operation.isCancelled, "cancel() changed a finished operation")
                #expect(operation.isFinished && !operation.isExecuting)
                #expect(operation.error == nil)
                #expect(operation.responseObject != nil)
                #expect(operation.task === task)
                // Anything the calls above queued on the completion queue has run after this.
                await withCheckedContinuation { continuation in Self.queue.async { continuation.resume() } }
                #expect(outcomes.all == [nil])
                #expect(server.requestCount == 1)
            }
        }
    }

    /// `setCompletionBlockWithSuccess` makes AFNetworking's deliberate cycle (the block holds the
    /// operation) and breaks it once the block ran: the operation, its blocks and its serializer
    /// are all freed. The serializer ran once, however often `responseObject` is read.
    @Test func anOperationAndItsBlocksAreReleasedOnceItRan() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let released = Recorder<String>()
                let succeeded = Recorder<Int>()
                let calls = NIOLockedValueBox(0)
                do {
                    let blocks = ReleaseProbe("blocks", released)
                    let operation = manager.httpRequestOperation(
                        with: Request(url: server.url("/bytes/16")),
                        success: { operation, object in
                            _ = blocks
                            _ = (operation.responseObject, operation.responseObject)
                            succeeded.append((object as? Data)?.count ?? -1)
                        },
                        failure: { _, _ in
                            _ = blocks
                            succeeded.append(-1)
                        })
                    operation.responseSerializer = CountingSerializer(calls: calls, probe: ReleaseProbe("operation", released))
                    operation.setDownloadProgressBlock { _, _, _ in _ = blocks }
                    manager.operationQueue.addOperation(operation)
                }
                #expect(await succeeded.wait { $0.count == 1 })
                #expect(succeeded.all == [16])
                #expect(await released.wait { Set($0) == ["blocks", "operation"] }, "still held: \(Set(["blocks", "operation"]).subtracting(released.all))")
                #expect(calls.withLockedValue { $0 } == 1)
            }
        }
    }

    /// As AFNetworking's `pause`: refused on a cancelled or finished operation. A paused operation
    /// that is cancelled ends with `.cancelled` and is no longer paused.
    @Test func pauseIsRefusedOnceCancelledAndEndsWithTheOperation() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let outcomes = Recorder<CourierError?>()
                let success: HTTPRequestOperationManager.Success = { _, _ in outcomes.append(nil) }
                let failure: HTTPRequestOperationManager.Failure = { _, error in outcomes.append(error) }

                let cancelled = manager.httpRequestOperation(with: Request(url: server.url("/get")), success: success, failure: failure)
                cancelled.cancel()
                cancelled.pause()
                #expect(!cancelled.isPaused, "a cancelled operation was paused")
                manager.operationQueue.addOperation(cancelled)
                #expect(await outcomes.wait { $0.count == 1 })
                #expect(outcomes.all.first??.code == .cancelled)

                // Paused, then cancelled, once its request is on the server (which answers late).
                let arrival = ArrivalAction()
                server.routeCallingOnArrival("/hold", arrival)
                let paused = manager.httpRequestOperation(with: Request(url: server.url("/hold")), success: success, failure: failure)
                arrival.set {
                    paused.pause()
                    paused.cancel()
                }
                manager.operationQueue.addOperation(paused)
                #expect(await outcomes.wait { $0.count == 2 }, "the paused operation did not end when cancelled")
                #expect(outcomes.all.last??.code == .cancelled)
                #expect(paused.isFinished && paused.isCancelled && !paused.isExecuting)
                #expect(!paused.isPaused, "a finished operation still says it is paused")
                paused.pause()
                #expect(!paused.isPaused, "a finished operation was paused")
            }
        }
    }

    /// A `pause()` racing the operation's end: it checked that the operation had not finished,
    /// then set its flag in a second transaction, after the end had cleared it, and a finished
    /// operation said it was paused. Operations on a manager whose tasks fail at once (no
    /// socket), each started on another thread and paused and resumed here until it finished:
    /// none is paused once finished. A stress test (the window is narrow, so the old code failed
    /// it only now and then); it cannot fail on correct code.
    @Test func aPauseRacingTheEndLeavesNoFinishedOperationPaused() async throws {
        let manager = await Self.invalidatedManager()
        let finished = Recorder<Void>()
        for _ in 0..<500 {
            let operation = manager.httpRequestOperation(
                with: Request(url: URL(string: "http://127.0.0.1:9/get")!),
                success: { _, _ in finished.append(()) }, failure: { _, _ in finished.append(()) })
            DispatchQueue.global().async { operation.start() }
            // Resumed after each pause that did not see the end: an operation paused before its
            // task was made sends nothing until then.
            while !operation.isFinished {
                operation.pause()
                if operation.isFinished { break }
                operation.resume()
            }
            #expect(!operation.isPaused, "a finished operation says it is paused")
        }
        #expect(await finished.wait { $0.count == 500 })
    }

    /// Paused before it starts, as an AFNetworking operation paused while queued: it is not ready,
    /// so the queue leaves it and its slot (an operation behind it runs), and nothing is sent
    /// until `resume()`. It was started by the queue and its task suspended after the resume, so
    /// its request had gone out (a `POST`'s work done) and it held the queue's one slot.
    @Test func anOperationPausedBeforeItStartsSendsNothingUntilResumed() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                manager.operationQueue.maxConcurrentOperationCount = 1
                let held = "/held"
                let heldCount = Self.counted(server, held)
                let finished = Recorder<String>()
                let paused = manager.httpRequestOperation(
                    with: Request(method: .post, url: server.url(held)),
                    success: { _, _ in finished.append("paused") }, failure: { _, error in finished.append("paused \(error.code)") })
                paused.pause()
                #expect(!paused.isReady)
                let behind = manager.httpRequestOperation(
                    with: Request(url: server.url("/get")),
                    success: { _, _ in finished.append("behind") }, failure: { _, error in finished.append("behind \(error.code)") })
                manager.operationQueue.addOperation(paused)
                manager.operationQueue.addOperation(behind)
                #expect(await finished.wait { $0.count == 1 })
                #expect(finished.all == ["behind"], "the operation behind the paused one ran in the one slot")
                #expect(heldCount() == 0, "the paused operation sent its request")
                #expect(paused.isPaused && !paused.isExecuting && !paused.isFinished && paused.task == nil)
                paused.resume()
                #expect(await finished.wait { $0.count == 2 })
                #expect(finished.all == ["behind", "paused"])
                #expect(heldCount() == 1)
            }
        }
    }

    /// Cancelled while paused before it started, the operation finishes cancelled (the queue
    /// starts a cancelled operation) and sends nothing.
    @Test func anOperationPausedThenCancelledBeforeItStartsFinishesCancelled() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let path = "/never"
                let count = Self.counted(server, path)
                let outcome: Outcome = await awaitCallback { done in
                    let operation = manager.httpRequestOperation(
                        with: Request(url: server.url(path)),
                        success: { done(.success($0, $1, onQueue: true)) }, failure: { done(.failure($0, $1, onQueue: true)) })
                    operation.pause()
                    manager.operationQueue.addOperation(operation)
                    operation.cancel()
                }
                #expect(outcome.error?.code == .cancelled)
                #expect(count() == 0)
            }
        }
    }

    /// A `cancel()` that lands while `start()` runs, after its check for a cancellation and before
    /// the operation is executing, finds no task to cancel and nothing to end; `launch()` then
    /// refused to make a task for the cancelled operation, which stayed executing for ever: its
    /// `failure` never ran, its queue slot was never freed. Now `launch()` finishes it cancelled.
    /// Many operations, each cancelled right after it is queued, on a manager whose tasks fail at
    /// once (no socket): every one finishes, and its completion runs once. A stress test (the
    /// window is a few instructions wide, so the old code failed it only now and then); it cannot
    /// fail on correct code.
    @Test func everyOperationCancelledAsItStartsFinishesOnce() async throws {
        let manager = await Self.invalidatedManager()
        let count = 5_000
        let ended = NIOLockedValueBox([ObjectIdentifier: [CourierError.Code?]]())
        let changes = Changes()
        let record: @Sendable (HTTPRequestOperation?, CourierError.Code?) -> Void = { operation, code in
            guard let operation else { return }
            ended.withLockedValue { $0[ObjectIdentifier(operation), default: []].append(code) }
            changes.signal()
        }
        var operations: [HTTPRequestOperation] = []
        operations.reserveCapacity(count)
        for _ in 0..<count {
            let operation = manager.httpRequestOperation(
                with: Request(url: URL(string: "http://127.0.0.1:9/get")!),
                success: { operation, _ in record(operation, nil) }, failure: { operation, error in record(operation, error.code) })
            manager.operationQueue.addOperation(operation)
            operation.cancel()
            operations.append(operation)
        }
        let allEnded = await changes.wait { ended.withLockedValue { $0.count } == count }
        #expect(allEnded, "\(operations.filter { !$0.isFinished }.count) operations never finished")
        #expect(operations.allSatisfy { $0.isFinished && !$0.isExecuting })
        // Anything queued on the completion queue has run after this: a second completion too.
        await withCheckedContinuation { continuation in Self.queue.async { continuation.resume() } }
        let outcomes = ended.withLockedValue { $0 }
        #expect(outcomes.values.allSatisfy { $0.count == 1 }, "a completion ran more than once")
        // Cancelled before its task was made, or its task failed at once on the invalidated manager.
        #expect(outcomes.values.joined().allSatisfy { $0 == .cancelled || $0 == .sessionInvalidated })
        #expect(await eventually { manager.operationQueue.operationCount == 0 }, "the queue kept operations")
    }

    /// Started by hand before its dependency finished, an operation does nothing (AFNetworking's
    /// `start` asks `isReady`); it ran at once.
    @Test func startingAnOperationWhoseDependencyHasNotFinishedDoesNothing() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let first = HTTPRequestOperation(request: Request(url: server.url("/get")), sessionManager: manager.sessionManager)
                let second = HTTPRequestOperation(request: Request(url: server.url("/get")), sessionManager: manager.sessionManager)
                second.addDependency(first)
                second.start()
                #expect(!second.isExecuting && !second.isFinished && second.task == nil)
                #expect(server.requestCount == 0)
            }
        }
    }

    /// `success` runs in the manager's `completionGroup`, given to each operation: the group is
    /// entered while `success` runs, and notified only once it has returned.
    @Test func successRunsInTheCompletionGroup() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                let group = DispatchGroup()
                manager.completionGroup = group
                // A queue of this test's own: its `success` blocks it until the test says.
                manager.completionQueue = DispatchQueue(label: "courier.tests.operations.group")
                let held = HeldSuccess()
                manager.get("get", success: held.success, failure: held.failure)
                #expect(await held.started.wait { $0.count == 1 })
                // Not waiting: whether the group is entered while `success` runs.
                #expect(group.wait(timeout: .now()) == .timedOut, "success runs outside the group")
                let notified: Bool = await awaitCallback { done in
                    group.notify(queue: .global()) { done(held.hasReturned) }
                    held.proceed.signal()
                }
                #expect(notified, "the group was notified while success was running")
            }
        }
    }

    /// A plain `completionBlock` runs as AFNetworking 2.x's (`AFURLConnectionOperation`'s
    /// `setCompletionBlock:`): on the operation's completion queue, in its completion group. It
    /// ran on a Foundation thread, outside the group.
    @Test func aPlainCompletionBlockRunsOnTheCompletionQueueInTheGroup() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                // A queue of this test's own: the block holds it until the test says.
                let queue = DispatchQueue(label: "courier.tests.operations.plain")
                queue.setSpecific(key: TestQueues.key, value: "plain")
                let group = DispatchGroup()
                let operation = manager.httpRequestOperation(with: Request(url: server.url("/get")), success: nil, failure: nil)
                operation.completionQueue = queue
                operation.completionGroup = group
                let started = Recorder<Bool>()
                let proceed = DispatchSemaphore(value: 0)
                operation.completionBlock = {
                    started.append(DispatchQueue.getSpecific(key: TestQueues.key) == "plain")
                    proceed.wait()
                }
                manager.operationQueue.addOperation(operation)
                #expect(await started.wait { $0.count == 1 })
                #expect(started.all == [true], "the completion block ran off the completion queue")
                // Not waiting: whether the group is entered while the block runs.
                #expect(group.wait(timeout: .now()) == .timedOut, "the completion block runs outside the group")
                let notified: Bool = await awaitCallback { done in
                    group.notify(queue: .global()) { done(true) }
                    proceed.signal()
                }
                #expect(notified)
            }
        }
    }

    /// AFNetworking's empty batch: one operation, which calls `completion` with no operations.
    @Test func anEmptyBatchIsOneOperationThatCompletesWithNone() async throws {
        let queue = OperationQueue()
        let completed: [HTTPRequestOperation] = await awaitCallback { done in
            let batch = HTTPRequestOperation.batch(
                of: [], completionQueue: Self.queue,
                progress: { _, _ in Issue.record("progress for an empty batch") },
                completion: { done($0) })
            #expect(batch.count == 1)
            queue.addOperations(batch, waitUntilFinished: false)
        }
        #expect(completed.isEmpty)
    }

    /// AFHTTPRequestOperationManager's base URL: a path without a trailing slash gets one, so a
    /// relative string goes under it; a string starting with `/` goes from the root, an absolute
    /// URL string is used as it is.
    @Test func urlStringsResolveAgainstTheBaseURLAsAFNetworkingDoes() async throws {
        try await withTestServer { server in
            let manager = HTTPRequestOperationManager(baseURL: server.url("/anything/v1"))
            manager.completionQueue = Self.queue
            #expect(manager.baseURL?.absoluteString == server.url("/anything/v1/").absoluteString)
            let cases = [("users", "/anything/v1/users"), ("/get", "/get"), (server.url("/anything/other").absoluteString, "/anything/other")]
            for (urlString, path) in cases {
                let outcome: Outcome = await awaitCallback { done in
                    manager.get(urlString, success: { done(.success($0, $1, onQueue: true)) }, failure: { done(.failure($0, $1, onQueue: true)) })
                }
                #expect(outcome.error == nil, "\(urlString)")
                #expect(outcome.object.json?["url"] as? String == server.url(path).absoluteString, "\(urlString)")
            }
            await manager.invalidate(cancelingOperations: true)
        }
    }

    /// AFNetworking's `setRedirectResponseBlock:` is the request's ``Redirector``: the operation's
    /// task asks it, and a nil request stops at the redirect.
    @Test func theRequestsRedirectorDecidesTheOperationsRedirects() async throws {
        try await withTestServer { server in
            try await self.withOperationManager(server) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                let asked = Recorder<Int>()
                var request = Request(url: server.url("/redirect/1"))
                request.redirector = .modify { _, _, response in
                    asked.append(response.status.code)
                    return nil
                }
                let outcome: Outcome = await awaitCallback { done in
                    let operation = manager.httpRequestOperation(
                        with: request, success: { done(.success($0, $1, onQueue: true)) }, failure: { done(.failure($0, $1, onQueue: true)) })
                    manager.operationQueue.addOperation(operation)
                }
                guard case .failure(let operation?, let error, _) = outcome else {
                    Issue.record("not a failure with an operation")
                    return
                }
                #expect(asked.all == [302])
                #expect(error.code == .unacceptableStatusCode)
                #expect(operation.response?.status.code == 302)
                #expect(server.requestCount == 1)
            }
        }
    }
}

/// Tells a recorder its label when it is freed: whatever held it let go.
private final class ReleaseProbe: Sendable {
    let label: String
    let released: Recorder<String>
    init(_ label: String, _ released: Recorder<String>) {
        self.label = label
        self.released = released
    }
    deinit { self.released.append(self.label) }
}

/// ``HTTPResponseSerializer`` counting its calls, holding a probe freed with the serializer.
private struct CountingSerializer: ResponseSerializer {
    let calls: NIOLockedValueBox<Int>
    let probe: ReleaseProbe

    func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> Data? {
        self.calls.withLockedValue { $0 += 1 }
        return try HTTPResponseSerializer().responseObject(for: response, data: data)
    }
}

/// The "Operations (AFNetworking 2.x)" snippet of the DocC article The session and its engine
/// (Courier.docc/SessionAndEngine.md), on the test server (printing aside).
@Test func readmeOperationsSnippetRuns() async throws {
    try await withTestServer { server in
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.operationQueue.maxConcurrentOperationCount = 2
        manager.completionQueue = DispatchQueue(label: "app.network")
        let seen = Recorder<String>()
        manager.get("get", parameters: ["page": 2], success: { operation, object in
            seen.append("get \(operation.response?.status.code ?? 0)")
        }, failure: { operation, error in
            seen.append(error.message)
        })
        let operations = ["a", "b"].map { name in
            manager.httpRequestOperation(with: Request(url: server.url("/anything/\(name)")), success: nil, failure: nil)
        }
        let batch = HTTPRequestOperation.batch(of: operations, completionQueue: DispatchQueue(label: "app.batch"), progress: { done, total in seen.append("\(done)/\(total)") },
                                               completion: { operations in seen.append("all done") })
        batch.forEach(manager.operationQueue.addOperation)
        #expect(await seen.wait { $0.count == 4 })
        #expect(Set(seen.all) == ["get 200", "1/2", "2/2", "all done"])
        await manager.invalidate(cancelingOperations: false)
    }
}
