import Courier
import CourierTesting
import Dispatch
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Runs `body` with a fresh test server, shut down afterwards whatever happens.
///
/// At most ``TestServerSlots/width`` of these bodies run at once (a nested call, in the same task
/// or its children, runs within its caller's slot). Swift Testing starts every test of the
/// binary at once: a full run had about a thousand servers listening together, some 2,700
/// descriptors open, and the two cores so far behind that deadlines of seconds were missed.
@discardableResult
func withTestServer<T>(
    _ configuration: TestServer.Configuration = .init(),
    _ body: (TestServer) async throws -> T
) async throws -> T {
    _ = LiveObjectCheck.installed
    if TestServerSlots.isHeld {
        return try await startTestServer(configuration, body)
    }
    await TestServerSlots.shared.acquire()
    defer { TestServerSlots.shared.release() }
    return try await TestServerSlots.$isHeld.withValue(true) { try await startTestServer(configuration, body) }
}

/// How many ``withTestServer(_:_:)`` bodies may run at once.
enum TestServerSlots {
    static let width = 48
    static let shared = AsyncSlots(count: width)
    /// The current task (or a parent) is in a ``withTestServer(_:_:)`` body already.
    @TaskLocal static var isHeld = false
}

private func startTestServer<T>(
    _ configuration: TestServer.Configuration,
    _ body: (TestServer) async throws -> T
) async throws -> T {
    try await withShutdown(of: try await TestServer.start(configuration), body)
}

/// Runs `body` with a manager on `baseURL` whose completion handlers run on a private queue,
/// invalidated afterwards; then expects the manager and its engine to be gone.
@discardableResult
func withManager<T>(
    baseURL: URL?,
    configuration: SessionConfiguration = .default,
    securityPolicy: SecurityPolicy = .default,
    _ body: (HTTPSessionManager) async throws -> T
) async throws -> T {
    try await withManagerThatEnds({ HTTPSessionManager(baseURL: baseURL, configuration: configuration, securityPolicy: securityPolicy) }, body)
}

enum TestQueues {
    static let key = DispatchSpecificKey<String>()
    static let completion: DispatchQueue = {
        let queue = DispatchQueue(label: "courier.tests.completion")
        queue.setSpecific(key: key, value: "completion")
        return queue
    }()
}

/// Returns once the calling task is cancelled, by throwing `CancellationError`: a call that
/// never answers of its own accord (a resolver that hangs), with no timer.
func untilCancelled() async throws -> Never {
    let (stream, continuation) = AsyncStream<Never>.makeStream()
    // Ends only when the task is cancelled: nothing is ever yielded, and the stream is finished
    // only after the loop.
    for await _ in stream {}
    continuation.finish()
    throw CancellationError()
}

/// A thread-safe list for callbacks to report into, which a test can wait on.
final class Recorder<Element: Sendable>: Sendable {
    private let box = NIOLockedValueBox<[Element]>([])
    /// Signalled after each ``append(_:)``.
    let changes = Changes()
    func append(_ element: Element) {
        self.box.withLockedValue { $0.append(element) }
        self.changes.signal()
    }
    var all: [Element] { self.box.withLockedValue { $0 } }
    var count: Int { self.box.withLockedValue { $0.count } }

    /// Waits until `condition` holds of what was recorded, checking it after each append; false
    /// if it still does not after `limit` (a hang guard, see ``Changes``).
    func wait(
        within limit: Duration = Changes.hangGuard, sourceLocation: SourceLocation = #_sourceLocation, until condition: ([Element]) -> Bool
    ) async -> Bool {
        await self.changes.wait(within: limit, sourceLocation: sourceLocation) { condition(self.all) }
    }
}

/// Waits for a callback-style completion.
func awaitCallback<T: Sendable>(_ start: (@escaping @Sendable (T) -> Void) -> Void) async -> T {
    await withCheckedContinuation { continuation in
        start { continuation.resume(returning: $0) }
    }
}

/// Polls `condition` every 10 ms for up to `seconds`; returns as soon as it holds.
///
/// ``Changes/hangGuard`` by default, the bound on what a test waits for: the suite runs some
/// 3,700 tests in parallel on two cores, a loaded machine has taken a single request past 10 s,
/// and a full CI run held every test for about 36 s (30 s, before, was not enough of a margin).
func eventually(within seconds: Double = Double(Changes.hangGuard.components.seconds), _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// A loopback port with nothing listening on it. Its socket stays bound, never listening, for the
/// rest of the process, so that connecting is refused and no other test's server can take the port
/// (closing it let a parallel test's server bind it and answer).
func closedPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

extension Optional where Wrapped == any Sendable {
    /// The JSON object a serializer returned, as a dictionary.
    var json: [String: any Sendable]? { self as? [String: any Sendable] }
}

/// Something to do when a request reaches a route: set it once the task exists.
final class ArrivalAction: Sendable {
    private let action = NIOLockedValueBox<(@Sendable () -> Void)?>(nil)
    func set(_ action: @escaping @Sendable () -> Void) { self.action.withLockedValue { $0 = action } }
    func run() { self.action.withLockedValue { $0 }?() }
}

extension TestServer {
    /// Registers `path` to run `arrival` as soon as a request reaches it (the event a test waits
    /// for), then to answer `late` only after `delay`: a cancel, pause or invalidation done on
    /// arrival must win, however loaded the machine is.
    func routeCallingOnArrival(_ path: String, delay: Duration = .seconds(10), _ arrival: ArrivalAction) {
        self.route(path) { _ in
            arrival.run()
            try? await Task.sleep(for: delay)  // the server's answer comes late; nothing is asserted on time
            return TestServer.Response(body: Data("late".utf8))
        }
    }
}

/// A request body that can be read only once: `text` in one chunk of a stream, which no resend
/// can start again.
func oneShotBody(_ text: String) -> RequestBody {
    let chunks = AsyncStream<ByteBuffer> { continuation in
        continuation.yield(ByteBuffer(string: text))
        continuation.finish()
    }
    return .stream(chunks.map { $0 }, length: .known(Int64(text.utf8.count)))
}
