import Instrumentation
import Foundation
import HTTPTypes
import Tracing

/// Writes a trace context into request header fields, replacing a field of the same name (so a
/// retried attempt carries its context once).
struct HTTPFieldsInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout HTTPFields) {
        guard let name = HTTPField.Name(key) else { return }
        fields[name] = value
    }
}

/// The span of one task: started when the task first starts, ended when it completes, with an
/// event per retry, and a child span per hop (each attempt's request, and each redirect's). The
/// task's span is named after its request's ``Request/operationName`` (else its method), a hop's
/// `"<operation name or method> hop"`. Each
/// hop's request carries the hop span's context (``Request/serviceContext``) and has it injected
/// into its header fields.
struct TaskSpan: Sendable {
    let span: any Span
    let tracer: any Tracer
    /// The task's ``Request/operationName``, which names its hops' spans too.
    var operationName: String? = nil

    /// Starts the span for a task's request, as a child of `parent`: named after the request's
    /// ``Request/operationName`` when it has one, else after its method.
    static func start(tracer: any Tracer, for request: Request, parent: ServiceContext) -> TaskSpan {
        let span = tracer.startSpan(request.operationName ?? Self.spanName(request.method), context: parent, ofKind: .client)
        span.updateAttributes { attributes in
            Self.setMethod(request.method, in: &attributes)
            if let operation = request.operationName { attributes["courier.operation"] = operation }
            attributes["url.full"] = Self.redacted(request.url)
            attributes["server.address"] = request.url.host
            if let port = request.url.effectivePort { attributes["server.port"] = port }
        }
        return TaskSpan(span: span, tracer: tracer, operationName: request.operationName)
    }

    /// Starts the span of a hop, a child of the task's, and returns `request` with the hop's
    /// context attached and injected into its header fields. `attempt` counts from 0; `redirect`
    /// is the hop's place among the attempt's redirects (0 for the attempt's first request).
    ///
    /// As OpenTelemetry's HTTP client convention asks of each physical request, the hop's span
    /// carries `server.address` and `server.port` (the hop's, after redirects),
    /// `http.request.resend_count` (the hops of the task before this one, for whatever reason:
    /// `resendCount`), and, once known, `network.protocol.version` (``HopSpan/responseArrives(over:)``)
    /// and `http.response.status_code`.
    func startHop(_ request: Request, attempt: Int, redirect: Int, resendCount: Int) -> (HopSpan, Request) {
        let name = self.operationName ?? Self.spanName(request.method)
        let span = self.tracer.startSpan("\(name) hop", context: self.span.context, ofKind: .client)
        span.updateAttributes { attributes in
            Self.setMethod(request.method, in: &attributes)
            attributes["url.full"] = Self.redacted(request.url)
            attributes["server.address"] = request.url.host
            if let port = request.url.effectivePort { attributes["server.port"] = port }
            if resendCount > 0 { attributes["http.request.resend_count"] = resendCount }
            attributes["courier.attempt"] = attempt + 1
            if redirect > 0 { attributes["courier.redirect"] = redirect }
        }
        var request = request
        request.serviceContext = span.context
        self.tracer.inject(span.context, into: &request.headerFields, using: HTTPFieldsInjector())
        return (HopSpan(span: span), request)
    }

    /// Notes a retry.
    func retrying(after attempt: FailedAttempt, reason: RetryReason, delay: Duration) {
        var attributes: SpanAttributes = [:]
        attributes["courier.retry.reason"] = reason.rawValue
        attributes["courier.retry.count"] = attempt.retryCount + 1
        if let status = attempt.statusCode { attributes["http.response.status_code"] = status }
        if let error = attempt.error { attributes["error.type"] = error.code.description }
        self.span.addEvent(SpanEvent(name: "courier.retry", attributes: attributes))
    }

