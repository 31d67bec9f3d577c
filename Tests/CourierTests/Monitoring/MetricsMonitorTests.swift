import Foundation
import HTTPTypes
import MetricsTestKit
import Testing

@testable import Courier

@Suite("Monitoring: MetricsMonitor's counters and timers")
struct MetricsMonitorTests {
    @Test("Requests by method and status class, failures by code, durations, bytes each way, retries by reason")
    func recorded() throws {
        let metrics = TestMetrics()
        let monitor = MetricsMonitor(factory: metrics)
        let task = SessionManager(engine: RefusingEngine()).dataTask(with: Request(url: URL(string: "http://x.test/")!), completionHandler: nil)
        let request = Request(method: .post, url: URL(string: "http://x.test/")!)
        func attempt(_ status: HTTPResponse.Status?, _ error: CourierError?, sent: Int64, received: Int64) -> TaskMetrics.Attempt {
            TaskMetrics.Attempt(
                request: request, start: .zero, exchangeStart: .zero, responseStart: nil, end: .milliseconds(5),
                response: status.map { HTTPResponse(status: $0) }, error: error, redirectCount: 0, bytesSent: sent, bytesReceived: received)
        }
        monitor.task(task, didFinishCollecting: TaskMetrics(
            taskStart: Date(), duration: .milliseconds(42), attempts: [attempt(.serviceUnavailable, nil, sent: 10, received: 5), attempt(.ok, nil, sent: 10, received: 100)],
            originalRequest: request, response: HTTPResponse(status: .ok), error: nil))
        monitor.task(task, didFinishCollecting: TaskMetrics(
            taskStart: Date(), duration: .milliseconds(7), attempts: [attempt(nil, CourierError(.timedOut, "t"), sent: 0, received: 0)],
            originalRequest: request, response: nil, error: CourierError(.timedOut, "t")))
        monitor.task(task, willRetry: FailedAttempt(request: request), after: .zero, reason: .transientFailure)
        #expect(try metrics.expectCounter("courier_requests_total", [("method", "POST"), ("status_class", "2xx")]).totalValue == 1)
        #expect(try metrics.expectCounter("courier_requests_total", [("method", "POST"), ("status_class", "error")]).totalValue == 1)
        #expect(try metrics.expectCounter("courier_request_failures_total", [("code", "timedOut")]).totalValue == 1)
        #expect(try metrics.expectTimer("courier_request_duration_seconds", [("method", "POST"), ("status_class", "2xx")]).lastValue == 42_000_000)
        #expect(try metrics.expectCounter("courier_request_body_bytes_total").totalValue == 20)
        #expect(try metrics.expectCounter("courier_response_body_bytes_total").totalValue == 105)
        #expect(try metrics.expectCounter("courier_retries_total", [("reason", "transient-failure")]).totalValue == 1)
    }

    @Test("A method that is not one of RFC 9110's or PATCH is counted as _OTHER, whatever its name: the dimension stays bounded")
    func unknownMethodsShareOneDimension() throws {
        let metrics = TestMetrics()
        let monitor = MetricsMonitor(factory: metrics)
        let task = SessionManager(engine: RefusingEngine()).dataTask(with: Request(url: URL(string: "http://x.test/")!), completionHandler: nil)
        for name in ["GET", "PATCH", "PROPFIND", "BREW", "X-RANDOM-1", "X-RANDOM-2"] {
            let request = Request(method: try #require(HTTPRequest.Method(name)), url: URL(string: "http://x.test/")!)
            monitor.task(task, didFinishCollecting: TaskMetrics(
                taskStart: Date(), duration: .milliseconds(1), attempts: [], originalRequest: request, response: HTTPResponse(status: .ok), error: nil))
        }
        #expect(try metrics.expectCounter("courier_requests_total", [("method", "GET"), ("status_class", "2xx")]).totalValue == 1)
        #expect(try metrics.expectCounter("courier_requests_total", [("method", "PATCH"), ("status_class", "2xx")]).totalValue == 1)
        #expect(try metrics.expectCounter("courier_requests_total", [("method", "_OTHER"), ("status_class", "2xx")]).totalValue == 4)
        #expect(metrics.counters.filter { $0.label == "courier_requests_total" }.count == 3, "one series per known method seen, and one for the rest")
    }
}
