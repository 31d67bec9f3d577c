import Courier
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Dispatch

/// Helpers shared by the conformance twins: the source suites build responses by hand
/// (`NSHTTPURLResponse`) and check request bodies as text.
enum Conformance {
    /// A response head with `status` and, when given, `Content-Type`.
    static func response(_ status: Int = 200, contentType: String? = nil) -> HTTPResponse {
        var fields = HTTPFields()
        if let contentType { fields[.contentType] = contentType }
        return HTTPResponse(status: .init(code: status), headerFields: fields)
    }

    /// `{"foo":"bar"}`, the body AFNetworking's JSON tests validate.
    static let jsonSample = Data(#"{"foo":"bar"}"#.utf8)

    /// A small well-formed XML document, the body AFNetworking's XML tests validate.
    static let xmlSample = Data(#"<?xml version="1.0" encoding="UTF-8"?><foo attr1="1" attr2="2"><bar>someValue</bar></foo>"#.utf8)

    /// The bytes of an in-memory request body, empty for no body, nil for a file or stream.
    static func bodyData(_ request: Request) -> Data? {
        request.body.isEmpty ? Data() : request.body.data
    }

    /// The body as UTF-8 text.
    static func bodyText(_ request: Request) -> String? {
        self.bodyData(request).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether `error` is a ``CourierError`` with `code`.
    static func isCourierError(_ error: (any Error)?, _ code: CourierError.Code) -> Bool {
        (error as? CourierError)?.code == code
    }
}

extension Conformance {
    /// Runs `trigger`, then waits for the first `name` notification about `object` (any object
    /// when nil) that `matching` accepts; nil when none came within `seconds` (a bound on a
    /// failing test, not a pause: ``Changes/hangGuard`` by default). Other tests run at the same
    /// time and post too: filter.
    static func notification(
        _ name: Notification.Name,
        object: AnyObject? = nil,
        matching: @escaping @Sendable (NotificationBox) -> Bool = { _ in true },
        within seconds: Double = NotificationWaiter.hangGuard,
        after trigger: () -> Void
    ) async -> Notification? {
        let waiter = NotificationWaiter()
        let observer = NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { note in
            let box = NotificationBox(note)
            if matching(box) { waiter.deliver(box) }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        trigger()
        return await waiter.wait(seconds: seconds)?.note
    }
}

/// A notification handed across threads; only read once it has been posted.
struct NotificationBox: @unchecked Sendable {
    // @unchecked: a posted Notification is not mutated; its user info holds Courier's Sendable values.
    let note: Notification
    init(_ note: Notification) { self.note = note }
}

/// The first delivery wins; a timeout delivers nil. Once handed to the waiting caller, the
/// notification is not kept: the timeout's closure keeps the waiter for its whole delay, and a kept
/// notification kept its object (a task) alive that long after the test.
final class NotificationWaiter: Sendable {
    /// The bound of a wait by default, in seconds: ``Changes/hangGuard``, only a hang guard (a full
    /// CI run held every test for about 36 s, and waits of 30 s left too little margin).
    static let hangGuard = Double(Changes.hangGuard.components.seconds)

    private let state = NIOLockedValueBox<(received: NotificationBox??, continuation: CheckedContinuation<NotificationBox?, Never>?)>((nil, nil))

    func deliver(_ box: NotificationBox?) {
        let continuation: CheckedContinuation<NotificationBox?, Never>? = self.state.withLockedValue { state in
            guard state.received == nil else { return nil }
            guard let continuation = state.continuation else {
                // Kept until `wait` takes it.
                state.received = .some(box)
                return nil
            }
            state.received = .some(nil)
            state.continuation = nil
            return continuation
        }
        continuation?.resume(returning: box)
    }

    func wait(seconds: Double = NotificationWaiter.hangGuard) async -> NotificationBox? {
        await withCheckedContinuation { continuation in
            let already: NotificationBox?? = self.state.withLockedValue { state in
                if let received = state.received {
                    state.received = .some(nil)
                    return .some(received)
                }
                state.continuation = continuation
                return nil
            }
            if let already {
                continuation.resume(returning: already)
                return
            }
            // A deadline for a test that would otherwise hang: delivers nil unless a notification came first.
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { self.deliver(nil) }
        }
    }
}

extension Conformance {
    /// Whether this host has a default route (IPv4 or IPv6) in the kernel's main table, read from
    /// `/proc`: what the general reachability manager must report as reachable or not.
    static var hostHasDefaultRoute: Bool {
        let v4 = (try? String(contentsOfFile: "/proc/net/route", encoding: .utf8)) ?? ""
        let hasV4 = v4.split(separator: "\n").dropFirst().contains { line in
            let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
            return fields.count > 7 && fields[1] == "00000000" && fields[7] == "00000000"
        }
        let v6 = (try? String(contentsOfFile: "/proc/net/ipv6_route", encoding: .utf8)) ?? ""
        let hasV6 = v6.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 9 && fields[0] == String(repeating: "0", count: 32) && fields[1] == "00" && fields[9] != "lo"
        }
        return hasV4 || hasV6
    }
}

/// Alamofire's `TestResponse`: the parts of httpbin's echo document its tests read.
struct HTTPBinEchoResponse: Decodable, Sendable {
    let headers: [String: String]
    let origin: String?
    let url: String?
    let data: String?
    let form: [String: String]?
    let args: [String: String]?
}

/// Alamofire's `TestParameters`.
struct TestParameters: Encodable, Sendable {
    let property: String
}

/// The task notifications (`.taskDidResume`, `.taskDidSuspend`, `.taskDidComplete`) posted about
/// any task while the log is open, for counting a task's lifetime events (Alamofire's tests count
/// event-monitor calls). Other tests post too: count by task.
final class TaskNotificationLog: @unchecked Sendable {
    // @unchecked: `observers` is set in init and only read in `close()`; the rest is behind locks.

    /// A notification about a task, which is held weakly: an `ObjectIdentifier` let a task made
    /// at the address of another test's task, gone meanwhile, be counted with that task's events.
    struct Event: Sendable {
        let name: Notification.Name
        weak var task: SessionTask?

        func isAbout(_ task: SessionTask, named name: Notification.Name) -> Bool {
            self.name == name && self.task === task
        }
    }

    private let events = NIOLockedValueBox<[Event]>([])
    private let waiters = NIOLockedValueBox<[(check: @Sendable ([Event]) -> Bool, waiter: NotificationWaiter)]>([])
    private var observers: [any NSObjectProtocol] = []

    init() {
        for name in [Notification.Name.taskDidResume, .taskDidSuspend, .taskDidComplete] {
            self.observers.append(NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { [weak self] note in
                guard let self, let task = note.object as? SessionTask else { return }
                self.record(Event(name: name, task: task))
            })
        }
    }

    deinit { self.close() }

    func close() {
        for observer in self.observers { NotificationCenter.default.removeObserver(observer) }
        self.observers = []
    }

    private func record(_ event: Event) {
        let events = self.events.withLockedValue { events in
            events.append(event)
            return events
        }
        let ready = self.waiters.withLockedValue { waiters -> [NotificationWaiter] in
            let ready = waiters.filter { $0.check(events) }.map(\.waiter)
            waiters.removeAll { waiter in ready.contains { $0 === waiter.waiter } }
            return ready
        }
        for waiter in ready { waiter.deliver(nil) }
    }

    /// How many `name` notifications were posted about `task`.
    func count(_ name: Notification.Name, of task: SessionTask) -> Int {
        self.events.withLockedValue { $0.filter { $0.isAbout(task, named: name) }.count }
    }

    /// Waits until `count` `name` notifications were posted about `task`; false when they did not
    /// come within `seconds` (a bound on a failing test, not a pause: ``Changes/hangGuard`` by default).
    func wait(for name: Notification.Name, count: Int = 1, of task: SessionTask, within seconds: Double = NotificationWaiter.hangGuard) async -> Bool {
        let check: @Sendable ([Event]) -> Bool = { [weak task] events in
            guard let task else { return false }
            return events.filter { $0.isAbout(task, named: name) }.count >= count
        }
        let waiter = NotificationWaiter()
        let already = self.events.withLockedValue { events -> Bool in
            if check(events) { return true }
            self.waiters.withLockedValue { $0.append((check, waiter)) }
            return false
        }
        if already { return true }
        _ = await waiter.wait(seconds: seconds)
        return self.count(name, of: task) >= count
    }
}
