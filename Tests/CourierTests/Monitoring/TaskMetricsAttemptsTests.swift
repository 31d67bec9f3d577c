import Foundation
import HTTPTypes
import CourierTesting
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

/// What a task's metrics say of its redirects, over a socket.
@Suite("Monitoring: redirects in a task's metrics")
struct TaskMetricsRedirectTests {
    /// A 307 sends the body again: the attempt sent it twice, as its two transactions did (it
    /// said once: the last hop's count), and one redirect was followed.
    @Test func aBodySentAgainByA307CountsTwice() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: nil) { manager in
                var request = Request(method: .post, url: server.url("/redirect-to?url=/anything&status_code=307"))
                request.body = .data(Data(repeating: UInt8(ascii: "x"), count: 1000))
                let response = try await manager.data(for: request)
                let metrics = try #require(response.metrics)
                #expect(metrics.redirectCount == 1)
                #expect(metrics.transactions.map(\.countOfRequestBodyBytesSent) == [1000, 1000])
                #expect(metrics.bytesSent == 2000)
            }
        }
    }

    /// A redirect the session's hook declines is the task's answer, not a redirect followed
    /// (curl's `CURLINFO_REDIRECT_COUNT`; the count said one).
    @Test func aDeclinedRedirectIsNotCounted() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: nil) { manager in
                manager.hooks.taskWillPerformHTTPRedirection = { _, _, _, _ in nil }
                var accepting = HTTPResponseSerializer()
                accepting.acceptableStatusCodes = IndexSet(integersIn: 200..<400)
                let response = try await manager.response(for: Request(url: server.url("/redirect-to?url=/get")), serializer: accepting)
                #expect(response.response.status.code == 302)
                #expect(response.metrics?.redirectCount == 0)
            }
        }
    }
}
