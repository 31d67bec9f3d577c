@testable import Courier
import Foundation
import Testing

/// A task's progress both ways, event by event, without I/O: the counts, the progress objects,
/// what is held back while an attempt may be retried, and the snapshots owed to
/// `progressUpdates(for:)` consumers.
@Suite("Transfer progress")
struct TransferProgressTests {
    static let url = URL(string: "http://example.com/file")!

    static func progress(expectedToSend: Int64 = -1) -> TransferProgress {
        TransferProgress(expectedToSend: expectedToSend, uploadHandler: nil, downloadHandler: nil)
    }

    /// A consumer of `direction`, and the stream it reads.
    static func join(
        _ progress: inout TransferProgress, _ direction: ProgressSnapshot.Direction
    ) -> (first: ProgressSnapshot, id: Int?, stream: AsyncStream<ProgressSnapshot>) {
        let (stream, continuation) = AsyncStream.makeStream(of: ProgressSnapshot.self)
        let (snapshot, id) = progress.join(direction, continuation: continuation)
        return (snapshot, id, stream)
    }

    // MARK: Sending

    @Test func aResendBelowWhatWentBeforeMovesNothing() {
        var progress = Self.progress(expectedToSend: 100)
        progress.uploadObject = Progress(totalUnitCount: 100)
        let firstPart = progress.bodySent(total: 60, expected: 100)
        #expect(firstPart)
        let wholeBody = progress.bodySent(total: 100, expected: 100)
        #expect(wholeBody)
        #expect(progress.countOfBytesSent == 100)
        // A 307 sends the body again from its first byte.
        let resendStart = progress.bodySent(total: 10, expected: 100)
        #expect(!resendStart, "nothing moved: nothing is reported")
        let resendEnd = progress.bodySent(total: 100, expected: 100)
        #expect(!resendEnd, "1.0 is not reported a second time")
        #expect(progress.countOfBytesSent == 100)
        #expect(progress.uploadObject?.completedUnitCount == 100)
    }

    @Test func theCountSentNeverPassesTheBodysLength() {
        var progress = Self.progress(expectedToSend: 50)
        // An earlier hop's bytes counted into the new hop's total.
        let pastTheLength = progress.bodySent(total: 70, expected: nil)
        #expect(pastTheLength)
        #expect(progress.countOfBytesSent == 50)
        // Unknown length: nothing to clamp to.
        var unknown = Self.progress()
        let unknownLength = unknown.bodySent(total: 70, expected: nil)
        #expect(unknownLength)
        #expect(unknown.countOfBytesSent == 70)
    }

    @Test func anAttemptsNewBodyLengthMovesTheObjectsTotal() {
        var progress = Self.progress(expectedToSend: 100)
        progress.uploadObject = Progress(totalUnitCount: 100)
        progress.bodyLengthChanged(to: -1)
        #expect(progress.countOfBytesExpectedToSend == -1)
        #expect(progress.uploadObject?.totalUnitCount == -1)
        var wants = progress.wantsUploadObject
        #expect(!wants, "the object exists")
        progress.uploadHandler = { _ in }
        wants = progress.wantsUploadObject
        #expect(!wants)
        progress.uploadObject = nil
        wants = progress.wantsUploadObject
        #expect(wants)
    }

    // MARK: Receiving

    @Test func aHeldResponseIsCountedOnlyWhenReleased() {
        var progress = Self.progress()
        let heldHead = progress.responseArrived(url: Self.url, received: 0, expected: 10, holding: true)
        #expect(heldHead.isEmpty)
        #expect(progress.countOfBytesExpectedToReceive == -1, "the head is held back")
        let heldFirst = progress.receivedOrHeld(4)
        #expect(heldFirst == nil)
        let heldSecond = progress.receivedOrHeld(6)
        #expect(heldSecond == nil)
        #expect(progress.countOfBytesReceived == 0)
        let attemptBytes = progress.attemptBytesReceived
        #expect(attemptBytes == 10, "the attempt's bytes, held or not")
        let released = progress.releaseHeld()
        #expect(released?.bytes == 10)
        #expect(progress.held == nil)
        #expect(progress.countOfBytesReceived == 10)
        #expect(progress.countOfBytesExpectedToReceive == 10)
        let nothingHeld = progress.releaseHeld()
        #expect(nothingHeld == nil, "nothing is held any more")
    }

