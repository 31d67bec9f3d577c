@testable import Courier
import Foundation
import HTTPTypes
import Instrumentation
import Logging
import Testing

/// `Request`, `CourierError`, `TransactionMetrics` and `TaskMetrics` keep their fields behind one shared
/// reference (copy-on-write). They must still behave as values: a change to a copy never shows
/// in the original, whichever field it touches, and every change stays in the value it was made to.
@Suite("Copy-on-write values")
struct CopyOnWriteValueTests {
    /// Changes one field of a fresh copy (its first change: the copy still shares its fields with
    /// the original), then expects the original as it was.
    static func expectOriginalKept<Value>(
        _ original: Value, _ field: String, change: (inout Value) throws -> Void, unchanged: (Value) -> Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) rethrows {
        var copy = original
        try change(&copy)
        #expect(unchanged(original), "changing \(field) on a copy changed the original", sourceLocation: sourceLocation)
        #expect(!unchanged(copy), "the change to \(field) did not stay in the copy", sourceLocation: sourceLocation)
    }

    @Test func aChangedRequestCopyLeavesTheOriginalAlone() throws {
        let url = try #require(URL(string: "http://example.com/a"))
        let other = try #require(URL(string: "http://example.com/b"))
        let original = Request(method: .get, url: url, headerFields: [.accept: "text/plain"])
        Self.expectOriginalKept(original, "method", change: { $0.method = .post }, unchanged: { $0.method == .get })
        Self.expectOriginalKept(original, "url", change: { $0.url = other }, unchanged: { $0.url == url })
        Self.expectOriginalKept(
            original, "headerFields (append)", change: { $0.headerFields.append(HTTPField(name: .userAgent, value: "test")) },
            unchanged: { $0.headerFields == [.accept: "text/plain"] })
        Self.expectOriginalKept(
            original, "headerFields (subscript)", change: { $0.headerFields[.accept] = "application/json" },
            unchanged: { $0.headerFields == [.accept: "text/plain"] })
        Self.expectOriginalKept(
            original, "setValue(_:forHTTPHeaderField:)", change: { $0.setValue(nil, forHTTPHeaderField: "Accept") },
            unchanged: { $0.headerFields == [.accept: "text/plain"] })
        Self.expectOriginalKept(
            original, "body", change: { $0.body = .data(Data("body".utf8)) }, unchanged: { $0.body.knownLength == 0 })
        Self.expectOriginalKept(
            original, "options", change: { $0.options.timeoutInterval = 5 }, unchanged: { $0.options.timeoutInterval == nil })
        Self.expectOriginalKept(
            original, "interceptor", change: { $0.interceptor = Adapter { request, _ in request } }, unchanged: { $0.interceptor == nil })
        Self.expectOriginalKept(original, "logger", change: { $0.logger = Logger(label: "copy") }, unchanged: { $0.logger == nil })
        var logged = original
        logged.logger = Logger(label: "logged")
        Self.expectOriginalKept(
            logged, "logger (in place)", change: { $0.logger?.logLevel = .trace }, unchanged: { $0.logger?.logLevel == .info })
        Self.expectOriginalKept(
            original, "serviceContext", change: { $0.serviceContext = .topLevel }, unchanged: { $0.serviceContext == nil })
    }

