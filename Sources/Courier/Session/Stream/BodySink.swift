import Foundation
import HTTPTypes
import NIOCore
import NIOFoundationCompat

/// Where a task's response body goes: gathered in memory for the response serializer
/// (``MemoryBodySink``, data and upload tasks), written to a file (``DownloadPlan``, download tasks),
/// or handed to an `async` consumer as it arrives (``ResponseStreamSink``,
/// ``SessionManager/stream(_:downloadProgress:gatheringBodiesUpTo:)``).
///
/// The task's delegate hands every body event to its sink and knows nothing of where the bytes go:
/// the response head (after the cookie store and the cache saw it), each chunk, and the exchange's
/// end once no retry follows. Each conformer records what it needs in the task's state under the
/// delegate's lock and reports after releasing it, as the delegate does.
protocol BodySink: Sendable {
    /// The final response head arrived (a 304 that confirmed a stored response arrives as the
    /// stored one), with its status code (read once per head: `HTTPResponse.status` copies the
    /// status and its reason phrase each time). Returns whether to read its body.
    ///
    /// The delegate calls this only for a head it did not record in its own transaction
    /// (``recordHeadUnderLock(_:status:url:holding:in:delegate:)`` returned nil, or the head is a
    /// revalidated stored response): the default records it in a transaction of its own, then
    /// goes on as ``headRecorded(_:response:status:holding:delegate:)``.
    func headArrived(_ response: HTTPResponse, status: Int, url: URL, delegate: TaskDelegate) -> ResponseDisposition

    /// The final response head's part under the task's lock: recorded in the task's state, inside
    /// the transaction in which the delegate reads the hop's facts for it, so that the head takes
    /// the lock once. `holding` says whether its progress is held back for a possible retry
    /// (``TaskDelegate/mayRetry(after:status:)``). Must not take the task's lock (it holds it) or
    /// any lock the task's lock is taken under. Nil when the sink records its head itself, after
    /// the lock (a download, which opens its file first): the delegate then calls
    /// ``headArrived(_:status:url:delegate:)``.
    func recordHeadUnderLock(_ response: HTTPResponse, status: Int, url: URL, holding: Bool, in state: inout TaskState, delegate: TaskDelegate) -> RecordedHead?

    /// The rest of a head that ``recordHeadUnderLock(_:status:url:holding:in:delegate:)`` recorded, after
    /// the lock (and after the cookie store and the cache saw the response): progress, monitors,
    /// hooks. Returns whether to read its body.
    func headRecorded(_ recorded: RecordedHead, response: HTTPResponse, status: Int, holding: Bool, delegate: TaskDelegate) -> ResponseDisposition

    /// A chunk of the final response's body arrived.
    func bodyArrived(_ chunk: ByteBuffer, delegate: TaskDelegate)

    /// The task ends with `error` (nil: success): the last attempt's exchange finished, or the
    /// task was cancelled or failed before one ran. Completes the task, once, whoever calls first.
    func end(with error: CourierError?, delegate: TaskDelegate)

    /// The last attempt's exchange finished without an error, and no serializer is to check the
    /// response first: completes the task as ``end(with:delegate:)`` does, in the transaction that
    /// reads the response's status, unless the status is a failure (400 or more), which goes to
    /// the retry decision first (``TaskDelegate/considerRetry(after:failedStatus:)``). A sink that
    /// does not complete this way (a download, whose file is closed first) says so: the delegate
    /// then decides on a retry and ends the task with ``end(with:delegate:)``.
    func endSucceeded(delegate: TaskDelegate) -> SucceededEnd

    /// Whether the consumer is behind, so that the exchange should stop reading for now. Asked
    /// outside the task's lock.
    var isBehind: Bool { get }

    /// Whether the session's cache answers and stores this task's responses (data tasks and
    /// streams).
    var usesCache: Bool { get }

