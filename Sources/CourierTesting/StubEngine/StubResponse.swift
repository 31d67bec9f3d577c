import Courier
import Foundation
import HTTPTypes

/// What a ``StubEngine`` answers for a matching request: a response, or an error, after an
/// optional delay.
public struct StubResponse: Sendable {
    /// The status.
    public var status: HTTPResponse.Status
    /// The header fields.
    public var headerFields: HTTPFields
    /// The body, delivered in chunks of ``chunkSize`` bytes.
    public var body: Data
    /// How long to wait before answering (or failing).
    public var delay: Duration
    /// When set, the exchange fails with this error after ``delay`` instead of answering.
    public var error: CourierError?
    /// The size of the body chunks handed to the delegate (at least 1).
    public var chunkSize: Int

    /// Makes a response.
    /// - Parameters:
    ///   - status: The status (200 by default).
    ///   - headerFields: Header fields.
    ///   - body: The body bytes.
    ///   - delay: A wait before the response head (none by default).
    ///   - chunkSize: The size of the body chunks (16 KiB by default).
    public init(
        status: HTTPResponse.Status = .ok,
        headerFields: HTTPFields = [:],
        body: Data = Data(),
        delay: Duration = .zero,
        chunkSize: Int = 16 * 1024
    ) {
        self.status = status
        self.headerFields = headerFields
        self.body = body
        self.delay = delay
        self.error = nil
        self.chunkSize = chunkSize
    }

    /// A failure: the exchange completes with `error` after `delay`.
    public static func failure(_ error: CourierError, delay: Duration = .zero) -> StubResponse {
        var response = StubResponse(delay: delay)
        response.error = error
        return response
    }

    /// A JSON response with `Content-Type: application/json`.
    public static func json(_ json: String, status: HTTPResponse.Status = .ok, delay: Duration = .zero) -> StubResponse {
        StubResponse(status: status, headerFields: [.contentType: "application/json"], body: Data(json.utf8), delay: delay)
    }

    /// A redirect to `location` (302 by default), which the engine follows after asking its delegate.
    public static func redirect(to location: String, status: HTTPResponse.Status = .found) -> StubResponse {
        StubResponse(status: status, headerFields: [.location: location])
    }
}

/// Which requests a stub answers.
public struct StubMatcher: Sendable {
    let matches: @Sendable (Request) -> Bool

    /// Requests for which `predicate` returns true.
    public static func custom(_ predicate: @escaping @Sendable (Request) -> Bool) -> StubMatcher {
        StubMatcher(matches: predicate)
    }

    /// Requests for exactly `url` (query included, fragment ignored), with `method` when given.
    public static func url(_ url: URL, method: HTTPRequest.Method? = nil) -> StubMatcher {
        let target = url.absoluteString.split(separator: "#", maxSplits: 1).first.map(String.init) ?? ""
        return StubMatcher { request in
            (method == nil || request.method == method)
                && request.url.absoluteString.split(separator: "#", maxSplits: 1).first.map(String.init) == target
        }
    }

    /// Requests whose URL path is `path` (any host, any query), with `method` when given.
    public static func path(_ path: String, method: HTTPRequest.Method? = nil) -> StubMatcher {
        StubMatcher { request in (method == nil || request.method == method) && request.url.path == path }
    }

    /// Every request, or every request with `method`.
    public static func any(method: HTTPRequest.Method? = nil) -> StubMatcher {
        StubMatcher { request in method == nil || request.method == method }
    }
}
