import Dispatch
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// Names the queue a block runs on.
let queueName = DispatchSpecificKey<String>()

/// Records which queue saw each event.
struct RecordingMonitor: EventMonitor {
    let queue: DispatchQueue
    let seen = NIOLockedValueBox<[(Int, String?)]>([])
    let done: AsyncStream<Void>.Continuation
    let expected: Int

    func taskDidCreate(_ task: SessionTask) {
        let label = DispatchQueue.getSpecific(key: queueName)
        let count = self.seen.withLockedValue { seen in
            seen.append((task.taskIdentifier, label))
            return seen.count
        }
        if count == self.expected { self.done.finish() }
    }
}

@Suite("Monitoring: events reach every monitor, in order, on its own queue")
struct EventMonitorGroupTests {
    @Test("Two monitors, one on a concurrent queue: each sees 500 events in order on its queue")
    func order() async throws {
        let manager = SessionManager(engine: RefusingEngine())
        defer { manager.invalidate(cancelingTasks: true) }
        let tasks = (0..<500).map { _ in manager.dataTask(with: Request(url: URL(string: "http://x.test/")!), completionHandler: nil) }
        let (firstDone, first) = AsyncStream.makeStream(of: Void.self)
        let (secondDone, second) = AsyncStream.makeStream(of: Void.self)
        let serialQueue = DispatchQueue(label: "monitor.serial")
        serialQueue.setSpecific(key: queueName, value: "monitor.serial")
        let concurrentQueue = DispatchQueue(label: "monitor.concurrent", attributes: .concurrent)
        concurrentQueue.setSpecific(key: queueName, value: "monitor.concurrent")
        let serial = RecordingMonitor(queue: serialQueue, done: first, expected: 500)
        let concurrent = RecordingMonitor(queue: concurrentQueue, done: second, expected: 500)
        let group = EventMonitorGroup([serial, concurrent])
        #expect(!group.isEmpty)
        #expect(EventMonitorGroup([]).isEmpty)
        for task in tasks { group.emit { $0.taskDidCreate(task) } }
        for await _ in firstDone {}
        for await _ in secondDone {}
        for (monitor, label) in [(serial, "monitor.serial"), (concurrent, "monitor.concurrent")] {
            let seen = monitor.seen.withLockedValue { $0 }
            #expect(seen.map(\.0) == tasks.map(\.taskIdentifier))
            #expect(seen.allSatisfy { $0.1 == label })
        }
    }

    @Test("Events are delivered as they happen: on the monitor's queue as soon as they are emitted, in order")
    func eventsArriveAsTheyHappen() async throws {
        let manager = SessionManager(engine: RefusingEngine())
        defer { manager.invalidate(cancelingTasks: true) }
        let tasks = (0..<100).map { _ in manager.dataTask(with: Request(url: URL(string: "http://x.test/")!), completionHandler: nil) }
        let (_, finished) = AsyncStream.makeStream(of: Void.self)
        let queue = DispatchQueue(label: "monitor.prompt")
        let monitor = RecordingMonitor(queue: queue, done: finished, expected: 101)
        let group = EventMonitorGroup([monitor])
        for task in tasks {
            group.emit { $0.taskDidCreate(task) }
            // The drain was put on the queue with the event: a block queued after it finds it delivered.
            queue.sync {}
            #expect(monitor.seen.withLockedValue { $0.last?.0 } == task.taskIdentifier)
        }
        #expect(monitor.seen.withLockedValue { $0.map(\.0) } == tasks.map(\.taskIdentifier))
        // A burst from another thread arrives whole and in order.
        let later = (0..<50).map { _ in manager.dataTask(with: Request(url: URL(string: "http://x.test/")!), completionHandler: nil) }
        // Detached so that the burst comes from another thread than the first events; awaited at once.
        await Task.detached { for task in later { group.emit { $0.taskDidCreate(task) } } }.value
        queue.sync {}
        #expect(monitor.seen.withLockedValue { $0.suffix(50).map(\.0) } == later.map(\.taskIdentifier))
    }

