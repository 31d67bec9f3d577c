import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// `TaskMetrics` keeps its attempts as the earlier ones and the last (no array for a task that
/// was not retried); from outside they are one list, in order, whatever the count.
@Suite("Monitoring: a task's metrics keep their attempts in order")
struct TaskMetricsAttemptsTests {
    static func attempt(_ status: HTTPResponse.Status, redirects: Int, sent: Int64, received: Int64) -> TaskMetrics.Attempt {
        TaskMetrics.Attempt(
            request: Request(url: URL(string: "http://x.test/")!), start: .zero, exchangeStart: nil, responseStart: nil, end: .seconds(1),
            response: HTTPResponse(status: status), error: nil, redirectCount: redirects, bytesSent: sent, bytesReceived: received)
    }

    @Test("None, one and three attempts: the list, its order and the sums over it", arguments: [0, 1, 3])
    func attemptsInOrder(count: Int) {
        let statuses: [HTTPResponse.Status] = [.serviceUnavailable, .badGateway, .ok].suffix(count)
        let attempts = statuses.enumerated().map { index, status in
            Self.attempt(status, redirects: index, sent: Int64(10 * (index + 1)), received: Int64(100 * (index + 1)))
        }
        let metrics = TaskMetrics(
            taskStart: Date(), duration: .seconds(3), attempts: attempts, originalRequest: Request(url: URL(string: "http://x.test/")!),
            response: nil, error: nil)
        #expect(metrics.attempts.map { $0.response?.status } == statuses.map { Optional($0) })
        #expect(metrics.redirectCount == attempts.reduce(0) { $0 + $1.redirectCount })
        #expect(metrics.bytesSent == attempts.reduce(0) { $0 + $1.bytesSent })
        #expect(metrics.bytesReceived == attempts.reduce(0) { $0 + $1.bytesReceived })
    }

    @Test("Appending, changing and removing attempts through the list")
    func changedThroughTheList() {
        var metrics = TaskMetrics(
            taskStart: Date(), duration: .seconds(1), attempts: [Self.attempt(.ok, redirects: 0, sent: 1, received: 2)],
            originalRequest: Request(url: URL(string: "http://x.test/")!), response: nil, error: nil)
        metrics.attempts.append(Self.attempt(.created, redirects: 2, sent: 3, received: 4))
        #expect(metrics.attempts.map { $0.response?.status } == [.ok, .created])
        metrics.attempts[0].redirectCount = 5
        #expect(metrics.redirectCount == 7)
        metrics.attempts.removeAll()
        #expect(metrics.attempts.isEmpty && metrics.bytesSent == 0)
    }
}
