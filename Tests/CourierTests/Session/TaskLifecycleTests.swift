@testable import Courier
import Testing

@Suite("Task life cycle state machine")
struct TaskLifecycleTests {
    @Test func resumeStartsOnceThenResumesReceiving() {
        var state = TaskLifecycle.created
        #expect(state.resume() == .start)
        #expect(state == .running)
        #expect(state.resume() == .none)
        #expect(state.suspend() == .suspendReceiving)
        #expect(state.publicState == .suspended)
        #expect(state.resume() == .resumeReceiving)
        #expect(state == .running)
    }

    @Test func suspendBeforeStartDoesNothing() {
        var state = TaskLifecycle.created
        #expect(state.suspend() == .none)
        #expect(state == .created)
        #expect(state.publicState == .suspended)
    }

    @Test func cancelBeforeStartCompletesWithoutEngine() {
        var state = TaskLifecycle.created
        #expect(state.cancel() == .completeWithoutStarting)
        #expect(state.resume() == .none)
        let completed = state.complete()
        #expect(completed)
        #expect(state.publicState == .completed)
    }

    @Test func cancelWhileRunningOrSuspendedCancelsExchangeOnce() {
        for start in [TaskLifecycle.running, .suspended] {
            var state = start
            #expect(state.cancel() == .cancelExchange)
            #expect(state.publicState == .canceling)
            #expect(state.cancel() == .none)
            #expect(state.suspend() == .none)
            #expect(state.resume() == .none)
        }
    }

    @Test func completesExactlyOnce() {
        var state = TaskLifecycle.running
        let first = state.complete()
        let second = state.complete()
        #expect(first)
        #expect(!second)
        #expect(state.cancel() == .none)
        #expect(state.resume() == .none)
    }
}
