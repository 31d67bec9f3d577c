import Foundation

/// How far a task's transfer got both ways, and who hears of it: the counts a ``SessionTask``
/// reports, the progress objects and the caller's closures for them (AFNetworking's upload and
/// download progress blocks), and the `progressUpdates(for:)` consumers. Part of the task's state
/// (``TaskState/progress``), guarded by its lock; pure: each change returns the snapshots owed to
/// the consumers, handed out after the lock, and nothing here calls out.
///
/// Its rules: progress never goes backwards (a redirect or a retry that sends or receives again
/// counts from zero, and the objects and snapshots stay where they were until the new counts pass
/// them); an attempt that may still be retried has its response's progress held back
/// (``held``) and reported only when it turns out to be the last; a send below what went before
/// reports nothing; a successful end puts both ways at their totals.
struct TransferProgress {
    var countOfBytesSent: Int64 = 0
    /// The body's length, -1 when unknown.
    var countOfBytesExpectedToSend: Int64
    var countOfBytesReceived: Int64 = 0
    /// The response body's length, -1 when unknown.
    var countOfBytesExpectedToReceive: Int64 = -1
    /// The bytes of ``countOfBytesReceived`` that a resumed download's partial file kept from
    /// before (set with the response head): counted in its progress, never received by the attempt.
    var keptBytesReceived: Int64 = 0
    /// The current attempt's response, while it may still be retried: its progress is held back
    /// (reported when the task ends with it, dropped when it is retried), so that progress
    /// never goes backwards. A task that fails with it never reports it; its end still counts
    /// the bytes it received in the attempt's metrics.
    var held: Held?

    /// The caller's progress closures; dropped when the task completes.
    var uploadHandler: (@Sendable (Progress) -> Void)?
    var downloadHandler: (@Sendable (Progress) -> Void)?
    /// The progress objects, made when a closure wants one or the task's `uploadProgress` or
    /// `downloadProgress` is read (``TaskState/makeProgress(total:completed:of:)``).
    var uploadObject: Progress?
    var downloadObject: Progress?

    /// The consumers of `progressUpdates(for:)`.
    var observers: [ProgressObserver] = []
    /// How many consumers joined: the next one's identifier.
    var observersJoined = 0
    /// Whether the last snapshots went out.
    var updatesFinished = false
    /// Whether the task ended without succeeding (set with ``updatesFinished``): a consumer that
    /// joins afterwards gets the last snapshot the others got.
    var endedWithoutSuccess = false

    /// A response head's progress held back while its attempt may be retried (``held``).
    struct Held {
        var url: URL
        var received: Int64 = 0
        var expected: Int64
        /// A resumed download's bytes kept from before.
        var kept: Int64 = 0
    }

    // MARK: Sending

    /// The exchange sent its body up to `total` bytes of the current hop's send, of `expected`
    /// (nil: unchanged). Returns whether a count moved: a resend (a redirect's, a retry's) below
    /// what went before moves nothing and is not reported. The upload object, when there is one,
    /// follows the counts.
    mutating func bodySent(total: Int64, expected: Int64?) -> Bool {
        let (sentBefore, expectedBefore) = (self.countOfBytesSent, self.countOfBytesExpectedToSend)
        self.countOfBytesSent = max(self.countOfBytesSent, total)
        if let expected { self.countOfBytesExpectedToSend = expected }
        // Bytes of an earlier hop's send that leave after a redirect was decided may be counted
        // into the new hop's total: never more than the body's length.
        if self.countOfBytesExpectedToSend >= 0 {
            self.countOfBytesSent = min(self.countOfBytesSent, self.countOfBytesExpectedToSend)
        }
        guard self.countOfBytesSent != sentBefore || self.countOfBytesExpectedToSend != expectedBefore else { return false }
        if let object = self.uploadObject {
            object.totalUnitCount = self.countOfBytesExpectedToSend
            object.completedUnitCount = self.countOfBytesSent
        }
        return true
    }

    /// An attempt sends a body of another length than the last (-1: unknown).
    mutating func bodyLengthChanged(to expected: Int64) {
        self.countOfBytesExpectedToSend = expected
        self.uploadObject?.totalUnitCount = expected
    }

