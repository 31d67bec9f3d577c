import Courier
import CourierTesting
import Dispatch
import Foundation
import Testing

@Suite("Bad input gives typed errors")
struct BadInputTests {
    @Test(arguments: ["http://[::1", "users", "ftp://127.0.0.1/x"])
    func unbuildableRequestCallsFailureWithNilTaskAndMakesNone(_ urlString: String) async throws {
        let manager = HTTPSessionManager(engine: RefusingEngine())
        manager.completionQueue = TestQueues.completion
        let returnedNil = Recorder<Bool>()
        let result: (Bool, CourierError, String?) = await awaitCallback { finish in
            let task = manager.get(urlString, success: { _, _ in Issue.record("no success expected") }, failure: { task, error in
                finish((task == nil, error, DispatchQueue.getSpecific(key: TestQueues.key)))
            })
            returnedNil.append(task == nil)
        }
        #expect(returnedNil.all == [true])
        #expect(result.0, "failure gets a nil task")
        #expect([.invalidURL, .missingBaseURL, .unsupportedScheme].contains(result.1.code))
        #expect(result.2 == "completion", "failure is called on the completion queue")
        #expect(manager.tasks.isEmpty)
    }

    @Test func refusedConnection() async throws {
        try await withManager(baseURL: URL(string: "http://127.0.0.1:\(closedPort())/")) { manager in
            let started = ContinuousClock.now
            await #expect {
                try await manager.get("get")
            } throws: { error in
                let error = error as? CourierError
                return error?.code == .connectionFailed && error?.request != nil
            }
            // AHC's pool would retry with back-off until the 10 s connect timeout and report a
            // timeout; a refusal must come well before that, as itself.
            #expect(ContinuousClock.now - started < .seconds(8), "no back-off retries")
        }
    }

    @Test func serverClosingMidBody() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                for path in ["courier/truncated/1000", "courier/close-after-head"] {
                    await #expect("\(path)") {
                        try await manager.get(path)
                    } throws: { error in
                        (error as? CourierError)?.code == .connectionClosed
                    }
                }
                await #expect {
                    try await manager.get("courier/reset")
                } throws: { error in
                    [.connectionClosed, .invalidResponse].contains((error as? CourierError)?.code)
                }
            }
        }
    }

    @Test func bodyOverTheMaximum() async throws {
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.maximumResponseBodySize = 100_000
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                await #expect {
                    try await manager.response(method: .get, urlString: "courier/big/1000000", serializer: DataResponseSerializer())
                } throws: { error in
                    let error = error as? CourierError
                    return error?.code == .responseTooLarge && error?.response?.status == .ok
                }
                let small = try await manager.response(method: .get, urlString: "bytes/1000", serializer: DataResponseSerializer())
                #expect(small.value.count == 1000)
            }
        }
    }

    @Test func requestTimeoutIsAnIdleTimeout() async throws {
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.timeoutIntervalForRequest = 2
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                // The server answers after 5 s: only the 2 s idle deadline can make this a timeout.
                await #expect {
                    try await manager.get("delay/5")
                } throws: { error in
                    (error as? CourierError)?.code == .timedOut
                }
                // A body that keeps coming is not idle, however long it takes in all: 5 s here, a
                // chunk every 0.2 s, against a 4 s idle deadline (this request's own) — a gap 20
                // times the interval, as the whole suite on two cores once made a 2 s one.
                var slow = Request(url: server.url("/courier/slow-body/25?interval=0.2"))
                slow.options.timeoutInterval = 4
                let answer = try await manager.response(for: slow, serializer: DataResponseSerializer())
                #expect(answer.response.status == .ok)
            }
        }
    }

    @Test func perRequestTimeoutOverridesTheSession() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                var request = Request(url: server.url("/delay/3"))
                request.options.timeoutInterval = 0.25
                await #expect {
                    try await manager.data(for: request)
                } throws: { error in
                    (error as? CourierError)?.code == .timedOut
                }
            }
        }
    }

    @Test func perRequestTimeoutCanBeLongerThanTheSessions() async throws {
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.timeoutIntervalForRequest = 0.3
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                var request = Request(url: server.url("/delay/1"))
                request.options.timeoutInterval = 5
                let response = try await manager.data(for: request)
                #expect(response.response.status == .ok)
            }
        }
    }

    @Test func aSuspendedTaskIsNotIdle() async throws {
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            // 3 s idle: a body that keeps coming on a busy machine can still pause for a second.
            configuration.timeoutIntervalForRequest = 3
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                var hooks = SessionManager.Hooks()
                let suspended = Recorder<Void>()
                hooks.dataTaskDidReceiveData = { _, task, _ in
                    if suspended.count == 0 {
                        suspended.append(())
                        task.suspend()
                    }
                }
                manager.hooks = hooks
                let finished = Recorder<CourierError?>()
                let task = manager.dataTask(with: Request(url: server.url("/courier/big/2000000"))) { _, _, error in finished.append(error) }
                task.resume()
                #expect(await eventually(within: 10) { task.state == .suspended })
                // The event waited for instead of a pause: a request started after the suspension,
                // on the same engine, to a server that never answers, with an idle timeout one
                // second longer, times out. The suspended task's own idle deadline (3 s from its
                // last byte) passed a second before: had it counted, it would have failed first.
                let silence = OneShotGate()
                server.route("/silent") { _ in
                    await withCheckedContinuation { continuation in silence.whenOpen { continuation.resume() } }
                    return TestServer.Response(body: Data())
                }
                var control = Request(url: server.url("/silent"))
                control.options.timeoutInterval = 4
                let controlError = await awaitCallback { (finish: @escaping @Sendable (CourierError?) -> Void) in
                    manager.dataTask(with: control) { _, _, error in finish(error) }.resume()
                }
                silence.open()
                #expect(controlError?.code == .timedOut, "the control request timed out: \(String(describing: controlError))")
                #expect(finished.count == 0, "no idle timeout while suspended")
                task.resume()
                // The rest of the body, in a debug build on a machine that may be busy with the
                // whole suite: generous, as the point is that it finishes at all.
                #expect(await eventually(within: 60) { finished.count == 1 })
                #expect(finished.all.count == 1 && finished.all.first! == nil, "completed once, without an error")
            }
        }
    }

    @Test func resourceTimeoutBoundsTheWholeTransfer() async throws {
        try await withTestServer { server in
            var configuration = SessionConfiguration.default
            configuration.timeoutIntervalForResource = 0.5
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                await #expect {
                    try await manager.get("courier/slow-body/20?interval=0.1")
                } throws: { error in
                    (error as? CourierError)?.code == .timedOut
                }
            }
        }
    }

    @Test func taskResumedAfterInvalidation() async throws {
        try await withTestServer { server in
            let manager = HTTPSessionManager(baseURL: server.baseURL)
            manager.completionQueue = TestQueues.completion
            let task = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, _ in }
            await manager.invalidate(cancelingTasks: false)
            let error: CourierError? = await awaitCallback { finish in
                let late = manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in finish(error) }
                late.resume()
            }
            #expect(error?.code == .sessionInvalidated)
            await #expect {
                try await manager.get("get")
            } throws: { error in
                (error as? CourierError)?.code == .sessionInvalidated
            }
            task.cancel()
            #expect(server.requestCount == 0)
        }
    }

    @Test func invalidateCancelingTasksCancelsRunningOnes() async throws {
        try await withTestServer { server in
            let manager = HTTPSessionManager(baseURL: server.baseURL)
            manager.completionQueue = TestQueues.completion
            // Invalidates when the request reaches the server, which answers only 10 s later.
            let arrival = ArrivalAction()
            arrival.set { manager.invalidate(cancelingTasks: true) }
            server.routeCallingOnArrival("/hold", arrival)
            let error: CourierError? = await awaitCallback { finish in
                manager.get("hold", success: { _, _ in finish(nil) }, failure: { _, error in finish(error) })
            }
            #expect(error?.code == .cancelled)
        }
    }

    @Test func invalidateWithoutCancelingLetsRunningTasksFinish() async throws {
        try await withTestServer { server in
            let manager = HTTPSessionManager(baseURL: server.baseURL)
            manager.completionQueue = TestQueues.completion
            let status: Int? = await awaitCallback { finish in
                manager.get("delay/0.3", success: { task, _ in finish(task.response?.status.code) }, failure: { _, _ in finish(nil) })
                manager.invalidate(cancelingTasks: false)
            }
            #expect(status == 200)
        }
    }

    @Test func untrustedCertificateFailsTheHandshake() async throws {
        try await withTestServer(.https(.selfSigned)) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                await #expect {
                    try await manager.get("get")
                } throws: { error in
                    (error as? CourierError)?.code == .serverTrustEvaluationFailed
                        && ((error as? CourierError)?.underlyingError as? ServerTrustFailure)?.reason == .untrustedRoot
                }
            }
        }
    }
}
