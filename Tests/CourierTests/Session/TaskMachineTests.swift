@testable import Courier
import Testing

/// The task's life, event by event, without I/O: what each event does to the phase, and what the
/// driver is told to do.
@Suite("Task state machine")
struct TaskMachineTests {
    final class FakeExchange: Exchange {
        func cancel(with error: CourierError) {}
        func suspendReceiving() {}
        func resumeReceiving() {}
    }

    static let failure = CourierError(.connectionFailed, "no route")

    /// A machine whose first attempt runs on `exchange`.
    static func exchanging(_ exchange: FakeExchange = FakeExchange()) -> TaskMachine {
        var machine = TaskMachine()
        _ = machine.resume()
        machine.exchangeWillStart(exchange)
        _ = machine.attach(exchange, attempt: 0)
        return machine
    }

    /// A machine whose first attempt failed and waits for the retriers.
    static func awaitingRetry(failure: CourierError? = Self.failure) -> TaskMachine {
        var machine = Self.exchanging()
        _ = machine.attemptFailed(failure, retryable: true)
        return machine
    }

    // MARK: Resume, suspend

    @Test func resumeStartsOnceThenResumesReceiving() {
        var machine = TaskMachine()
        #expect(machine.publicState == .suspended)
        guard case .startAttempt = machine.resume() else { Issue.record("the first resume starts"); return }
        #expect(machine.publicState == .running)
        guard case .none = machine.resume() else { Issue.record("a running task's resume does nothing"); return }
        let event1 = machine.suspend()
        #expect(event1 == .suspendReceiving)
        #expect(machine.publicState == .suspended)
        #expect(machine.wantsPause)
        guard case .resumeReceiving(nil) = machine.resume() else { Issue.record("a suspended task reads again"); return }
        #expect(machine.publicState == .running)
        #expect(!machine.wantsPause)
    }

    @Test func suspendBeforeStartDoesNothing() {
        var machine = TaskMachine()
        let event2 = machine.suspend()
        #expect(event2 == .none)
        #expect(!machine.hasStarted)
        #expect(machine.publicState == .suspended)
    }

    @Test func suspendingTwiceTellsOnce() {
        var machine = Self.exchanging()
        let event3 = machine.suspend()
        #expect(event3 == .suspendReceiving)
        let event4 = machine.suspend()
        #expect(event4 == .none)
    }

    // MARK: Cancel

    @Test func cancelBeforeStartCompletesWithoutTheEngine() {
        var machine = TaskMachine()
        guard case .complete(nil) = machine.cancel() else { Issue.record("nothing runs: the task ends now"); return }
        #expect(machine.publicState == .canceling)
        guard case .none = machine.resume() else { Issue.record("a cancelled task does not start"); return }
        let event5 = machine.complete()
        #expect(event5)
        #expect(machine.publicState == .completed)
    }

    @Test func cancelWhileExchangingCancelsTheExchangeOnce() {
        let exchange = FakeExchange()
        for suspended in [false, true] {
            var machine = Self.exchanging(exchange)
            if suspended { _ = machine.suspend() }
            guard case .cancelExchange(let cancelled) = machine.cancel() else { Issue.record("the exchange is cancelled"); return }
            #expect(cancelled === exchange)
            #expect(machine.publicState == .canceling)
            #expect(!machine.wantsPause, "a cancelled exchange reads on to its end")
            guard case .none = machine.cancel() else { Issue.record("once"); return }
            let event6 = machine.suspend()
            #expect(event6 == .none)
            guard case .none = machine.resume() else { Issue.record("a cancelling task is not resumed"); return }
        }
    }

    @Test func cancelBeforeTheEngineHandsOverItsExchangeCancelsItOnAttach() {
        var machine = TaskMachine()
        _ = machine.resume()
        guard case .cancelExchange(nil) = machine.cancel() else { Issue.record("no handle yet"); return }
        let exchange = FakeExchange()
        machine.exchangeWillStart(exchange)
        guard case .cancel = machine.attach(exchange, attempt: 0) else { Issue.record("cancelled on attach"); return }
    }

