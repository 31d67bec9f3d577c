import Testing

@testable import Courier

@Suite("Interceptors: RetryBudget")
struct RetryBudgetTests {
    @Test("Retries are capped at ratio × requests plus the minimum, over the window")
    func cap() {
        let clock = ManualRetryClock()
        let budget = RetryBudget(ratio: 0.1, minimumPerSecond: 0.5, window: .seconds(10), clock: clock)
        // The minimum alone: 0.5 × 10 s = 5 retries.
        #expect((0..<8).filter { _ in budget.tryWithdraw(for: .transientFailure) }.count == 5)
        for _ in 0..<100 { budget.deposit() }
        // 100 requests allow 10 more (15 in all).
        #expect((0..<20).filter { _ in budget.tryWithdraw(for: .transientFailure) }.count == 10)
        #expect(budget.statistics == RetryBudget.Statistics(requests: 100, retries: 15, refused: 13))
    }

    @Test("Requests and retries leave the window as it slides")
    func window() {
        let clock = ManualRetryClock()
        let budget = RetryBudget(ratio: 0.5, minimumPerSecond: 0, window: .seconds(10), clock: clock)
        for _ in 0..<10 { budget.deposit() }
        #expect((0..<10).filter { _ in budget.tryWithdraw(for: .transientFailure) }.count == 5)
        clock.advance(by: .seconds(11))
        #expect(!budget.tryWithdraw(for: .transientFailure))
        for _ in 0..<4 { budget.deposit() }
        #expect((0..<4).filter { _ in budget.tryWithdraw(for: .transientFailure) }.count == 2)
    }

    @Test("Exempt reasons pass and spend nothing")
    func exempt() {
        let budget = RetryBudget(ratio: 0, minimumPerSecond: 0, clock: ManualRetryClock())
        #expect(!budget.tryWithdraw(for: .transientFailure))
        #expect(budget.tryWithdraw(for: .authentication))
        #expect(budget.tryWithdraw(for: .challenge))
        #expect(budget.tryWithdraw(for: .connectivity))
        #expect(budget.statistics == RetryBudget.Statistics(requests: 0, retries: 0, refused: 1))
    }
}
