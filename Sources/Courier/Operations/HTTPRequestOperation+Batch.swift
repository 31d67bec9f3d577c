import Dispatch
import Foundation
import NIOConcurrencyHelpers

extension HTTPRequestOperation {
    /// The operations of a batch and one more that runs `completion` once every operation and its
    /// `success` or `failure` has run (AFNetworking's
    /// `batchOfRequestOperations:progressBlock:completionBlock:`). Add them all to a queue:
    ///
    /// ```swift
    /// let batch = HTTPRequestOperation.batch(of: operations, progress: { done, total in
    ///     print("\(done) of \(total)")
    /// }, completion: { operations in
    ///     print(operations.map { $0.response?.status.code ?? 0 })
    /// })
    /// queue.addOperations(batch, waitUntilFinished: false)
    /// ```
    ///
    /// - Parameters:
    ///   - operations: The operations; their completion blocks are wrapped, so set `success` and
    ///     `failure` before batching them. Each operation's ``completionGroup`` becomes the batch's
    ///     (as AFNetworking sets it), so that `completion` also waits for its `success` or
    ///     `failure`: a group the operation had (a manager's) no longer hears it. Batch
    ///     operations that have not started, and add them all to a queue: the batch's group
    ///     waits for every operation's completion block.
    ///   - completionQueue: Where `progress` and `completion` run; the main queue by default.
    ///   - progress: Called after each operation's own completion with how many of the batch have
    ///     finished and how many there are; the first call gets 1, each later one the next number.
    ///   - completion: Called once with `operations`, after every one finished.
    /// - Returns: `operations` followed by the operation that calls `completion`, which depends
    ///   on all of them.
    public static func batch(
        of operations: [HTTPRequestOperation],
        completionQueue: DispatchQueue = .main,
        progress: (@Sendable (_ finished: Int, _ total: Int) -> Void)? = nil,
        completion: (@Sendable ([HTTPRequestOperation]) -> Void)? = nil
    ) -> [Operation] {
        let group = DispatchGroup()
        let finished = NIOLockedValueBox(0)
        let total = operations.count
        let batchCompletion = BlockOperation {
            group.notify(queue: completionQueue) { completion?(operations) }
        }
        for operation in operations {
            // The operation's own success or failure runs in the group too, so `completion`
            // comes after all of them (a group of its own would leave it out of the wait).
            operation.completionGroup = group
            let original = operation.completionBlock
            group.enter()
            // Undispatched: the count is queued on `completionQueue` below, and `original`
            // queues its own work (a plain block set by the user, on the operation's queue).
            operation.setCompletionBlockUndispatched {
                original?()
                completionQueue.async(group: group) {
                    // Counted where it is reported: two operations that finish together may
                    // queue their blocks in either order, and the counts still go up one by one
                    // (a count taken before the block was queued could come after a higher one).
                    let count = finished.withLockedValue { count -> Int in
                        count += 1
                        return count
                    }
                    progress?(count, total)
                    group.leave()
                }
            }
            batchCompletion.addDependency(operation)
        }
        return operations + [batchCompletion]
    }
}