    /// Whether the caller's upload closure wants an object that is not made yet. (A `mutating
    /// get`, as ``attemptBytesReceived``: a plain getter read through the task's state copied
    /// the whole value, a retain a request.)
    var wantsUploadObject: Bool { mutating get { self.uploadHandler != nil && self.uploadObject == nil } }

    // MARK: Receiving

    /// The final response head arrived: its body holds `received` bytes already (a resumed
    /// download's) of `expected` in all (-1 when unknown), or, when `holding`, its progress is
    /// held back (``held``) until the attempt is final. Returns the snapshots owed.
    mutating func responseArrived(url: URL, received: Int64, expected: Int64, holding: Bool) -> [ProgressDelivery] {
        guard holding else {
            self.held = nil
            return self.responseCounted(received: received, expected: expected)
        }
        self.held = Held(url: url, expected: expected, kept: received)
        return []
    }

    private mutating func responseCounted(received: Int64, expected: Int64) -> [ProgressDelivery] {
        self.countOfBytesReceived = received
        self.keptBytesReceived = received
        self.countOfBytesExpectedToReceive = expected
        self.moveDownloadObject()
        return self.deliveries(.download)
    }

    /// Whether the caller's download closure wants an object that is not made yet (a `mutating
    /// get`, as ``wantsUploadObject``).
    var wantsDownloadObject: Bool { mutating get { self.downloadHandler != nil && self.downloadObject == nil } }

    /// Counts body bytes received. Returns the snapshots owed.
    mutating func received(_ bytes: Int64) -> [ProgressDelivery] {
        self.countOfBytesReceived += bytes
        self.moveDownloadObject()
        return self.deliveries(.download)
    }

    /// Counts body bytes as ``received(_:)`` does, or holds them back; nil when held (there is
    /// nothing to report).
    mutating func receivedOrHeld(_ bytes: Int64) -> [ProgressDelivery]? {
        if self.held != nil {
            self.held?.received += bytes
            return nil
        }
        return self.received(bytes)
    }

    /// Moves the download object to the current attempt's counts, unless an earlier attempt
    /// (whose body broke off, and which was retried) took it further: it stays there until this
    /// attempt's bytes pass it, so that it never goes backwards.
    private mutating func moveDownloadObject() {
        guard let object = self.downloadObject, object.completedUnitCount <= self.countOfBytesReceived else { return }
        if object.totalUnitCount != self.countOfBytesExpectedToReceive { object.totalUnitCount = self.countOfBytesExpectedToReceive }
        object.completedUnitCount = self.countOfBytesReceived
    }

    /// The current attempt's body bytes so far, held back or not: those that came, without the
    /// bytes a resumed download kept from before (a continuation's metrics counted them as
    /// received, and a 416 that found the partial file whole reported the whole file).
    ///
    /// A `mutating get`, read in place through the task's lock: the state it is part of is
    /// not loadable, and a plain getter read inside a mutating method could copy it.
    var attemptBytesReceived: Int64 {
        mutating get {
            // Not `??`: its autoclosure would capture (copy) the whole value.
            if let held = self.held { return held.received }
            return self.countOfBytesReceived - self.keptBytesReceived
        }
    }

    /// The attempt whose progress was held back is the task's last: its progress is counted now.
    /// Returns the snapshots owed, and the body bytes it had received (nil when nothing was held).
    mutating func releaseHeld() -> (deliveries: [ProgressDelivery], bytes: Int64)? {
        guard let held = self.held else { return nil }
        self.held = nil
        let deliveries = self.responseCounted(received: held.kept, expected: held.expected) + self.received(held.received)
        return (deliveries, held.received)
    }

    /// A retry begins: the next attempt counts its response from nothing (its head sets the
    /// counts again; one that fails before its head kept the last attempt's, and its metrics
    /// counted them twice). The objects keep their floor: they never go backwards.
    mutating func attemptRetried() {
        self.countOfBytesReceived = 0
        self.keptBytesReceived = 0
        self.countOfBytesExpectedToReceive = -1
        self.held = nil
    }

    // MARK: The end

