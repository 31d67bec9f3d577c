import Foundation
import Synchronization

/// A task executor with a thread of its own, for a task that must make progress while callers
/// block the threads of Swift's cooperative pool: the task that fills a ``BodyInputStream`` for
/// a reader that blocks in `read`, perhaps on one of those threads (`XMLParser(stream:).parse()`
/// inside an `async` function). On the cooperative pool, such readers could hold every thread it
/// has (two on a two-core machine) while the task that would give them bytes waits for one.
///
/// One executor serves one task (``Task/init(executorPreference:priority:operation:)``): its
/// thread starts with it and ends once ``finish()`` was called and the jobs it had are run, so
/// nothing of it outlives the task. The task keeps the executor alive by holding it.
///
/// `@unchecked Sendable`: its fields are read and written with `condition` held.
final class OwnThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finishing = false
    /// How many executors' threads are running, all executors together (a test's check that each
    /// ends with its task).
    static let runningThreads = Atomic<Int>(0)

    /// Starts the thread, named `name` (Foundation's `Thread.name`).
    init(name: String) {
        Self.runningThreads.add(1, ordering: .relaxed)
        let thread = Thread { [self] in
            self.runJobs()
            Self.runningThreads.subtract(1, ordering: .relaxed)
        }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.condition.lock()
        self.jobs.append(job)
        self.condition.signal()
        self.condition.unlock()
    }

    /// The task is ending: the thread runs what is queued, then ends.
    func finish() {
        self.condition.lock()
        self.finishing = true
        self.condition.signal()
        self.condition.unlock()
    }

    private func runJobs() {
        while true {
            self.condition.lock()
            while self.jobs.isEmpty, !self.finishing { self.condition.wait() }
            if self.jobs.isEmpty {
                self.condition.unlock()
                return
            }
            let batch = self.jobs
            self.jobs.removeAll(keepingCapacity: true)
            self.condition.unlock()
            for job in batch { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }
}
