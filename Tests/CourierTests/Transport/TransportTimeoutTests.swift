import Courier
import CourierTesting
import Foundation
import Testing

@Suite("Transport: timeouts")
struct TransportTimeoutTests {
    @Test(arguments: Transport.allCases)
    func theRequestTimeoutIsAnIdleTimeout(_ transport: Transport) async throws {
        // 20 s idle: a full CI run stalled the machine for over 4 s mid-body, and another held
        // every test for about 36 s (7 s left too little margin); the test waits the timeout out
        // once, so not 60 s.
        try await transport.run(configure: { $0.timeoutIntervalForRequest = 20 }) { server, manager in
            // The server answers after 60 s: only the 20 s idle deadline can make this a timeout.
            // (An answer after 10 s left a deadline of 7 s only 3 s of slack on a loaded machine.)
            server.routeCallingOnArrival("/late", delay: .seconds(60), ArrivalAction())
            await #expect {
                try await manager.get("late")
            } throws: { error in
                (error as? CourierError)?.code == .timedOut
            }
            // A body that keeps coming is not idle, however long it takes in all (6 s here, a
            // chunk every 0.2 s: a wide margin under the 20 s deadline on a loaded machine).
            manager.responseSerializer = HTTPResponseSerializer()
            let slow = try await manager.get("courier/slow-body/30?interval=0.2")
            #expect(slow.response.status == .ok)
            #expect(slow.data?.count == (0..<30).map { "chunk \($0)\n".utf8.count }.reduce(0, +))
        }
    }

    @Test(arguments: Transport.allCases)
    func aPerRequestTimeoutOverridesTheSessions(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            // Answered after 10 s (the session's deadline is 60 s): a wide margin for a loaded
            // machine's late timer, and still a success, failing the test, were the 0.25 s ignored.
            var request = Request(url: server.url("/delay/10"))
            request.options.timeoutInterval = 0.25
            await #expect {
                try await manager.data(for: request)
            } throws: { error in
                (error as? CourierError)?.code == .timedOut
            }
        }
    }

    @Test(arguments: Transport.allCases)
    func aPerRequestTimeoutCanBeLongerThanTheSessions(_ transport: Transport) async throws {
        try await transport.run(configure: { $0.timeoutIntervalForRequest = 0.3 }) { server, manager in
            var request = Request(url: server.url("/delay/1"))
            // Far above the session's 0.3 s: a full CI run once stalled this answer past 5 s, and
            // another held every test for about 36 s (30 s left too little margin).
            request.options.timeoutInterval = 60
            let response = try await manager.data(for: request)
            #expect(response.response.status == .ok)
        }
    }

    @Test(arguments: Transport.allCases)
    func theResourceTimeoutBoundsTheWholeTransfer(_ transport: Transport) async throws {
        try await transport.run(configure: { $0.timeoutIntervalForResource = 0.5 }) { _, manager in
            manager.responseSerializer = HTTPResponseSerializer()
            // Never idle (a chunk every 0.1 s), but 20 s in all: far past the 0.5 s, so that a
            // deadline late on a loaded machine still ends it first (2 s in all left 1.5 s of slack).
            await #expect {
                try await manager.get("courier/slow-body/200?interval=0.1")
            } throws: { error in
                (error as? CourierError)?.code == .timedOut
            }
        }
    }

    @Test(arguments: Transport.allCases)
    func aSuspendedTaskIsNotIdle(_ transport: Transport) async throws {
        // 20 s idle: on a machine busy with the whole suite, the first byte through a proxy took
        // over 3 s (a full run timed the request out via danted before it was suspended), and a
        // full CI run held every test for about 36 s (8 s left too little margin); the test waits
        // out the control request's timeout, a second longer, so not 60 s.
        try await transport.run(configure: { $0.timeoutIntervalForRequest = 20 }) { server, manager in
            manager.responseSerializer = HTTPResponseSerializer()
            var hooks = SessionManager.Hooks()
            let suspended = Recorder<Void>()
            hooks.dataTaskDidReceiveData = { _, task, _ in
                if suspended.count == 0 {
                    task.suspend()
                    // After the suspension: the test waits on this append for it.
                    suspended.append(())
                }
            }
            manager.hooks = hooks
            let finished = Recorder<CourierError?>()
            let size = 2_000_000
            let task = manager.dataTask(with: Request(url: server.url("/courier/big/\(size)"))) { _, _, error in finished.append(error) }
            task.resume()
            #expect(await suspended.wait { _ in task.state == .suspended })
            // The event waited for instead of a pause: a request started after the suspension,
            // on the same engine, to a server that never answers, with an idle timeout one
            // second longer, times out. The suspended task's own idle deadline (20 s from its
            // last byte) passed a second before: had it counted, it would have failed first.
            let silence = OneShotGate()
            server.route("/silent") { _ in
                await withCheckedContinuation { continuation in silence.whenOpen { continuation.resume() } }
                return TestServer.Response(body: Data())
            }
            var control = Request(url: server.url("/silent"))
            control.options.timeoutInterval = 21
            let controlError = await awaitCallback { (finish: @escaping @Sendable (CourierError?) -> Void) in
                manager.dataTask(with: control) { _, _, error in finish(error) }.resume()
            }
            silence.open()
            #expect(controlError?.code == .timedOut, "the control request timed out: \(String(describing: controlError))")
            #expect(finished.count == 0, "no idle timeout while suspended")
            task.resume()
            // The rest of the body, in a debug build on a machine that may be busy with the
            // whole suite: generous, as the point is that it finishes at all.
            #expect(await finished.wait { $0.count == 1 })
            #expect(finished.all.count == 1 && finished.all.first! == nil, "completed once, without an error: \(String(describing: finished.all.first))")
            #expect(task.countOfBytesReceived == Int64(size))
        }
    }
}
