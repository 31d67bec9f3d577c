import Courier
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `URLSession`'s delegate: finds each task's exchange and hands it the task's events. They
/// come on the session's one delegate queue, so one exchange's never overlap.
///
/// `@unchecked Sendable`: its only state is behind `registry`'s lock; `NSObject` is not `Sendable`.
final class Bridge: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private struct Registry {
        var exchanges: [ObjectIdentifier: URLSessionExchange] = [:]
        var isClosed = false
        /// Who waits in ``waitUntilEmpty()``.
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let registry = NIOLockedValueBox(Registry())

    /// Makes the task (`makeTask`, under the registry's lock) and keeps `exchange` as its; nil
    /// once the engine was shut down, when no task is made.
    func register(_ exchange: URLSessionExchange, makeTask: () -> URLSessionTask) -> URLSessionTask? {
        self.registry.withLockedValue { registry in
            guard !registry.isClosed else { return nil }
            let task = makeTask()
            registry.exchanges[ObjectIdentifier(task)] = exchange
            return task
        }
    }

    /// Takes no more exchanges; returns the running ones.
    func close() -> [URLSessionExchange] {
        self.registry.withLockedValue { registry in
            registry.isClosed = true
            return Array(registry.exchanges.values)
        }
    }

    /// Returns once every registered exchange has completed.
    func waitUntilEmpty() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let empty = self.registry.withLockedValue { registry -> Bool in
                if registry.exchanges.isEmpty { return true }
                registry.waiters.append(continuation)
                return false
            }
            if empty { continuation.resume() }
        }
    }

    private func exchange(of task: URLSessionTask) -> URLSessionExchange? {
        self.registry.withLockedValue { $0.exchanges[ObjectIdentifier(task)] }
    }

    // MARK: URLSessionDataDelegate

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        guard let exchange = self.exchange(of: task), let url = request.url, exchange.mayFollowRedirect() else {
            completionHandler(nil)
            return
        }
        // The request URLSession proposes, as a Courier request: its method (a 303 makes a GET)
        // and fields, the original's body when the method kept it.
        var proposal = Request(method: HTTPRequest.Method(request.httpMethod ?? "GET") ?? .get, url: url, options: exchange.request.options)
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            if let name = HTTPField.Name(name) { proposal.headerFields.append(HTTPField(name: name, value: value)) }
        }
        if proposal.method == exchange.request.method { proposal.body = exchange.request.body }
        let redirect = URLSessionEngine.response(from: response)
        guard let chosen = exchange.delegate.exchange(willPerformRedirection: redirect, newRequest: proposal) else {
            completionHandler(nil)
            return
        }
        completionHandler(URLSessionEngine.urlRequest(for: chosen))
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let exchange = self.exchange(of: dataTask), let http = response as? HTTPURLResponse else {
            completionHandler(.cancel)
            return
        }
        let url = http.url ?? exchange.request.url
        exchange.markHeadDelivered()
        switch exchange.delegate.exchange(didReceive: URLSessionEngine.response(from: http), url: url) {
        case .allow: completionHandler(.allow)
        case .cancel:
            exchange.cancel(with: CourierError(.cancelled, "\(exchange.request.summary): cancelled at the response head", request: exchange.request))
            completionHandler(.cancel)
        }
    }

    /// An HTTP challenge (`401` with `WWW-Authenticate`, `407`) is the session's to answer, as
    /// any response: its head goes to the exchange as the final response, which ends there (the
    /// session's authentication sends the request again with its credential), and URLSession's
    /// task is cancelled. FoundationNetworking's own default would end the task with neither the
    /// response nor an error.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let exchange = self.exchange(of: task), let response = challenge.failureResponse as? HTTPURLResponse else {
            completionHandler(.performDefaultHandling, nil)
            return
        }
        let url = response.url ?? exchange.request.url
        exchange.markHeadDelivered()
        _ = exchange.delegate.exchange(didReceive: URLSessionEngine.response(from: response), url: url)
        exchange.finish(nil)
        completionHandler(.cancelAuthenticationChallenge, nil)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        self.exchange(of: dataTask)?.received(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        let expected = totalBytesExpectedToSend >= 0 ? totalBytesExpectedToSend : nil
        self.exchange(of: task)?.delegate.exchange(didSendBodyData: bytesSent, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: expected)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (exchange, waiters) = self.registry.withLockedValue { registry -> (URLSessionExchange?, [CheckedContinuation<Void, Never>]) in
            let exchange = registry.exchanges.removeValue(forKey: ObjectIdentifier(task))
            guard registry.exchanges.isEmpty else { return (exchange, []) }
            defer { registry.waiters = [] }
            return (exchange, registry.waiters)
        }
        if let exchange { exchange.finish(error.map { Self.courierError($0, request: exchange.request) }) }
        for waiter in waiters { waiter.resume() }
    }

    /// URLSession's error as Courier's codes say it.
    static func courierError(_ error: any Error, request: Request) -> CourierError {
        let code: CourierError.Code
        switch (error as? URLError)?.code {
        case .timedOut?: code = .timedOut
        case .cancelled?: code = .cancelled
        case .cannotFindHost?, .cannotConnectToHost?, .dnsLookupFailed?, .notConnectedToInternet?, .networkConnectionLost?:
            code = .connectionFailed
        case .secureConnectionFailed?, .serverCertificateUntrusted?, .serverCertificateHasBadDate?, .serverCertificateHasUnknownRoot?,
            .serverCertificateNotYetValid?:
            code = .serverTrustEvaluationFailed
        case .httpTooManyRedirects?: code = .tooManyRedirects
        case .unsupportedURL?, .badURL?: code = .invalidURL
        case .badServerResponse?: code = .invalidResponse
        default:
            // FoundationNetworking reports libcurl's TLS failures with an unknown code (-1) and
            // libcurl's words.
            let words = error.localizedDescription
            if words.hasPrefix("SSL certificate problem") || words.contains("SSL: no alternative certificate subject name") {
                code = .serverTrustEvaluationFailed
            } else if words.contains("SSL") || words.contains("TLS") {
                code = .tlsFailure
            } else {
                code = .connectionFailed
            }
        }
        return CourierError(code, "\(request.summary): \(error.localizedDescription)", request: request, underlyingError: error)
    }
}
