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
        let suspension = machine.suspend()
        #expect(suspension == .suspendReceiving)
        #expect(machine.publicState == .suspended)
        #expect(machine.wantsPause)
        guard case .resumeReceiving(nil) = machine.resume() else { Issue.record("a suspended task reads again"); return }
        #expect(machine.publicState == .running)
        #expect(!machine.wantsPause)
    }

    @Test func suspendBeforeStartDoesNothing() {
        var machine = TaskMachine()
        let suspension = machine.suspend()
        #expect(suspension == .none)
        #expect(!machine.hasStarted)
        #expect(machine.publicState == .suspended)
    }

    @Test func suspendingTwiceTellsOnce() {
        var machine = Self.exchanging()
        let suspension = machine.suspend()
        #expect(suspension == .suspendReceiving)
        let suspensionAgain = machine.suspend()
        #expect(suspensionAgain == .none)
    }

    // MARK: Cancel

    @Test func cancelBeforeStartCompletesWithoutTheEngine() {
        var machine = TaskMachine()
        guard case .complete(nil) = machine.cancel() else { Issue.record("nothing runs: the task ends now"); return }
        #expect(machine.publicState == .canceling)
        guard case .none = machine.resume() else { Issue.record("a cancelled task does not start"); return }
        let completed = machine.complete()
        #expect(completed)
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
            let suspension = machine.suspend()
            #expect(suspension == .none)
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
        let suspension = machine.suspend()
        #expect(suspension == .suspendReceiving)
        #expect(machine.exchange == nil)
        guard case .pause = machine.attach(FakeExchange(), attempt: 0) else { Issue.record("paused on attach"); return }
        #expect(machine.exchange != nil)
    }

    @Test func cancelDuringAdaptationCancelsTheAdaptersAndEnds() async {
        var machine = TaskMachine()
        _ = machine.resume()
        machine.adaptationBegan()
        let work = Task<Void, Never> {}
        let started = machine.adaptationStarted(work)
        #expect(started == .keep)
        guard case .complete(let cancelled?) = machine.cancel() else { Issue.record("the adapters are cancelled"); return }
        #expect(cancelled == work)
        let completed = machine.complete()
        #expect(completed)
        let adapted = machine.adaptationFinished(attempt: 0)
        #expect(adapted == .none, "the adapters' result goes nowhere")
    }

    @Test func cancelBeforeTheAdaptersTaskIsStoredCancelsItWhenStored() {
        var machine = TaskMachine()
        _ = machine.resume()
        machine.adaptationBegan()
        guard case .complete(nil) = machine.cancel() else { Issue.record("ends now"); return }
        let completed = machine.complete()
        #expect(completed)
        let started = machine.adaptationStarted(Task<Void, Never> {})
        #expect(started == .cancel, "the late task is cancelled")
    }

    /// A cancel between the resume and the adapters' start finds nothing to cancel; the adapters'
    /// task is then cancelled as it is stored, and the task ends at once, without waiting for
    /// adapters that may never return (it waited for them to return before).
    @Test func cancelBetweenResumeAndTheAdaptersCancelsThemAndEnds() {
        var machine = TaskMachine()
        _ = machine.resume()
        guard case .cancelExchange(nil) = machine.cancel() else { Issue.record("starting: nothing to cancel yet"); return }
        machine.adaptationBegan()
        let started = machine.adaptationStarted(Task<Void, Never> {})
        #expect(started == .cancelAndComplete)
        let completed = machine.complete()
        #expect(completed)
        let adapted = machine.adaptationFinished(attempt: 0)
        #expect(adapted == .none, "the adapters' result goes nowhere")
    }

    @Test func cancelDuringARetryWaitCancelsTheWaiterAndEnds() {
        var machine = Self.awaitingRetry()
        let waiter = Task<Void, Never> {}
        let waiterKept = machine.retryWaitStarted(waiter)
        #expect(waiterKept)
        guard case .complete(let cancelled?) = machine.cancel() else { Issue.record("the waiter is cancelled"); return }
        #expect(cancelled == waiter)
        let completed = machine.complete()
        #expect(completed)
        let verdict = machine.retryDecided(.retry(reason: .connectivity))
        #expect(verdict == nil, "a late verdict does nothing")
    }

    @Test func aCheckedSuccessWaitsLikeARetryAndEndsWithoutAFailure() {
        var machine = Self.exchanging()
        let checking = machine.attemptAwaitsCheck()
        #expect(checking)
        #expect(machine.isAwaitingRetry && machine.exchange == nil && machine.publicState == .running)
        let waiterKept = machine.retryWaitStarted(Task<Void, Never> {})
        #expect(waiterKept)
        // The serializer took the response: the task ends with it, no failure of its own.
        #expect(machine.retryDecided(.finish(nil)) == .complete(nil))
        // Refused, then retried: the next attempt starts.
        var refused = Self.exchanging()
        _ = refused.attemptAwaitsCheck()
        #expect(refused.retryDecided(.retry(reason: .custom)) == .retry(.custom))
        #expect(refused.attempt == 1)
        // Cancelled while checking: the check's waiter is cancelled and the task ends now.
        var cancelled = Self.exchanging()
        _ = cancelled.attemptAwaitsCheck()
        let waiter = Task<Void, Never> {}
        _ = cancelled.retryWaitStarted(waiter)
        guard case .complete(let stopped?) = cancelled.cancel() else { Issue.record("the check's waiter is cancelled"); return }
        #expect(stopped == waiter)
        // A task cancelled before its attempt ended is not checked.
        var cancelledFirst = Self.exchanging()
        _ = cancelledFirst.cancel()
        let checked = cancelledFirst.attemptAwaitsCheck()
        #expect(!checked)
    }

    // MARK: Adapters

    @Test func theAdaptersResultGoesOnToTheEngine() {
        var machine = TaskMachine()
        _ = machine.resume()
        machine.adaptationBegan()
        #expect(machine.publicState == .running)
        let adapted = machine.adaptationFinished(attempt: 0)
        #expect(adapted == .send, "finished before their task was stored")
        let started = machine.adaptationStarted(Task<Void, Never> {})
        #expect(started == .keep, "the finished work is not cancelled")
        let adaptedAgain = machine.adaptationFinished(attempt: 0)
        #expect(adaptedAgain == .none, "once")
        let exchange = FakeExchange()
        guard case .none = machine.attach(exchange, attempt: 0) else { Issue.record("kept"); return }
        #expect(machine.exchange === exchange)
    }

    // MARK: Retry

    @Test func aFailedAttemptWaitsForTheVerdictThenStartsTheNext() {
        var machine = Self.exchanging()
        let waitsForRetry = machine.attemptFailed(Self.failure, retryable: true)
        #expect(waitsForRetry)
        #expect(machine.isAwaitingRetry)
        #expect(machine.exchange == nil, "the failed exchange is let go")
        let waiterKept = machine.retryWaitStarted(Task<Void, Never> {})
        #expect(waiterKept)
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
        let waitsForRetry = machine.attemptFailed(Self.failure, retryable: false)
        #expect(!waitsForRetry)
        let completed = machine.complete()
        #expect(completed)
    }

    @Test func aCancelledTaskIsNotRetried() {
        var machine = Self.exchanging()
        _ = machine.cancel()
        let waitsForRetry = machine.attemptFailed(Self.failure, retryable: true)
        #expect(!waitsForRetry)
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
        let suspension = machine.suspend()
        #expect(suspension == .suspendReceiving)
        let verdict = machine.retryDecided(.retry(reason: .connectivity))
        #expect(verdict == nil, "kept")
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
        let abandoned = machine.abandonRetryWait()
        #expect(abandoned?.failure?.code == .connectionFailed)
        let abandonedAgain = machine.abandonRetryWait()
        #expect(abandonedAgain == nil)
        var kept = Self.awaitingRetry()
        _ = kept.suspend()
        _ = kept.retryDecided(.retry(reason: .connectivity))
        let abandonedThird = kept.abandonRetryWait()
        #expect(abandonedThird?.failure?.code == .connectionFailed, "a kept verdict is abandoned too")
        var none = Self.exchanging()
        let abandonedFourth = none.abandonRetryWait()
        #expect(abandonedFourth == nil, "nothing to abandon outside a wait")
    }

    @Test func aWaiterStoredAfterTheWaitEndedIsCancelled() {
        var machine = Self.awaitingRetry()
        _ = machine.abandonRetryWait()
        let waiterKept = machine.retryWaitStarted(Task<Void, Never> {})
        #expect(!waiterKept)
    }

    // MARK: The end

    @Test("A download's end is not completed until it is settled (its file moved, its error known)")
    func anEndSettledLaterLooksCompletedOnlyThen() {
        var machine = Self.exchanging()
        let completed = machine.complete(settledLater: true)
        #expect(completed)
        #expect(machine.hasEnded)
        #expect(machine.publicState == .running)
        guard case .none = machine.cancel() else { Issue.record("an ended task is not cancelled"); return }
        #expect(machine.publicState == .running)
        machine.settled()
        #expect(machine.publicState == .completed)
        var cancelled = Self.exchanging()
        _ = cancelled.cancel()
        _ = cancelled.complete(settledLater: true)
        #expect(cancelled.publicState == .canceling)
        cancelled.settled()
        #expect(cancelled.publicState == .completed)
    }

    @Test func completesExactlyOnce() {
        var machine = Self.exchanging()
        let completed = machine.complete()
        #expect(completed)
        let completedAgain = machine.complete()
        #expect(!completedAgain)
        #expect(machine.publicState == .completed)
        #expect(machine.exchange == nil)
        guard case .none = machine.cancel() else { Issue.record("a finished task is not cancelled"); return }
        guard case .none = machine.resume() else { Issue.record("nor resumed"); return }
        let suspension = machine.suspend()
        #expect(suspension == .none)
        let waitsForRetry = machine.attemptFailed(Self.failure, retryable: true)
        #expect(!waitsForRetry)
    }

    @Test func aTaskDroppedUnstartedEndsAndOnlyThen() {
        var unstarted = TaskMachine()
        let ended = unstarted.released()
        #expect(ended)
        #expect(unstarted.hasEnded)
        let completed = unstarted.complete()
        #expect(!completed, "it ended when released")
        var started = Self.exchanging()
        let endedAgain = started.released()
        #expect(!endedAgain, "a started task is held until it completes")
    }
}