    /// Ends the span with the task's outcome.
    func end(response: HTTPResponse?, error: CourierError?, retryCount: Int) {
        if let response {
            self.span.attributes["http.response.status_code"] = response.status.code
            // OpenTelemetry's HTTP client convention: 4xx and 5xx are errors.
            if response.status.code >= 400 { self.span.setStatus(SpanStatus(code: .error)) }
        }
        if retryCount > 0 { self.span.attributes["http.request.resend_count"] = retryCount }
        if let error {
            self.span.attributes["error.type"] = error.code.description
            self.span.recordError(error)
            self.span.setStatus(SpanStatus(code: .error, message: error.message))
        }
        self.span.end()
    }

    /// A span's name without an operation name: the method when OpenTelemetry's HTTP convention
    /// knows it, else `HTTP` (a method is any token: names of unbounded variety are no span names).
    static func spanName(_ method: HTTPRequest.Method) -> String {
        let known = MetricsMonitor.methodDimension(method)
        return known == "_OTHER" ? "HTTP" : known
    }

    /// `http.request.method`, and `http.request.method_original` for a method the convention
    /// does not know (the method is then `_OTHER`).
    static func setMethod(_ method: HTTPRequest.Method, in attributes: inout SpanAttributes) {
        let known = MetricsMonitor.methodDimension(method)
        attributes["http.request.method"] = known
        if known == "_OTHER" { attributes["http.request.method_original"] = method.rawValue }
    }

    /// The query parameters whose values OpenTelemetry's URL convention has redacted by default
    /// (signatures and access keys of presigned URLs).
    static let redactedQueryKeys: Set<String> = ["AWSAccessKeyId", "Signature", "sig", "X-Goog-Signature"]

    /// A URL for span attributes, as OpenTelemetry's `url.full` asks: user information replaced
    /// by `REDACTED:REDACTED`, and the values of ``redactedQueryKeys`` by `REDACTED` (the rest of
    /// the URL as it was written).
    static func redacted(_ url: URL) -> String {
        let query = url.query(percentEncoded: true)
        let redactsQuery = query.map { query in Self.redactedQueryKeys.contains { query.contains($0) } } ?? false
        guard url.user != nil || url.password != nil || redactsQuery,
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { return url.absoluteString }
        if components.user != nil || components.password != nil {
            components.percentEncodedUser = "REDACTED"
            components.percentEncodedPassword = "REDACTED"
        }
        if redactsQuery, let query {
            components.percentEncodedQuery = query.split(separator: "&", omittingEmptySubsequences: false).map { pair in
                let key = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
                let name = key.removingPercentEncoding ?? String(key)
                return Self.redactedQueryKeys.contains(name) ? "\(key)=REDACTED" : String(pair)
            }.joined(separator: "&")
        }
        return components.url?.absoluteString ?? url.absoluteString
    }
}

/// The span of one hop of a task: ended when its response head came and a redirect is followed,
/// or when its attempt ended.
struct HopSpan: Sendable {
    let span: any Span

    /// The response head is about to arrive over `networkProtocolName` (`http/1.1`, `h2`):
    /// OpenTelemetry's `network.protocol.version` (`1.1`, `2`).
    func responseArrives(over networkProtocolName: String) {
        let version: String =
            switch networkProtocolName {
            case "h2": "2"
            case "http/1.1": "1.1"
            case "http/1.0": "1.0"
            default: networkProtocolName
            }
        self.span.attributes["network.protocol.version"] = version
    }

    /// Ends the hop with what it got: a response head, an error, or neither (cancelled before).
    func end(response: HTTPResponse?, error: CourierError?) {
        if let response {
            self.span.attributes["http.response.status_code"] = response.status.code
            if response.status.code >= 400 { self.span.setStatus(SpanStatus(code: .error)) }
        }
        if let error {
            self.span.attributes["error.type"] = error.code.description
            self.span.setStatus(SpanStatus(code: .error, message: error.message))
        }
        self.span.end()
    }
}
