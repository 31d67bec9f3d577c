import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

@testable import Courier

/// An engine in front of a real ``NIOEngine``: its first `failing` exchanges fail as a connect
/// with no route does (`connectionFailed` over `ENETUNREACH`, from another thread, as NIO reports
/// it), the rest go over real sockets.
final class NetworkDownEngine: Engine {
    final class DeadExchange: Exchange {
        func cancel(with error: CourierError) {}
        func suspendReceiving() {}
        func resumeReceiving() {}
    }

    let base: NIOEngine
    private let remaining: NIOLockedValueBox<Int>
    private let executed = NIOLockedValueBox(0)

    init(failing: Int = 1, base: NIOEngine = NIOEngine()) {
        self.base = base
        self.remaining = NIOLockedValueBox(failing)
    }

    /// Makes the next `count` exchanges fail as the network being down.
    func failNext(_ count: Int) { self.remaining.withLockedValue { $0 = count } }

    /// How many exchanges were started, failed ones included.
    var executions: Int { self.executed.withLockedValue { $0 } }

    func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange {
        self.executed.withLockedValue { $0 += 1 }
        let fails = self.remaining.withLockedValue { remaining -> Bool in
            defer { remaining -= 1 }
            return remaining > 0
        }
        guard fails else { return self.base.execute(request, delegate: delegate) }
        let error = CourierError(
            .connectionFailed, "\(request.summary): the network or host is unreachable", request: request,
            underlyingError: IOError(errnoCode: ENETUNREACH, reason: "connect"))
        DispatchQueue.global().async { delegate.exchange(didCompleteWith: error) }
        return DeadExchange()
    }

    func shutdown() async throws { try await self.base.shutdown() }
}

/// The longest wait for the network in the tests whose network comes back (or whose wait is
/// ended otherwise): only a failing test runs it out, and it must not run out first (30 s left
/// too little margin for a full CI run, which held every test for about 36 s).
let connectivityWait: Duration = .seconds(60)

/// A manager over `engine` whose reachability is `monitor`'s, with the retry policy set, and its
/// completion handlers on the tests' completion queue.
func retryingManager(
    _ server: TestServer?, engine: any Engine, monitor: ScriptedMonitor, maximumWait: Duration = connectivityWait,
    configuration: SessionConfiguration = .default
) -> HTTPSessionManager {
    let manager = HTTPSessionManager(baseURL: server?.baseURL, engine: engine, configuration: configuration)
    manager.completionQueue = TestQueues.completion
    manager.reachabilityManager = monitor.manager()
    manager.connectivityRetry = ConnectivityRetryPolicy(maximumWait: maximumWait)
    return manager
}

/// Runs `body` with a TestServer and a retrying manager (``retryingManager(_:engine:monitor:maximumWait:configuration:)``)
/// whose engine fails its first `failing` exchanges for want of a network; the manager is
/// invalidated afterwards.
func withRetryingManager<T>(
    failing: Int = 1,
    configuration: SessionConfiguration = .default,
    _ body: (TestServer, NetworkDownEngine, ScriptedMonitor, HTTPSessionManager) async throws -> T
) async throws -> T {
    try await withTestServer { server in
        let engine = NetworkDownEngine(failing: failing)
        let monitor = ScriptedMonitor()
        let manager = retryingManager(server, engine: engine, monitor: monitor, configuration: configuration)
        defer { manager.invalidate(cancelingTasks: true) }
        return try await body(server, engine, monitor, manager)
    }
}

/// Counts `taskDidComplete` notifications for one task.
final class CompletionCounter: @unchecked Sendable {
    // @unchecked: `token` is set once in init and read only in deinit.
    private let count = NIOLockedValueBox(0)
    private var token: (any NSObjectProtocol)?

    init(_ task: SessionTask) {
        self.token = NotificationCenter.default.addObserver(forName: .taskDidComplete, object: task, queue: nil) { [count] _ in
            count.withLockedValue { $0 += 1 }
        }
    }

    var value: Int { self.count.withLockedValue { $0 } }

    deinit {
        if let token = self.token { NotificationCenter.default.removeObserver(token) }
    }
}

extension SessionTask {
    /// Whether the task is waiting for the network to retry (test-only look inside).
    var isWaitingForConnectivity: Bool { self.delegate.state.withLockedValue { $0.machine.isAwaitingRetry } }

    /// The failure the task waits to retry, while it waits.
    var connectivityRetryFailure: CourierError? {
        self.delegate.state.withLockedValue { state in
            switch state.machine.phase {
            case .awaitingRetry(let failure, _), .retryDecided(_, let failure): failure
            default: nil
            }
        }
    }
}