    @Test func aResumedDownloadsKeptBytesAreCountedButNotReceivedByTheAttempt() {
        var progress = Self.progress()
        _ = progress.responseArrived(url: Self.url, received: 1000, expected: 3000, holding: false)
        _ = progress.received(500)
        #expect(progress.countOfBytesReceived == 1500)
        #expect(progress.keptBytesReceived == 1000)
        let attemptBytes = progress.attemptBytesReceived
        #expect(attemptBytes == 500)
    }

    @Test func aRetriedAttemptsProgressNeverGoesBackwards() {
        var progress = Self.progress()
        progress.downloadObject = Progress(totalUnitCount: -1)
        _ = progress.responseArrived(url: Self.url, received: 0, expected: 100, holding: false)
        _ = progress.received(80)
        #expect(progress.downloadObject?.completedUnitCount == 80)
        progress.attemptRetried()
        #expect(progress.countOfBytesReceived == 0)
        #expect(progress.countOfBytesExpectedToReceive == -1)
        _ = progress.responseArrived(url: Self.url, received: 0, expected: 100, holding: false)
        _ = progress.received(50)
        #expect(progress.downloadObject?.completedUnitCount == 80, "the object stays at its floor")
        _ = progress.received(40)
        #expect(progress.downloadObject?.completedUnitCount == 90, "and moves once the new counts pass it")
    }

    @Test func aSuccessfulEndSettlesBothWaysAtTheirTotals() {
        var progress = Self.progress()
        progress.uploadObject = Progress(totalUnitCount: -1)
        progress.downloadObject = Progress(totalUnitCount: -1)
        _ = progress.bodySent(total: 30, expected: nil)
        _ = progress.responseArrived(url: Self.url, received: 0, expected: -1, holding: false)
        _ = progress.received(70)
        progress.settleTotals()
        #expect(progress.countOfBytesExpectedToSend == 30)
        #expect(progress.countOfBytesExpectedToReceive == 70)
        #expect(progress.uploadObject?.fractionCompleted == 1)
        #expect(progress.downloadObject?.fractionCompleted == 1)
    }

    // MARK: Consumers

    @Test func consumersGetSnapshotsOfTheirDirectionOnly() {
        var progress = Self.progress(expectedToSend: 10)
        let upload = Self.join(&progress, .upload)
        let download = Self.join(&progress, .download)
        #expect(upload.id == 1)
        #expect(download.id == 2)
        #expect(upload.first.fractionCompleted == 0)
        _ = progress.bodySent(total: 5, expected: nil)
        let deliveries = progress.deliveries(.upload)
        #expect(deliveries.count == 1)
        #expect(deliveries.first?.snapshot.fractionCompleted == 0.5)
        _ = progress.responseArrived(url: Self.url, received: 0, expected: 4, holding: false)
        let received = progress.received(1)
        #expect(received.count == 1)
        #expect(received.first?.snapshot.completedUnitCount == 1)
    }

    @Test func aConsumersFractionNeverGoesBelowWhatItWasGiven() {
        var progress = Self.progress()
        _ = Self.join(&progress, .download)
        _ = progress.responseArrived(url: Self.url, received: 0, expected: 10, holding: false)
        let beforeRetry = progress.received(8)
        #expect(beforeRetry.first?.snapshot.fractionCompleted == 0.8)
        progress.attemptRetried()
        _ = progress.responseArrived(url: Self.url, received: 0, expected: 10, holding: false)
        let afterRetry = progress.received(2)
        #expect(afterRetry.first?.snapshot.fractionCompleted == 0.8, "a retry does not take it back")
    }

    /// A task with one download consumer whose response brought 3 of its 10 bytes.
    static func threeOfTenReceived() -> TransferProgress {
        var progress = Self.progress()
        _ = Self.join(&progress, .download)
        _ = progress.responseArrived(url: Self.url, received: 0, expected: 10, holding: false)
        _ = progress.received(3)
        return progress
    }

    @Test func theEndGivesOneAfterSuccessAndTheFractionReachedAfterAFailure() {
        var succeeded = Self.threeOfTenReceived()
        let last = succeeded.finishObservers(failed: false)
        #expect(last.map(\.1.fractionCompleted) == [1])
        #expect(last.map(\.1.isFinished) == [true])
        #expect(succeeded.observers.isEmpty)

        var failed = Self.threeOfTenReceived()
        let lastAfterFailure = failed.finishObservers(failed: true)
        #expect(lastAfterFailure.map(\.1.fractionCompleted) == [0.3])
        // A consumer that joins after the end gets the same last snapshot, and no place in the list.
        let late = Self.join(&failed, .download)
        #expect(late.id == nil)
        #expect(late.first.isFinished)
        #expect(late.first.fractionCompleted == 0.3)
    }
}