    /// The body to store with the final response at the task's end, or nil when the whole body
    /// was not kept (the response is then not stored): `gathered`, the body gathered in memory,
    /// for a data task; a stream's own copy (``ResponseStreamSink/takeCacheCopy()``).
    func bodyToStore(gathered: Data?) -> Data?

    /// The task was released without being resumed: nothing will come (a streamed task's reader
    /// stops waiting, ``SessionManager/streamTask(with:downloadProgress:events:)``).
    func abandon()

    /// Whether the consumer holds the attempt's response head already, so that an attempt that
    /// got one can no longer be retried (a stream's consumer, unless the head is held back for a
    /// possible retry). Asked outside the task's lock.
    var takesResponseAtHead: Bool { get }
}

/// What ``BodySink/endSucceeded(delegate:)`` did.
enum SucceededEnd {
    /// The task completed (or had already).
    case completed
    /// The response's status is 400 or more: the retry decision comes first.
    case failedStatus
    /// The sink ends its tasks another way: nothing was read.
    case notCompleted
}

/// What a sink recorded of a final response head under the task's lock, for its part after it.
struct RecordedHead {
    /// The task, when a monitor or a hook is to hear of the head (``TaskDelegate/isWatched``);
    /// nil otherwise, and then not copied out of the state (a retain).
    var task: SessionTask?
    /// The progress snapshots owed to `progressUpdates(for:)` consumers.
    var deliveries: [ProgressDelivery]
    /// The body's expected length (-1: unknown).
    var expected: Int64
    /// What the cache's copy of a streamed body needs, when the response may be stored.
    var storing: HopState.Storing?
}

extension BodySink {
    func recordHeadUnderLock(_ response: HTTPResponse, status: Int, url: URL, holding: Bool, in state: inout TaskState, delegate: TaskDelegate) -> RecordedHead? {
        nil
    }

    func headRecorded(_ recorded: RecordedHead, response: HTTPResponse, status: Int, holding: Bool, delegate: TaskDelegate) -> ResponseDisposition {
        preconditionFailure("a sink that records no head under the lock is not asked for the rest of one")
    }

    func headArrived(_ response: HTTPResponse, status: Int, url: URL, delegate: TaskDelegate) -> ResponseDisposition {
        let holding = delegate.mayRetry(after: response, status: status)
        let recorded = delegate.state.withLockedValue {
            self.recordHeadUnderLock(response, status: status, url: url, holding: holding, in: &$0, delegate: delegate)
        }
        guard let recorded else { preconditionFailure("a sink that records its own head implements headArrived") }
        return self.headRecorded(recorded, response: response, status: status, holding: holding, delegate: delegate)
    }

    var isBehind: Bool { false }
    var usesCache: Bool { false }
    var takesResponseAtHead: Bool { false }

    func bodyToStore(gathered: Data?) -> Data? { gathered ?? Data() }

    func abandon() {}

    func end(with error: CourierError?, delegate: TaskDelegate) {
        delegate.completeWithGatheredBody(error)
    }

    func endSucceeded(delegate: TaskDelegate) -> SucceededEnd {
        delegate.completeWithGatheredBody(nil, unlessFailedStatus: true)
    }
}

/// A data or upload task's body: gathered in memory (``TaskState/body``) for the response
/// serializer and the cache.
struct MemoryBodySink: BodySink {
    var usesCache: Bool { true }

    /// The most bytes a body kept in memory can hold: a `ByteBuffer` counts them in a `UInt32`
    /// (and traps past it). A longer body fails as one over ``SessionConfiguration/maximumResponseBodySize``.
    static let largestBody = Int(UInt32.max)

    /// The session's maximum, or the most a buffer holds when it sets none or a larger one.
    private static func maximum(_ delegate: TaskDelegate) -> Int {
        min(delegate.configurationReference.value.maximumResponseBodySize ?? Self.largestBody, Self.largestBody)
    }

