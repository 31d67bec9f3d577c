import Foundation
import Testing

@testable import Courier

/// ``Request/summary``, which every error message and the task metrics' description start with,
/// never carries a password from the URL (`courier -v http://ann:secret@host/` printed it in its
/// metrics lines; errors printed it too).
@Suite struct RequestSummaryTests {
    @Test func aPasswordInTheURLReadsAsStars() {
        let request = Request(url: URL(string: "http://ann:secret@example.com:8080/a?b=c")!)
        #expect(request.summary == "GET http://ann:***@example.com:8080/a?b=c")
        #expect("\(request)" == "GET http://ann:***@example.com:8080/a?b=c")
    }

    @Test func otherURLsAreUnchanged() {
        for url in ["http://example.com/a@b", "http://ann@example.com/", "https://example.com/?mail=a@b.c", "http://[::1]:8080/x"] {
            #expect(Request(url: URL(string: url)!).summary == "GET \(url)")
        }
    }

    @Test func theMetricsDescriptionHidesItToo() {
        var metrics = TransactionMetrics(request: Request(url: URL(string: "https://ann:secret@example.com/x")!), fetchStart: .now)
        metrics.networkProtocolName = "h2"
        #expect(metrics.description.hasPrefix("GET https://ann:***@example.com/x"), "\(metrics.description)")
        #expect(!metrics.description.contains("secret"))
    }
}
