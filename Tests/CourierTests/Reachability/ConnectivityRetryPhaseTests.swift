import Testing

@testable import Courier

@Suite("Connectivity retry phase: wait, verdict, once")
struct ConnectivityRetryPhaseTests {
    static let failure = CourierError(.connectionFailed, "no route")

    @Test func abandoningAWaitHandsBackItsFailureOnce() {
        var phase = ConnectivityRetryPhase.waiting(failure: Self.failure, waiter: nil)
        #expect(phase.isWaiting)
        #expect(phase.abandon()?.failure.code == .connectionFailed)
        #expect(!phase.isWaiting)
        #expect(phase.abandon() == nil)
    }

    @Test func aVerdictKeptForResumeIsTakenOnce() {
        var phase = ConnectivityRetryPhase.decided(networkIsBack: true, failure: Self.failure)
        #expect(phase.isWaiting)
        #expect(phase.takeDecision()?.networkIsBack == true)
        #expect(phase.takeDecision() == nil)
        #expect(phase.abandon() == nil)
    }

    @Test func nothingToAbandonOrTakeOutsideAWait() {
        for start in [ConnectivityRetryPhase.unused, .spent] {
            var phase = start
            #expect(!phase.isWaiting)
            #expect(phase.abandon() == nil)
            #expect(phase.takeDecision() == nil)
        }
        var waiting = ConnectivityRetryPhase.waiting(failure: Self.failure, waiter: nil)
        #expect(waiting.takeDecision() == nil, "a wait still under way has no verdict")
    }
}
