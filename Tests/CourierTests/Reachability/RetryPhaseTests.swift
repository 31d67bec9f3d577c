import Testing

@testable import Courier

@Suite("Retry phase (the connectivity retry's, now every retrier's): wait, verdict, once")
struct RetryPhaseTests {
    static let failure = CourierError(.connectionFailed, "no route")

    @Test func abandoningAWaitHandsBackItsFailureOnce() {
        var phase = RetryPhase.waiting(failure: Self.failure, waiter: nil)
        #expect(phase.isWaiting)
        #expect(phase.abandon()?.failure?.code == .connectionFailed)
        #expect(!phase.isWaiting)
        #expect(phase.abandon() == nil)
    }

    @Test func aVerdictKeptForResumeIsTakenOnce() {
        var phase = RetryPhase.decided(.retry(reason: .connectivity), failure: Self.failure)
        #expect(phase.isWaiting)
        guard case .retry(.connectivity)? = phase.takeDecision()?.verdict else {
            Issue.record("the verdict was not kept")
            return
        }
        #expect(phase.takeDecision() == nil)
        #expect(phase.abandon() == nil)
    }

    @Test func nothingToAbandonOrTakeOutsideAWait() {
        var phase = RetryPhase.idle
        #expect(!phase.isWaiting)
        #expect(phase.abandon() == nil)
        #expect(phase.takeDecision() == nil)
        var waiting = RetryPhase.waiting(failure: Self.failure, waiter: nil)
        #expect(waiting.takeDecision() == nil, "a wait still under way has no verdict")
    }

    @Test func aWaitForAResponseHoldsNoError() {
        // A 503 being retried: the task would end with its response, not an error.
        var phase = RetryPhase.waiting(failure: nil, waiter: nil)
        let abandoned = phase.abandon()
        #expect(abandoned != nil && abandoned?.failure == nil)
    }
}
