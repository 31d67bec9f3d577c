import CourierTesting
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// A network namespace of the test's own (`ip netns add courier-test-<random>`), deleted at the end.
struct TestNamespace {
    let name: String
    var path: String { "/var/run/netns/\(self.name)" }

    static let ipTool: String? = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Whether this machine lets us make namespaces and veth pairs (iproute2 present, root or
    /// CAP_NET_ADMIN): checked once by making and deleting one.
    static let available: Bool = {
        guard ipTool != nil, let namespace = try? TestNamespace() else { return false }
        defer { namespace.delete() }
        return (try? Self.run(["-n", namespace.name, "link", "add", "p0", "type", "veth", "peer", "name", "p1"])) != nil
    }()

    static let skipReason: Comment =
        "network namespaces are not available here (needs iproute2's `ip` and root/CAP_NET_ADMIN): reachability tests in namespaces skipped"

    init() throws {
        self.name = "courier-test-\(UInt32.random(in: 0...UInt32.max))"
        try Self.run(["netns", "add", self.name])
    }

    /// Makes the namespace without holding a thread of the concurrency pool while `ip` runs.
    static func make() async throws -> TestNamespace {
        try await Self.offPool { try TestNamespace() }
    }

    /// Runs `ip -n NAME args…` on a thread of its own (``offThePools(_:)``).
    func ip(_ arguments: String...) async throws {
        let arguments = ["-n", self.name] + arguments
        _ = try await Self.offPool { try Self.run(arguments) }
    }

    private static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await offThePools(work)
    }

    /// The index of link `name` in the namespace, from `ip -o link show dev NAME` ("3: v0@v1: …").
    func linkIndex(_ name: String) async throws -> Int32? {
        let arguments = ["-n", self.name, "-o", "link", "show", "dev", name]
        let output = try await Self.offPool { try Self.run(arguments) }
        return output.split(separator: ":").first.flatMap { Int32($0.trimmingCharacters(in: .whitespaces)) }
    }

    func delete() {
        _ = try? Self.run(["netns", "delete", self.name])
    }

    /// A veth pair `v0`/`v1`, both up, `v0` with 10.77.0.2/24 and fd77::2/64, and an IPv4 default
    /// route through 10.77.0.1 when asked.
    func addVethPair(defaultRoute: Bool) async throws {
        try await self.ip("link", "add", "v0", "type", "veth", "peer", "name", "v1")
        try await self.ip("addr", "add", "10.77.0.2/24", "dev", "v0")
        try await self.ip("-6", "addr", "add", "fd77::2/64", "dev", "v0", "nodad")
        try await self.ip("link", "set", "v1", "up")
        try await self.ip("link", "set", "v0", "up")
        if defaultRoute { try await self.ip("route", "add", "default", "via", "10.77.0.1") }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs `ip` and returns what it printed.
    @discardableResult
    private static func run(_ arguments: [String]) throws -> String {
        guard let tool = ipTool else { throw Failure(description: "no ip tool") }
        let child = try ChildProcess.spawn(tool, arguments, standardOutput: .pipe, standardError: .pipe)
        // Small outputs: read both to the end, then reap.
        let printed = String(decoding: ChildProcess.readToEnd(child.standardOutput!), as: UTF8.self)
        let message = String(decoding: ChildProcess.readToEnd(child.standardError!), as: UTF8.self)
        guard child.waitForExit() == 0 else {
            throw Failure(description: "ip \(arguments.joined(separator: " ")): \(message)")
        }
        return printed
    }
}

extension NetworkReachabilityManager {
    /// A manager watching `namespace` instead of the process's own network.
    static func inNamespace(
        _ namespace: TestNamespace, target: ReachabilityTarget, resolver: HostResolver = .system, logger: Logger? = nil,
        configure: (inout ReachabilityEnvironment) -> Void = { _ in }
    ) -> NetworkReachabilityManager {
        var environment = ReachabilityEnvironment.system
        environment.namespacePath = namespace.path
        environment.resolver = resolver
        configure(&environment)
        return NetworkReachabilityManager(target: target, environment: environment, logger: logger)
    }

    /// Polls until the status is `expected`; returns how long it took, or nil after `limit` (a
    /// bound on a failing test, ``Changes/hangGuard`` by default: a monitor thread starting on two
    /// cores busy with the whole suite may take seconds, and a full CI run held every test for
    /// about 36 s).
    func wait(for expected: NetworkReachabilityStatus, within limit: Duration = Changes.hangGuard) async -> Duration? {
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < limit {
            if self.networkReachabilityStatus == expected { return clock.now - start }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return self.networkReachabilityStatus == expected ? clock.now - start : nil
    }
}

/// A monitor the test drives by hand.
final class ScriptedMonitor: ReachabilityMonitor {
    private let reporter = NIOLockedValueBox<(@Sendable (ReachabilityReport) -> Void)?>(nil)
    let stops = NIOLockedValueBox(0)
    /// Told when a manager starts this monitor (from then on, `send` is heard).
    private let started = NIOLockedValueBox<[NotificationWaiter]>([])

    func start(_ report: @escaping @Sendable (ReachabilityReport) -> Void) {
        let waiting = self.reporter.withLockedValue { reporter in
            reporter = report
            return self.started.withLockedValue { started in
                defer { started = [] }
                return started
            }
        }
        for waiter in waiting { waiter.deliver(nil) }
    }

    /// Returns once a manager has started this monitor (at once if one has), or after the hang
    /// guard (a bound for a failing test): the event a test waits for before it reports statuses.
    func waitUntilStarted() async {
        let waiter = NotificationWaiter()
        let now = self.reporter.withLockedValue { reporter -> Bool in
            if reporter != nil { return true }
            self.started.withLockedValue { $0.append(waiter) }
            return false
        }
        if now { return }
        _ = await waiter.wait()
    }

    func stop() {
        self.reporter.withLockedValue { $0 = nil }
        self.stops.withLockedValue { $0 += 1 }
    }

    func send(_ status: NetworkReachabilityStatus, failure: ReachabilityFailure? = nil) {
        self.reporter.withLockedValue { $0 }?(ReachabilityReport(status: status, failure: failure))
    }

    /// A manager whose monitor is `self`.
    func manager(target: ReachabilityTarget = .defaultRoute) -> NetworkReachabilityManager {
        var environment = ReachabilityEnvironment.system
        environment.makeMonitor = { [self] _, _ in self }
        return NetworkReachabilityManager(target: target, environment: environment)
    }
}

/// Keeps log messages in memory.
struct CapturingLogHandler: LogHandler {
    let messages: NIOLockedValueBox<[String]>
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        self.messages.withLockedValue { $0.append("\(event.level): \(event.message)") }
    }

    static func logger() -> (Logger, NIOLockedValueBox<[String]>) {
        let messages = NIOLockedValueBox<[String]>([])
        return (Logger(label: "test", factory: { _ in CapturingLogHandler(messages: messages) }), messages)
    }
}