    @Test func suspendBeforeTheEngineHandsOverItsExchangePausesItOnAttach() {
        var machine = TaskMachine()
        _ = machine.resume()
        let event7 = machine.suspend()
        #expect(event7 == .suspendReceiving)
        #expect(machine.exchange == nil)
        guard case .pause = machine.attach(FakeExchange(), attempt: 0) else { Issue.record("paused on attach"); return }
        #expect(machine.exchange != nil)
    }

    @Test func cancelDuringAdaptationCancelsTheAdaptersAndEnds() async {
        var machine = TaskMachine()
        _ = machine.resume()
        machine.adaptationBegan()
        let work = Task<Void, Never> {}
        let event8 = machine.adaptationStarted(work)
        #expect(event8)
        guard case .complete(let cancelled?) = machine.cancel() else { Issue.record("the adapters are cancelled"); return }
        #expect(cancelled == work)
        let event9 = machine.complete()
        #expect(event9)
        let event10 = machine.adaptationFinished(attempt: 0)
        #expect(event10 == .none, "the adapters' result goes nowhere")
    }

    @Test func cancelBeforeTheAdaptersTaskIsStoredCancelsItWhenStored() {
        var machine = TaskMachine()
        _ = machine.resume()
        machine.adaptationBegan()
        guard case .complete(nil) = machine.cancel() else { Issue.record("ends now"); return }
        let event11 = machine.complete()
        #expect(event11)
        let event12 = machine.adaptationStarted(Task<Void, Never> {})
        #expect(!event12, "the late task is cancelled")
    }

    @Test func cancelBetweenResumeAndTheAdaptersEndsWhenTheyReturn() {
        var machine = TaskMachine()
        _ = machine.resume()
        guard case .cancelExchange(nil) = machine.cancel() else { Issue.record("starting: nothing to cancel yet"); return }
        machine.adaptationBegan()
        let event13 = machine.adaptationStarted(Task<Void, Never> {})
        #expect(event13)
        let event14 = machine.adaptationFinished(attempt: 0)
        #expect(event14 == .completeCancelled, "the adapted request is not sent")
    }

    @Test func cancelDuringARetryWaitCancelsTheWaiterAndEnds() {
        var machine = Self.awaitingRetry()
        let waiter = Task<Void, Never> {}
        let event15 = machine.retryWaitStarted(waiter)
        #expect(event15)
        guard case .complete(let cancelled?) = machine.cancel() else { Issue.record("the waiter is cancelled"); return }
        #expect(cancelled == waiter)
        let event16 = machine.complete()
        #expect(event16)
        let event17 = machine.retryDecided(.retry(reason: .connectivity))
        #expect(event17 == nil, "a late verdict does nothing")
    }

    // MARK: Adapters

    @Test func theAdaptersResultGoesOnToTheEngine() {
        var machine = TaskMachine()
        _ = machine.resume()
        machine.adaptationBegan()
        #expect(machine.publicState == .running)
        let event18 = machine.adaptationFinished(attempt: 0)
        #expect(event18 == .send, "finished before their task was stored")
        let event19 = machine.adaptationStarted(Task<Void, Never> {})
        #expect(event19, "the finished work is not cancelled")
        let event20 = machine.adaptationFinished(attempt: 0)
        #expect(event20 == .none, "once")
        let exchange = FakeExchange()
        guard case .none = machine.attach(exchange, attempt: 0) else { Issue.record("kept"); return }
        #expect(machine.exchange === exchange)
    }

    // MARK: Retry

    @Test func aFailedAttemptWaitsForTheVerdictThenStartsTheNext() {
        var machine = Self.exchanging()
        let event21 = machine.attemptFailed(Self.failure, retryable: true)
        #expect(event21)
        #expect(machine.isAwaitingRetry)
        #expect(machine.exchange == nil, "the failed exchange is let go")
        let event22 = machine.retryWaitStarted(Task<Void, Never> {})
        #expect(event22)
        guard case .retry(.connectivity)? = machine.retryDecided(.retry(reason: .connectivity)) else {
            Issue.record("the next attempt starts"); return
        }
        #expect(machine.attempt == 1)
        guard case .none = machine.attach(FakeExchange(), attempt: 0) else { Issue.record("the old attempt's handle"); return }
        #expect(machine.exchange == nil)
        guard case .none = machine.attach(FakeExchange(), attempt: 1) else { Issue.record("kept"); return }
        #expect(machine.exchange != nil)
    }