    /// Records, in one list shared with other monitors, which monitor saw each task's event.
    struct SharingMonitor: EventMonitor {
        let name: String
        let queue: DispatchQueue
        let log: NIOLockedValueBox<[(String, Int)]>
        func taskDidCreate(_ task: SessionTask) { self.log.withLockedValue { $0.append((self.name, task.taskIdentifier)) } }
    }

    @Test("Monitors given together on one queue hear each event in the order given; a request's beside the session's share nothing")
    func monitorsSharingAQueue() async throws {
        let manager = SessionManager(engine: RefusingEngine())
        defer { manager.invalidate(cancelingTasks: true) }
        let tasks = (0..<300).map { _ in manager.dataTask(with: Request(url: URL(string: "http://x.test/")!), completionHandler: nil) }
        let queue = DispatchQueue(label: "monitor.shared")
        let log = NIOLockedValueBox<[(String, Int)]>([])
        let other = DispatchQueue(label: "monitor.other")
        let group = EventMonitorGroup([
            SharingMonitor(name: "a", queue: queue, log: log), SharingMonitor(name: "elsewhere", queue: other, log: NIOLockedValueBox([])),
            SharingMonitor(name: "b", queue: queue, log: log),
        ])
        // Events from two child tasks at once, as a session's tasks emit them.
        await withTaskGroup(of: Void.self) { emitters in
            for half in [tasks.prefix(150), tasks.suffix(150)] {
                emitters.addTask { for task in half { group.emit { $0.taskDidCreate(task) } } }
            }
        }
        queue.sync {}
        let seen = log.withLockedValue { $0 }
        #expect(seen.count == 600)
        // Each event reaches a, then b, before the next event reaches either.
        for pair in stride(from: 0, to: seen.count, by: 2) {
            #expect(seen[pair].0 == "a" && seen[pair + 1].0 == "b" && seen[pair].1 == seen[pair + 1].1, "\(seen[pair]) \(seen[pair + 1])")
        }

        // A task's group with a request's monitor on the same queue: the session's lane is kept as
        // it is, and the request's monitor gets a lane of its own.
        let session = EventMonitorGroup([SharingMonitor(name: "s", queue: queue, log: log)])
        let task = EventMonitorGroup.adding([SharingMonitor(name: "r", queue: queue, log: log)], to: session)
        log.withLockedValue { $0 = [] }
        task.emit { $0.taskDidCreate(tasks[0]) }
        session.emit { $0.taskDidCreate(tasks[1]) }
        queue.sync {}
        #expect(log.withLockedValue { $0 }.map(\.0).sorted() == ["r", "s", "s"])
    }
}

/// What a task consults is made outside the manager's settings lock: the request's monitors'
/// `queue`, a retrier's `retriesSerializationFailures` and a log handler are the caller's code,
/// and may read the manager. A monitor whose queue is the manager's completion queue stopped the
/// task's making for ever (the lock is not re-entrant).
@Suite("Monitoring: a monitor may read the manager while its task is made")
struct MonitorReadingTheManagerTests {
    struct ManagersQueueMonitor: EventMonitor {
        let manager: SessionManager
        var queue: DispatchQueue { self.manager.completionQueue ?? DispatchQueue(label: "fallback") }
        let created: NIOLockedValueBox<Int>
        func taskDidCreate(_ task: SessionTask) { self.created.withLockedValue { $0 += 1 } }
    }

    // A generous limit: the whole suite, run in parallel on two cores, takes tests a minute.
    @Test(.timeLimit(.minutes(5)))
    func aRequestsMonitorWhoseQueueIsTheManagersIsHeard() async throws {
        let manager = SessionManager(engine: RefusingEngine())
        manager.completionQueue = DispatchQueue(label: "completions")
        let created = NIOLockedValueBox(0)
        var request = Request(url: URL(string: "http://x.test/")!)
        request.eventMonitors = [ManagersQueueMonitor(manager: manager, created: created)]
        let task = manager.dataTask(with: request, completionHandler: nil)
        #expect(await eventually { created.withLockedValue { $0 } == 1 })
        task.cancel()
        await manager.invalidate(cancelingTasks: true)
    }
}
