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

    /// The errors for a URL the manager cannot request name it without its password.
    @Test(arguments: [("ftp://ann:secret@h/", "x", "ftp://ann:***@h/x"), ("http://ann:secret@/", "", "http://ann:***@/")])
    func anUnrequestableURLsErrorDoesNotCarryThePassword(_ base: String, _ path: String, _ named: String) async throws {
        let manager = HTTPSessionManager(baseURL: URL(string: base), engine: RefusingEngine())
        await #expect {
            _ = try await manager.get(path)
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.message.contains(named) && !error.message.contains("secret")
        }
    }

    /// A URL string the serializer or the manager refuses (a port out of range, a space in the
    /// host) was named in the error with its password, which the other URL errors hide.
    @Test(arguments: ["http://ann:secret@h:99999/x", "http://ann:secret@h x/"])
    func aRefusedURLStringsErrorDoesNotCarryThePassword(_ string: String) async throws {
        #expect {
            try HTTPRequestSerializer().request(method: .get, urlString: string, parameters: nil)
        } throws: { error in
            Self.namesItWithoutThePassword(error)
        }
        for base in [nil, URL(string: "http://h/v1/")] {
            let manager = HTTPSessionManager(baseURL: base, engine: RefusingEngine())
            await #expect {
                _ = try await manager.get(string)
            } throws: { error in
                Self.namesItWithoutThePassword(error)
            }
        }
    }

    static func namesItWithoutThePassword(_ error: any Error) -> Bool {
        guard let error = error as? CourierError else { return false }
        return error.code == .invalidURL && error.message.contains("ann:***@h") && !error.message.contains("secret")
    }

    /// A host that percent-decodes to a line break (or a space, or a delimiter) is a typed error
    /// before any connection, for a data task and a WebSocket task alike: its bytes would have
    /// gone into `Host`, TLS's server name and a proxy's `CONNECT` line.
    @Test func aHostThatDecodesToALineBreakIsAnInvalidURL() async throws {
        let string = "https://x%0D%0AX-Injected%3A%201/"
        let manager = HTTPSessionManager(configuration: .default)
        await #expect {
            _ = try await manager.get(string)
        } throws: { error in
            guard let error = error as? CourierError else { return false }
            return error.code == .invalidURL && error.message.contains("percent-decoded")
        }
        let webSocket = manager.webSocketTask(with: Request(url: try #require(URL(string: "wss://x%0D%0AX-Injected%3A%201/"))))
        await #expect(throws: CourierError.self) { try await webSocket.waitUntilOpen() }
        #expect(webSocket.error?.code == .invalidURL)
        #expect(webSocket.error?.message.contains("percent-decoded") == true, "\(String(describing: webSocket.error))")
        await manager.invalidate(cancelingTasks: true)
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

    @Test func anAwaitedInvalidationReturnsAfterTheLastCompletionHandler() async throws {
        // The engine stopped, `.sessionDidInvalidate` was posted and the wait returned once the
        // last task left the registry, before its handler (queued on the completion queue) ran:
        // a program that awaited the invalidation and exited lost it.
        try await withTestServer { server in
            let manager = SessionManager()
            let queue = DispatchQueue(label: "held-completions")
            manager.completionQueue = queue
            let order = Recorder<String>()
            let observer = NotificationCenter.default.addObserver(forName: .sessionDidInvalidate, object: manager, queue: nil) { _ in
                order.append("invalidated")
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            // The handler cannot run until the queue resumes.
            queue.suspend()
            manager.dataTask(with: Request(url: server.url("/get"))) { _, _, _ in order.append("handler") }.resume()
            let invalidate: () -> Void = { manager.invalidate(cancelingTasks: false) }
            invalidate()
            #expect(await eventually { manager.tasks.isEmpty }, "the task has ended; its handler waits")
            queue.resume()
            await manager.invalidate(cancelingTasks: false)
            #expect(order.all == ["handler", "invalidated"])
        }
    }
}

@Suite struct StreamTaskInvalidationTests {
    @Test func anAwaitedInvalidationReturnsAfterAStreamTasksLastEvent() async throws {
        // A streamed task's callback form was not counted: the engine stopped and the wait
        // returned once the task left the registry, before its completion event (queued on the
        // completion queue) was handed on.
        try await withTestServer { server in
            let manager = SessionManager()
            let queue = DispatchQueue(label: "held-stream-events")
            manager.completionQueue = queue
            let order = Recorder<String>()
            let observer = NotificationCenter.default.addObserver(forName: .sessionDidInvalidate, object: manager, queue: nil) { _ in
                order.append("invalidated")
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            // No event can be handed on until the queue resumes.
            queue.suspend()
            manager.streamTask(with: Request(url: server.url("/get"))) { event in
                if case .completion = event { order.append("completion") }
            }.resume()
            let invalidate: () -> Void = { manager.invalidate(cancelingTasks: false) }
            invalidate()
            #expect(await eventually { manager.tasks.isEmpty }, "the task has ended; its events wait")
            queue.resume()
            await manager.invalidate(cancelingTasks: false)
            #expect(order.all == ["completion", "invalidated"])
        }
    }
}