    /// A change through the in-place accessors stays in the request (none is made on a temporary
    /// copy and dropped), one after another.
    @Test func aRequestKeepsEveryChangeMadeToIt() throws {
        var request = Request(url: try #require(URL(string: "http://example.com/")))
        for index in 0..<100 { request.headerFields.append(HTTPField(name: .init("x-\(index)")!, value: "\(index)")) }
        request.setValue("v", forHTTPHeaderField: "X-Set")
        #expect(request.headerFields.count == 101)
        #expect(request.value(forHTTPHeaderField: "x-set") == "v")
    }

    @Test func aChangedErrorCopyLeavesTheOriginalAlone() throws {
        let url = try #require(URL(string: "http://example.com/a"))
        let original = CourierError(.timedOut, "first")
        Self.expectOriginalKept(original, "code", change: { $0.code = .cancelled }, unchanged: { $0.code == .timedOut })
        Self.expectOriginalKept(original, "message", change: { $0.message = "second" }, unchanged: { $0.message == "first" })
        Self.expectOriginalKept(original, "request", change: { $0.request = Request(url: url) }, unchanged: { $0.request == nil })
        Self.expectOriginalKept(
            original, "response", change: { $0.response = HTTPResponse(status: .notFound) }, unchanged: { $0.response == nil })
        Self.expectOriginalKept(original, "data", change: { $0.data = Data("x".utf8) }, unchanged: { $0.data == nil })
        Self.expectOriginalKept(
            original, "underlyingError", change: { $0.underlyingError = CourierError(.invalidURL, "inner") },
            unchanged: { $0.underlyingError == nil })
        Self.expectOriginalKept(original, "file", change: { $0.file = "elsewhere" }, unchanged: { $0.file != "elsewhere" })
        Self.expectOriginalKept(original, "line", change: { $0.line = 7 }, unchanged: { $0.line != 7 })
    }

    @Test func addingFillsInACopyAndOnlyWhatWasMissing() throws {
        let url = try #require(URL(string: "http://example.com/a"))
        let original = CourierError(.timedOut, "first", response: HTTPResponse(status: .ok))
        let added = original.adding(request: Request(url: url), response: HTTPResponse(status: .notFound), data: Data("d".utf8))
        #expect(original.request == nil && original.data == nil)
        #expect(added.request?.url == url)
        #expect(added.response?.status == .ok, "a response already there stays")
        #expect(added.data == Data("d".utf8))
        let same = added.adding(request: Request(url: url), data: Data("other".utf8))
        #expect(same.data == Data("d".utf8))
    }

    @Test func aChangedTransactionCopyLeavesTheOriginalAlone() throws {
        let start = ContinuousClock.now
        var original = TransactionMetrics(request: Request(url: try #require(URL(string: "http://example.com/"))), fetchStart: start)
        original.countOfResponseBodyBytesReceived = 10
        Self.expectOriginalKept(
            original, "countOfResponseBodyBytesReceived", change: { $0.countOfResponseBodyBytesReceived += 5 },
            unchanged: { $0.countOfResponseBodyBytesReceived == 10 })
        Self.expectOriginalKept(
            original, "responseEnd", change: { $0.responseEnd = start + .seconds(1) }, unchanged: { $0.responseEnd == nil })
        Self.expectOriginalKept(
            original, "networkProtocolName", change: { $0.networkProtocolName = "h2" }, unchanged: { $0.networkProtocolName == nil })
        Self.expectOriginalKept(
            original, "isReusedConnection", change: { $0.isReusedConnection = true }, unchanged: { !$0.isReusedConnection })
        Self.expectOriginalKept(
            original, "request (in place)", change: { $0.request.headerFields[.accept] = "*/*" },
            unchanged: { $0.request.headerFields[.accept] == nil })
    }

    @Test func aChangedTaskMetricsCopyLeavesTheOriginalAlone() throws {
        let url = try #require(URL(string: "http://example.com/"))
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let attempt = TaskMetrics.Attempt(
            request: Request(url: url), start: .zero, exchangeStart: nil, responseStart: nil, end: .seconds(1), response: nil, error: nil,
            redirectCount: 0, bytesSent: 0, bytesReceived: 0)
        let original = TaskMetrics(
            taskStart: start, duration: .seconds(1), attempts: [attempt], originalRequest: Request(url: url), response: nil, error: nil)
        Self.expectOriginalKept(
            original, "taskStart", change: { $0.taskStart = start + 5 }, unchanged: { $0.taskStart == start })
        Self.expectOriginalKept(
            original, "taskStartInstant", change: { $0.taskStartInstant = $0.taskStartInstant + .seconds(1) },
            unchanged: { $0.taskStartInstant == original.taskStartInstant })
        Self.expectOriginalKept(
            original, "duration", change: { $0.duration = .seconds(2) }, unchanged: { $0.duration == .seconds(1) })
        Self.expectOriginalKept(
            original, "attempts (append)", change: { $0.attempts.append(attempt) }, unchanged: { $0.attempts.count == 1 })
        Self.expectOriginalKept(
            original, "attempts (in place)", change: { $0.attempts[0].redirectCount = 3 }, unchanged: { $0.attempts[0].redirectCount == 0 })
        Self.expectOriginalKept(
            original, "originalRequest (in place)", change: { $0.originalRequest.headerFields[.accept] = "*/*" },
            unchanged: { $0.originalRequest.headerFields[.accept] == nil })
        Self.expectOriginalKept(
            original, "response", change: { $0.response = HTTPResponse(status: .ok) }, unchanged: { $0.response == nil })
        Self.expectOriginalKept(
            original, "error", change: { $0.error = CourierError(.timedOut, "late") }, unchanged: { $0.error == nil })
    }
}