    /// Records the head, its expected length and the attempt's response start; a large body of
    /// announced length gets its buffer here.
    func recordHeadUnderLock(_ response: HTTPResponse, status: Int, url: URL, holding: Bool, in state: inout TaskState, delegate: TaskDelegate) -> RecordedHead? {
        let expected = response.expectedBodyLength(status: status, answeringHEAD: state.currentRequest.method == .head)
        let deliveries = state.recordResponse(response, status: status, url: url, expected: expected, holding: holding)
        state.metrics?.responseBegan()
        // A large body of announced length gets its buffer at once, not by doubling.
        if expected > 64 * 1024,
            expected <= Int64(min(delegate.configurationReference.value.maximumResponseBodySize ?? 256 << 20, Self.largestBody))
        {
            state.body = ByteBufferAllocator().buffer(capacity: Int(expected))
        }
        return RecordedHead(task: delegate.isWatched ? state.task : nil, deliveries: deliveries, expected: expected, storing: nil)
    }

    /// Progress owed, then the monitors and the response hook (which may cancel the body).
    func headRecorded(_ recorded: RecordedHead, response: HTTPResponse, status: Int, holding: Bool, delegate: TaskDelegate) -> ResponseDisposition {
        let task = recorded.task
        delegate.deliver(recorded.deliveries)
        if let task { delegate.didReceive(response, task: task) }
        if let hook = delegate.hook({ $0.dataTaskDidReceiveResponse }), let task, let manager = delegate.manager {
            return hook(manager, task, response)
        }
        return .allow
    }

    /// Drops the body gathered and records why (kept in the state: the exchange may finish on its
    /// own before the cancel lands, or may not be attached yet).
    private static func tooLarge(_ state: inout TaskState, maximum: Int) -> CourierError {
        state.body = nil
        if let failure = state.bodyFailure { return failure }
        let failure = CourierError(
            .responseTooLarge, "\(state.currentRequest.summary): the body is over the \(maximum)-byte maximum",
            request: state.currentRequest, response: state.response)
        state.bodyFailure = failure
        return failure
    }

    func bodyArrived(_ chunk: ByteBuffer, delegate: TaskDelegate) {
        let maximum = Self.maximum(delegate)
        enum Next { case report(ProgressReport?, SessionTask?, [ProgressDelivery]), held, cancel((any Exchange)?, CourierError) }
        let next = delegate.state.withLockedValue { state -> Next in
            let deliveries = state.recordReceivedOrHold(Int64(chunk.readableBytes))
            // The attempt's body so far, as gathered (`attemptBytesReceived` is the same count,
            // but its getter copied the whole state, twelve retains a chunk). Once over, nothing
            // more is gathered while the cancel is on its way.
            if state.bodyFailure != nil || (state.body?.readableBytes ?? 0) + chunk.readableBytes > maximum {
                return .cancel(state.machine.exchange, Self.tooLarge(&state, maximum: maximum))
            }
            if state.body == nil {
                state.body = chunk
            } else {
                state.body!.writeImmutableBuffer(chunk)
            }
            // An attempt that may be retried reports its body when it turns out to be the last.
            guard let deliveries else { return .held }
            // The task only for a monitor or a hook (a copy is a retain a chunk).
            return .report(ProgressReport(state.progress.downloadObject, state.progress.downloadHandler), delegate.isWatched ? state.task : nil, deliveries)
        }
        switch next {
        case .cancel(let exchange, let failure):
            exchange?.cancel(with: failure)
        case .held:
            break
        case .report(let report, let task, let deliveries):
            report?.send()
            delegate.deliver(deliveries)
            if let hook = delegate.hook({ $0.dataTaskDidReceiveData }), let task, let manager = delegate.manager {
                hook(manager, task, Data(buffer: chunk, byteTransferStrategy: .copy))
            }
            if let task { delegate.didReceiveBodyData(Int64(chunk.readableBytes), task: task) }
        }
    }
}