    @Test func aFailureNothingRetriesCompletes() {
        var machine = Self.exchanging()
        let event23 = machine.attemptFailed(Self.failure, retryable: false)
        #expect(!event23)
        let event24 = machine.complete()
        #expect(event24)
    }

    @Test func aCancelledTaskIsNotRetried() {
        var machine = Self.exchanging()
        _ = machine.cancel()
        let event25 = machine.attemptFailed(Self.failure, retryable: true)
        #expect(!event25)
    }

    @Test func aVerdictToFinishEndsWithTheAttemptsFailureOrItsOwnError() {
        var machine = Self.awaitingRetry()
        guard case .complete(let error)? = machine.retryDecided(.finish(nil)) else { Issue.record("ends"); return }
        #expect(error?.code == .connectionFailed)
        var other = Self.awaitingRetry()
        guard case .complete(let own)? = other.retryDecided(.finish(CourierError(.timedOut, "late"))) else {
            Issue.record("ends"); return
        }
        #expect(own?.code == .timedOut)
        // A 503 being retried: the task would end with its response, not an error.
        var response = Self.awaitingRetry(failure: nil)
        guard case .complete(nil)? = response.retryDecided(.finish(nil)) else { Issue.record("ends with no error"); return }
    }

    @Test func aVerdictWhileSuspendedIsKeptForResumeAndTakenOnce() {
        var machine = Self.awaitingRetry()
        let event26 = machine.suspend()
        #expect(event26 == .suspendReceiving)
        let event27 = machine.retryDecided(.retry(reason: .connectivity))
        #expect(event27 == nil, "kept")
        #expect(machine.isAwaitingRetry)
        guard case .resumeReceiving(.retry(.connectivity)?) = machine.resume() else {
            Issue.record("acted on at resume"); return
        }
        #expect(machine.attempt == 1)
        #expect(!machine.isAwaitingRetry)
        _ = machine.suspend()
        guard case .resumeReceiving(nil) = machine.resume() else { Issue.record("taken once"); return }
    }

    @Test func abandoningAWaitHandsBackItsFailureOnce() {
        var machine = Self.awaitingRetry()
        let event28 = machine.abandonRetryWait()
        #expect(event28?.failure?.code == .connectionFailed)
        let event29 = machine.abandonRetryWait()
        #expect(event29 == nil)
        var kept = Self.awaitingRetry()
        _ = kept.suspend()
        _ = kept.retryDecided(.retry(reason: .connectivity))
        let event30 = kept.abandonRetryWait()
        #expect(event30?.failure?.code == .connectionFailed, "a kept verdict is abandoned too")
        var none = Self.exchanging()
        let event31 = none.abandonRetryWait()
        #expect(event31 == nil, "nothing to abandon outside a wait")
    }

    @Test func aWaiterStoredAfterTheWaitEndedIsCancelled() {
        var machine = Self.awaitingRetry()
        _ = machine.abandonRetryWait()
        let event32 = machine.retryWaitStarted(Task<Void, Never> {})
        #expect(!event32)
    }

    // MARK: The end

    @Test func completesExactlyOnce() {
        var machine = Self.exchanging()
        let event33 = machine.complete()
        #expect(event33)
        let event34 = machine.complete()
        #expect(!event34)
        #expect(machine.publicState == .completed)
        #expect(machine.exchange == nil)
        guard case .none = machine.cancel() else { Issue.record("a finished task is not cancelled"); return }
        guard case .none = machine.resume() else { Issue.record("nor resumed"); return }
        let event35 = machine.suspend()
        #expect(event35 == .none)
        let event36 = machine.attemptFailed(Self.failure, retryable: true)
        #expect(!event36)
    }

    @Test func aTaskDroppedUnstartedEndsAndOnlyThen() {
        var unstarted = TaskMachine()
        let event37 = unstarted.released()
        #expect(event37)
        #expect(unstarted.hasEnded)
        let event38 = unstarted.complete()
        #expect(!event38, "it ended when released")
        var started = Self.exchanging()
        let event39 = started.released()
        #expect(!event39, "a started task is held until it completes")
    }
}
