import CCourierNetlink
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import Courier

/// Runs async jobs on one NIO event loop (so on one thread), for code that must run in the
/// network namespace that thread entered: NIO makes a listening socket on the thread that binds.
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// An engine whose exchanges start on one event loop's thread, which entered a namespace: a
/// connection to an IP address is made by the thread that starts the exchange, so every socket of
/// the engine is the namespace's.
final class NamespaceEngine: Engine {
    let base: NIOEngine
    let loop: any EventLoop

    init(loop: any EventLoop) {
        self.loop = loop
        self.base = NIOEngine(eventLoopGroup: loop)
    }

    private let executed = NIOLockedValueBox(0)
    var executions: Int { self.executed.withLockedValue { $0 } }

    func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange {
        self.executed.withLockedValue { $0 += 1 }
        if self.loop.inEventLoop { return self.base.execute(request, delegate: delegate) }
        let base = self.base
        let box = NIOLockedValueBox<(any Exchange)?>(nil)
        // Starting an exchange does not block: waiting here is short.
        try? self.loop.submit { box.withLockedValue { $0 = base.execute(request, delegate: delegate) } }.wait()
        return box.withLockedValue { $0 }!
    }

    func shutdown() async throws { try await self.base.shutdown() }
}

/// The retry against a real kernel: a server and the engine's sockets live in a namespace of the
/// test's own, where the address the request goes to belongs to a veth; removing that address
/// removes its routes, so connecting fails with `ENETUNREACH` from the kernel; adding it back makes
/// the netlink monitor report the address reachable, and the task is sent again. Traffic never
/// leaves the namespace (a local address is delivered over its loopback). (Taking the link down
/// would not do: Linux keeps delivering to a down link's own addresses.)
@Suite(
    "Connectivity retry in a network namespace",
    .serialized,
    .enabled(if: TestNamespace.available, TestNamespace.skipReason))
struct NamespaceConnectivityRetryTests {
    @Test func aTaskThatMetALinkDownIsSentAgainWhenTheLinkComesUp() async throws {
        let namespace = try await TestNamespace.make()
        defer { namespace.delete() }
        try await namespace.addVethPair(defaultRoute: false)
        // A local address is delivered over the namespace's loopback, down in a new namespace.
        try await namespace.ip("link", "set", "lo", "up")
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let entered = try await loop.submit { courier_enter_netns(namespace.path) }.get()
        try #require(entered == 0, "could not enter the namespace: \(entered)")

        // Listening on every address: the server keeps its socket while 10.77.0.2 comes and goes.
        var configuration = TestServer.Configuration()
        configuration.host = "0.0.0.0"
        let server = try await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) {
            try await TestServer.start(configuration)
        }
        let engine = NamespaceEngine(loop: loop)
        let manager = SessionManager(engine: engine)
        manager.completionQueue = TestQueues.completion
        manager.reachabilityManager = .inNamespace(namespace, target: .address(IPAddress("10.77.0.2")!))
        manager.connectivityRetry = ConnectivityRetryPolicy(maximumWait: connectivityWait)

        // The network goes: without its address the link has no route, and there is no default one.
        try await namespace.ip("addr", "del", "10.77.0.2/24", "dev", "v0")
        let done = AsyncStream<(HTTPResponse?, CourierError?)>.makeStream()
        let task = manager.dataTask(with: Request(url: URL(string: "http://10.77.0.2:\(server.port)/get")!)) { response, _, error in
            done.continuation.yield((response, error))
        }
        task.resume()
        #expect(await eventually { task.isWaitingForConnectivity })
        // The kernel said so: connecting found no route (ENETUNREACH).
        #expect(task.connectivityRetryFailure.map { ConnectionFailureCause($0) } == .networkDown)
        #expect(engine.executions == 1)

        // The network comes back: the monitor sees the route, the task is sent again.
        try await namespace.ip("addr", "add", "10.77.0.2/24", "dev", "v0")
        var results = done.stream.makeAsyncIterator()
        let result = await results.next()
        #expect(result?.1 == nil, "\(result?.1.map { "\($0)" } ?? "")")
        #expect(result?.0?.status == .ok)
        #expect(engine.executions == 2)

        await manager.invalidate(cancelingTasks: true)
        manager.reachabilityManager.stopMonitoring()
        try? await server.shutdown()
        try? await group.shutdownGracefully()
    }
}
