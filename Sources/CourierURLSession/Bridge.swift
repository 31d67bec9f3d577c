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
        /// Exchanges on a `URLSessionTask`, by task.
        var exchanges: [ObjectIdentifier: URLSessionExchange] = [:]
        /// Exchanges reading a streamed body before their task is made, by exchange.
        var spooling: [ObjectIdentifier: URLSessionExchange] = [:]
        var isClosed = false
        /// Who waits in ``waitUntilEmpty()``.
        var waiters: [CheckedContinuation<Void, Never>] = []

        var isEmpty: Bool { self.exchanges.isEmpty && self.spooling.isEmpty }

        /// The waiters to resume, when nothing is left.
        mutating func takeWaitersIfEmpty() -> [CheckedContinuation<Void, Never>] {
            guard self.isEmpty else { return [] }
            defer { self.waiters = [] }
            return self.waiters
        }
    }

    private let registry = NIOLockedValueBox(Registry())

    /// Keeps `exchange` while it reads its streamed body, before it has a task; false once the
    /// engine was shut down.
    func beginSpooling(_ exchange: URLSessionExchange) -> Bool {
        self.registry.withLockedValue { registry in
            guard !registry.isClosed else { return false }
            registry.spooling[ObjectIdentifier(exchange)] = exchange
            return true
        }
    }

    /// Forgets a spooling exchange that ended without a task.
    func endSpooling(_ exchange: URLSessionExchange) {
        let waiters = self.registry.withLockedValue { registry -> [CheckedContinuation<Void, Never>] in
            guard registry.spooling.removeValue(forKey: ObjectIdentifier(exchange)) != nil else { return [] }
            return registry.takeWaitersIfEmpty()
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Makes the task (`makeTask`, under the registry's lock) and keeps `exchange` as its; nil
    /// once the engine was shut down, when no task is made (and a spooling exchange is
    /// forgotten).
    func register(_ exchange: URLSessionExchange, makeTask: () -> URLSessionTask) -> URLSessionTask? {
        let (task, waiters) = self.registry.withLockedValue { registry -> (URLSessionTask?, [CheckedContinuation<Void, Never>]) in
            let wasSpooling = registry.spooling.removeValue(forKey: ObjectIdentifier(exchange)) != nil
            guard !registry.isClosed else { return (nil, wasSpooling ? registry.takeWaitersIfEmpty() : []) }
            let task = makeTask()
            registry.exchanges[ObjectIdentifier(task)] = exchange
            return (task, [])
        }
        for waiter in waiters { waiter.resume() }
        return task
    }

    /// Moves `exchange` from its ended task to a new one (`makeTask`, under the registry's lock),
    /// for a redirect Courier follows itself; nil once the engine was shut down.
    func replace(_ ended: URLSessionTask, of exchange: URLSessionExchange, makeTask: () -> URLSessionTask) -> URLSessionTask? {
        self.registry.withLockedValue { registry in
            guard !registry.isClosed, registry.exchanges.removeValue(forKey: ObjectIdentifier(ended)) != nil else { return nil }
            let task = makeTask()
            registry.exchanges[ObjectIdentifier(task)] = exchange
            return task
        }
    }

    /// Takes no more exchanges; returns the running ones, spooling or on a task.
    func close() -> [URLSessionExchange] {
        self.registry.withLockedValue { registry in
            registry.isClosed = true
            return Array(registry.exchanges.values) + Array(registry.spooling.values)
        }
    }

    /// Returns once every registered exchange has completed.
    func waitUntilEmpty() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let empty = self.registry.withLockedValue { registry -> Bool in
                if registry.isEmpty { return true }
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
        // Courier's rule decides the next request (method, body, fields), not URLSession's
        // proposal: the same planner as NIOEngine's, then the session's say. Every way out answers
        // through ``answerRedirect(_:to:of:exchange:completionHandler:)``, once, or not at all
        // once URLSession stopped waiting for the answer.
        guard let exchange = self.exchange(of: task) else {
            completionHandler(nil)
            return
        }
        exchange.requestReachedServer()
        guard let redirect = URLSessionEngine.response(from: response) else {
            // The cancel ends URLSession's task: no answer.
            exchange.cancel(with: exchange.badStatus(response.statusCode))
            return
        }
        guard case .follow(let proposal) = exchange.planRedirect(redirect),
            let chosen = exchange.delegate.exchange(willPerformRedirection: redirect, newRequest: proposal)
        else {
            // FoundationNetworking hands this head over next as the response: the answer, not a
            // redirect to ask the session about again.
            exchange.declineRedirect()
            self.answerRedirect(nil, to: response, of: task, exchange: exchange, completionHandler: completionHandler)
            return
        }
        // FoundationNetworking sends a redirected request without its body (a 307's POST goes out
        // empty, whatever the new request holds): one with a body is Courier's to send, on a new
        // task once this one ends with the redirect's response.
        if !chosen.body.isEmpty {
            exchange.followItself(chosen)
            self.answerRedirect(nil, to: response, of: task, exchange: exchange, completionHandler: completionHandler)
            return
        }
        exchange.followed(chosen)
        self.answerRedirect(URLSessionEngine.urlRequest(for: chosen), to: response, of: task, exchange: exchange, completionHandler: completionHandler)
    }

    /// Answers URLSession's question about the redirect `response` of `task` with `request` (nil:
    /// not followed), if it still waits for the answer. The session's decision may take long (its
    /// redirect hook is the caller's code), and meanwhile:
    /// - the exchange may have been cancelled: URLSession's task was cancelled with it, and ends
    ///   without the answer (FoundationNetworking stops the process on an answer that comes after
    ///   the cancel reached the task: "Received callback for HTTP redirection, but we're not
    ///   waiting for it"), so none is given (``URLSessionExchange/answerRedirect(_:with:)``);
    /// - FoundationNetworking's request timeout may have fired: it stops waiting then, sets the
    ///   redirect as the task's response and neither completes the task nor takes an answer (the
    ///   same stop). The exchange is cancelled, timed out, which completes the task.
    private func answerRedirect(
        _ request: URLRequest?, to response: HTTPURLResponse, of task: URLSessionTask, exchange: URLSessionExchange,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        #if canImport(FoundationNetworking)
        // The timeout's mark: the task's response is the redirect's own head (which a task waiting
        // for the answer never has).
        if task.response === response {
            exchange.cancel(
                with: CourierError(
                    .timedOut, "\(exchange.request.summary): the redirect was not decided within the request's timeout", request: exchange.request))
            return
        }
        #endif
        exchange.answerRedirect(request, with: completionHandler)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let exchange = self.exchange(of: dataTask), let http = response as? HTTPURLResponse else {
            completionHandler(.cancel)
            return
        }
        exchange.requestReachedServer()
        // An interim head (`100 Continue`, `102 Processing`, `103 Early Hints`): FoundationNetworking
        // hands every header block libcurl reads over as a response, but the final one is still to
        // come, with the body. It is not the exchange's response.
        if URLSessionEngine.isInterim(http.statusCode) {
            completionHandler(.allow)
            return
        }
        // A redirect Courier follows itself: this task's response is not the exchange's. A head
        // delivered already (a challenge's, which ends the exchange) is not delivered twice.
        if exchange.isFollowingItself || exchange.hasDeliveredHead {
            completionHandler(.cancel)
            return
        }
        guard let head = URLSessionEngine.response(from: http) else {
            exchange.cancel(with: exchange.badStatus(http.statusCode))
            completionHandler(.cancel)
            return
        }
        // A 308 handed over as a response without a redirect proposed first (a custom
        // `URLProtocol`'s): the engine follows it, by the same rule. FoundationNetworking proposes
        // a 308 as any redirect (`willPerformHTTPRedirection`), and hands its head over only once
        // it was not followed: the session was asked already, and the head is the answer.
        if http.statusCode == 308, !exchange.hasDeclinedRedirect, case .follow(let next) = exchange.planRedirect(head),
            let chosen = exchange.delegate.exchange(willPerformRedirection: head, newRequest: next)
        {
            exchange.followItself(chosen)
            completionHandler(.cancel)
            return
        }
        // A redirect that broke the policy (this 308, or the one URLSession proposed before this
        // response): past the maximum, or back to where it was. The exchange fails.
        if exchange.brokeRedirectPolicy {
            completionHandler(.cancel)
            return
        }
        let url = http.url ?? exchange.current.url
        exchange.markHeadDelivered()
        switch exchange.delegate.exchange(didReceive: head, url: url) {
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
    /// response nor an error. It may hand the same head to the response callback as well, first or
    /// after: the exchange hears it once.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let exchange = self.exchange(of: task), let response = challenge.failureResponse as? HTTPURLResponse else {
            completionHandler(.performDefaultHandling, nil)
            return
        }
        guard let head = URLSessionEngine.response(from: response) else {
            exchange.cancel(with: exchange.badStatus(response.statusCode))
            completionHandler(.cancelAuthenticationChallenge, nil)
            return
        }
        let url = response.url ?? exchange.request.url
        // FoundationNetworking may have handed this 401's head to the exchange already (its
        // response callback comes first for some challenges): delivered once.
        if !exchange.hasDeliveredHead {
            exchange.markHeadDelivered()
            _ = exchange.delegate.exchange(didReceive: head, url: url)
        }
        exchange.finish(nil)
        completionHandler(.cancelAuthenticationChallenge, nil)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        self.exchange(of: dataTask)?.received(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        guard let exchange = self.exchange(of: task) else { return }
        if bytesSent > 0 { exchange.requestReachedServer() }
        let expected = totalBytesExpectedToSend >= 0 ? totalBytesExpectedToSend : nil
        exchange.delegate.exchange(didSendBodyData: bytesSent, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: expected)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        // A redirect Courier follows itself: the exchange goes on, on a new task, once this one
        // ended with the redirect's response (or was cancelled for it).
        var shutDown = false
        if error == nil || (error as? URLError)?.code == .cancelled, let exchange = self.exchange(of: task),
            let (next, body) = exchange.takeRedirect()
        {
            let urlRequest = URLSessionEngine.urlRequest(for: next)
            if let followed = self.replace(task, of: exchange, makeTask: { URLSessionEngine.task(for: urlRequest, sending: body, on: session) }) {
                exchange.attach(followed)
                return
            }
            shutDown = true
        }
        let (exchange, waiters) = self.registry.withLockedValue { registry -> (URLSessionExchange?, [CheckedContinuation<Void, Never>]) in
            let exchange = registry.exchanges.removeValue(forKey: ObjectIdentifier(task))
            return (exchange, registry.takeWaitersIfEmpty())
        }
        if let exchange {
            let request = exchange.request
            // URLSession is done with the body it sent from a file: removed before the exchange
            // ends, so that whoever hears the end finds it gone.
            exchange.discardSpooledBody()
            // FoundationNetworking keeps the head of a redirect status (301–308) for the redirect
            // it plans, and one without a `Location` ends the task with neither its head nor an
            // error: that response is the answer (RFC 9110 15.4), and goes to the exchange here.
            if error == nil, !shutDown, !exchange.hasDeliveredHead, !exchange.isFollowingItself, !exchange.brokeRedirectPolicy,
                let http = task.response as? HTTPURLResponse, !URLSessionEngine.isInterim(http.statusCode),
                http.value(forHTTPHeaderField: "Location") == nil, let head = URLSessionEngine.response(from: http)
            {
                exchange.markHeadDelivered()
                _ = exchange.delegate.exchange(didReceive: head, url: http.url ?? exchange.current.url)
            }
            let reachedServer = exchange.hasReachedServer
            exchange.finish(
                shutDown
                    ? CourierError(.sessionInvalidated, "\(request.summary): the engine was shut down before the redirect was followed", request: request)
                    : error.map { Self.courierError($0, request: request, reachedServer: reachedServer) })
        }
        for waiter in waiters { waiter.resume() }
    }

    /// URLSession's error as Courier's codes say it. `reachedServer`: the hop's request went out
    /// (a head arrived for it, or bytes of its body were sent), so that the failure cannot be one
    /// before any request went out.
    static func courierError(_ error: any Error, request: Request, reachedServer: Bool) -> CourierError {
        let code: CourierError.Code
        let words = error.localizedDescription
        switch (error as? URLError)?.code {
        case .timedOut?: code = .timedOut
        case .cancelled?: code = .cancelled
        case .cannotFindHost?, .cannotConnectToHost?, .dnsLookupFailed?, .notConnectedToInternet?:
            // FoundationNetworking says "cannot connect" for any failure once one of the host's
            // addresses refused the connection (libcurl's connect errno is kept after another
            // address connected): a hop whose request went out failed otherwise.
            code = reachedServer ? Self.code(forUnmapped: words, reachedServer: true) : .connectionFailed
        case .networkConnectionLost?:
            // Lost during the load: the request may have gone out (`connectionFailed` says it did
            // not, and a retry policy may send it again on that word).
            code = .connectionClosed
        case .secureConnectionFailed?, .serverCertificateUntrusted?, .serverCertificateHasBadDate?, .serverCertificateHasUnknownRoot?,
            .serverCertificateNotYetValid?:
            code = .serverTrustEvaluationFailed
        case .httpTooManyRedirects?: code = .tooManyRedirects
        case .unsupportedURL?, .badURL?:
            // libcurl's CURLE_UNSUPPORTED_PROTOCOL says a status that is not three digits, or an
            // HTTP version it does not speak, in the response too ("Unsupported response code in
            // HTTP response").
            code = reachedServer || words.contains("response") ? .invalidResponse : .invalidURL
        case .badServerResponse?:
            // libcurl's CURLE_GOT_NOTHING: the server closed the connection without a byte of answer.
            code = words.hasPrefix("Empty reply from server") ? .connectionClosed : .invalidResponse
        case .fileDoesNotExist?, .noPermissionsToReadFile?:
            // The file of an upload could not be read.
            code = .bodyReadFailed
        default:
            code = Self.code(forUnmapped: words, reachedServer: reachedServer)
        }
        return CourierError(code, "\(request.summary): \(words)", request: request, underlyingError: error)
    }

    /// The code of a failure FoundationNetworking reports with an unknown code (-1) and libcurl's
    /// `words`: TLS failures, a body cut short (CURLE_PARTIAL_FILE), a connection lost while
    /// sending or receiving (CURLE_SEND_ERROR, CURLE_RECV_ERROR), one that could not be made other
    /// than refused (CURLE_COULDNT_CONNECT: no route), but also an answer it could not read: a
    /// header line that is not UTF-8 (its header callback refuses it: CURLE_WRITE_ERROR, "Failed
    /// writing header"), a body whose coding does not decode (CURLE_BAD_CONTENT_ENCODING), a
    /// malformed head (CURLE_WEIRD_SERVER_REPLY).
    ///
    /// `connectionFailed` says no request went out, and a retry policy sends it again on that
    /// word: it is said only when the words say the connection was never made, and never once the
    /// hop's request went out (`reachedServer`). Words that say nothing known are an answer the
    /// engine could not read, `invalidResponse`.
    static func code(forUnmapped words: String, reachedServer: Bool) -> CourierError.Code {
        if words.hasPrefix("transfer closed with") || words.hasPrefix("Recv failure") || words.hasPrefix("Send failure")
            || words.hasPrefix("Failure when receiving data from the peer") || words.hasPrefix("Failed sending data to the peer")
            || words.hasPrefix("Transferred a partial file")
        {
            return .connectionClosed
        }
        if words.hasPrefix("SSL certificate problem") || words.contains("SSL: no alternative certificate subject name") {
            return .serverTrustEvaluationFailed
        }
        if words.contains("SSL") || words.contains("TLS") { return .tlsFailure }
        // libcurl could not connect (CURLE_COULDNT_CONNECT: "Failed to connect to … port …: …",
        // or its bare "Couldn't connect to server"), or could not resolve the host or the proxy
        // (CURLE_COULDNT_RESOLVE_HOST and _PROXY: "Could not resolve …", "Couldn't resolve …").
        let neverConnected =
            words.hasPrefix("Failed to connect to") || words.hasPrefix("Couldn't connect to server") || words.hasPrefix("Could not resolve")
            || words.hasPrefix("Couldn't resolve")
        return neverConnected && !reachedServer ? .connectionFailed : .invalidResponse
    }
}
