import Foundation

/// Runs blocking work (a child process, the first use of a global that makes files with one) on a
/// thread of its own.
///
/// Not on the concurrency pool, nor on Dispatch's global queues: on a two-core machine each has
/// two threads, and the rest of the suite, running in parallel, needs them (completion queues,
/// serialization, `eventually` polls). Blocking either for seconds made unrelated tests miss
/// their deadlines under load.
func offThePools<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