    /// At a successful end the totals are known: both ways end at 1.0.
    mutating func settleTotals() {
        if self.countOfBytesExpectedToReceive < 0 { self.countOfBytesExpectedToReceive = self.countOfBytesReceived }
        self.downloadObject?.totalUnitCount = self.countOfBytesExpectedToReceive
        self.downloadObject?.completedUnitCount = self.countOfBytesReceived
        if self.countOfBytesExpectedToSend < 0 { self.countOfBytesExpectedToSend = self.countOfBytesSent }
        self.uploadObject?.totalUnitCount = self.countOfBytesExpectedToSend
        self.uploadObject?.completedUnitCount = self.countOfBytesExpectedToSend
    }

    /// Lets go of the caller's progress closures (at the task's end).
    mutating func dropHandlers() {
        self.uploadHandler = nil
        self.downloadHandler = nil
    }

    // MARK: `progressUpdates(for:)`

    /// A consumer joins with `continuation`: its first snapshot, and its identifier (nil when the
    /// updates finished already: the snapshot is the last).
    mutating func join(_ direction: ProgressSnapshot.Direction, continuation: AsyncStream<ProgressSnapshot>.Continuation) -> (ProgressSnapshot, Int?) {
        let snapshot = self.snapshot(direction, finished: self.updatesFinished, failed: self.endedWithoutSuccess, floor: 0)
        guard !self.updatesFinished else { return (snapshot, nil) }
        self.observersJoined += 1
        let id = self.observersJoined
        self.observers.append(ProgressObserver(id: id, direction: direction, continuation: continuation, lastFraction: snapshot.fractionCompleted))
        return (snapshot, id)
    }

    /// The task ended (`failed`: without succeeding): no consumer joins from now on, and each
    /// one's last snapshot (at 1.0 on success) is returned with it, to be handed out after the lock.
    mutating func finishObservers(failed: Bool) -> [(ProgressObserver, ProgressSnapshot)] {
        self.updatesFinished = true
        self.endedWithoutSuccess = failed
        // Nobody listens: the common case.
        guard !self.observers.isEmpty else { return [] }
        let listening = self.observers
        self.observers = []
        return listening.map { observer in
            (observer, self.snapshot(observer.direction, finished: true, failed: failed, floor: observer.lastFraction))
        }
    }

    /// The snapshots owed to the consumers of `direction` after a change; none (and no work) when
    /// nobody listens, which is the common case on the hot path.
    mutating func deliveries(_ direction: ProgressSnapshot.Direction) -> [ProgressDelivery] {
        guard !self.observers.isEmpty else { return [] }
        var deliveries: [ProgressDelivery] = []
        for index in self.observers.indices where self.observers[index].direction == direction {
            let snapshot = self.snapshot(direction, finished: false, failed: false, floor: self.observers[index].lastFraction)
            self.observers[index].lastFraction = snapshot.fractionCompleted
            deliveries.append(ProgressDelivery(continuation: self.observers[index].continuation, snapshot: snapshot))
        }
        return deliveries
    }

    /// `direction`'s snapshot, never below `floor`; a finished task that did not fail is at 1.0.
    func snapshot(_ direction: ProgressSnapshot.Direction, finished: Bool, failed: Bool, floor: Double) -> ProgressSnapshot {
        let (completed, total) = switch direction {
        case .upload: (self.countOfBytesSent, self.countOfBytesExpectedToSend)
        case .download: (self.countOfBytesReceived, self.countOfBytesExpectedToReceive)
        }
        var fraction = total > 0 ? min(1, Double(completed) / Double(total)) : 0
        if finished, !failed { fraction = 1 }
        return ProgressSnapshot(
            completedUnitCount: completed, totalUnitCount: total, fractionCompleted: max(floor, fraction), isFinished: finished)
    }
}

extension TransferProgress {
    // In an extension, so that it calls the memberwise initializer: one that set the fields one
    // by one was compiled to make the value, copy it into the task's state and destroy the first
    // (a retain a task, and its release).
    init(expectedToSend: Int64, uploadHandler: (@Sendable (Progress) -> Void)?, downloadHandler: (@Sendable (Progress) -> Void)?) {
        self.init(countOfBytesExpectedToSend: expectedToSend, uploadHandler: uploadHandler, downloadHandler: downloadHandler)
    }
}
