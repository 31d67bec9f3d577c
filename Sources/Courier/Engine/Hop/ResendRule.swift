import HTTPTypes

/// When a hop whose connection closed under it is sent again: Courier's rule for stale
/// connections, pure so that it is tested without I/O.
///
/// A server may close a keep-alive connection at any moment it is idle (gunicorn after 2 s, nginx
/// after 75 s, load balancers at their own pace), and a request written just as it does finds the
/// connection gone. Such a request was never processed, and is sent again, on a new connection
/// (never on another kept-alive one, idle or just given back after a response: the same server may
/// be closing it too, and a new connection that closes is the server's answer, which ends the
/// resends):
/// - when no byte of the response had arrived, the request was not cancelled, and it has not
///   been sent again ``maximumResends`` times already; and
/// - either nothing of it was written before the connection was found closed, or it was written
///   on a reused connection (over HTTP/2, one that had opened a stream before the hop's) and its
///   method is idempotent (RFC 9110 9.2.2: GET, HEAD, OPTIONS, TRACE, PUT, DELETE) or an
///   `Idempotency-Key` says it may be repeated. A reset does not count as proof that nothing was
///   read: a server that read part of a long body, acted and closed resets too (RFC 9112 9.6), so
///   a `POST` is not sent again after a reset any more than after a clean close (Go's rule; it was
///   before, and could be applied twice);
/// - and its body can be produced again (not a one-shot stream: its first chunks may already be
///   gone). A hop handed a connection that turns out closed before it starts is not sent at all:
///   it simply goes to another connection, one-shot stream included (see ``EngineHop``).
///
/// A fresh connection that closes after the request went out is the server's answer, not a
/// stale connection: the request fails with it.
///
/// HTTP/2 says outright what it did not process (RST_STREAM with REFUSED_STREAM, or a stream above
/// the last one a GOAWAY names, RFC 9113 8.7; a stream that could not open because the GOAWAY had
/// come is counted with them): such a hop goes again whatever its method, under the
/// same cancellation and replayable-body conditions (``Closure/notProcessed``), and under a bound
/// of its own, ``maximumUnprocessedResends``: nothing of it was processed, so sending it again
/// risks nothing but another drop. A server that ends each connection after a few requests (nginx's
/// `keepalive_requests`) while more streams are open drops the rest each time, and a hop can be
/// among them several times in a row (Docs/BENCHMARKS.md, "A server that ends connections early").
///
/// A stream a GOAWAY that named an error left unprocessed (ENHANCE_YOUR_CALM, INTERNAL_ERROR; the
/// server says more than "not this one") was not processed either (RFC 9113 6.8: whatever the
/// code, streams above the last one named were not), but the server may be in trouble or think
/// the client abusive: such a hop goes again once, on a new connection
/// (``Closure/notProcessedWithError``, counted with the others against
/// ``maximumUnprocessedResends`` too), as Go's and OkHttp's clients send it again at once the
/// first time; a second such GOAWAY is the answer.
/// Before, it failed at once, and a request with no fault of its own, sharing the connection with
/// the one that made the server send the GOAWAY, failed with it.
///
/// HTTP_1_1_REQUIRED (RFC 9113 7: a reset of the stream, or a GOAWAY that left it unprocessed) is
/// a refusal too, of HTTP/2 (IIS and Apache ask so for requests that need TLS renegotiation or a
/// client certificate): the hop goes again over HTTP/1.1 whatever its method, under the same
/// cancellation and replayable-body conditions (``Closure/http1Required``). Once at most: over
/// HTTP/1.1 no such answer can come.
struct ResendRule: Equatable {
    /// How the connection ended under the hop.
    enum Closure: Equatable {
        /// The server closed it (end of file), or it was found closed.
        case closed
        /// The server reset it (`ECONNRESET`, `EPIPE`).
        case reset
        /// Another error (a malformed response, a TLS failure).
        case failed
        /// The server said it did not process the request (HTTP/2).
        case notProcessed
        /// The server did not process the request, and its GOAWAY named an error (not
        /// HTTP_1_1_REQUIRED): sent again once, on a new connection.
        case notProcessedWithError
        /// The server wants the request over HTTP/1.1 (HTTP/2's HTTP_1_1_REQUIRED): it did not
        /// process it.
        case http1Required
    }

    /// Why a hop goes again, which decides how (``EngineHop/prepareResend(_:)``).
    enum Reason: Equatable {
        /// Its connection closed under it (``maximumResends``): on a new connection.
        case closed
        /// The HTTP/2 server did not process it (``maximumUnprocessedResends``): on a new connection.
        case notProcessed
        /// The HTTP/2 server did not process it, and its GOAWAY named an error: on a new
        /// connection, once (``resentAfterGoAwayError``).
        case notProcessedWithError
        /// The HTTP/2 server answered HTTP_1_1_REQUIRED: over HTTP/1.1, as the origin's later
        /// requests go.
        case http1Required
        /// Its HTTP/2 header block does not fit in one frame of the server's size (Courier sends
        /// no CONTINUATION): this request alone goes over HTTP/1.1. Nothing of it was sent.
        case headTooLargeForHTTP2
    }

    /// Why the hop goes again, when it does.
    var reason: Reason {
        switch self.closure {
        case .notProcessed: .notProcessed
        case .notProcessedWithError: .notProcessedWithError
        case .http1Required: .http1Required
        case .closed, .reset, .failed: .closed
        }
    }

    /// How many times a hop may be sent again after its connection closed under it.
    static let maximumResends = 3
    /// How many times a hop the server did not process (``Closure/notProcessed``) may be sent
    /// again, counted apart from ``maximumResends``: bounded still, for a server that never
    /// processes anything.
    static let maximumUnprocessedResends = 10

    /// Whether the hop's method is idempotent (``isIdempotent(_:)``).
    var methodIsIdempotent: Bool
    /// Whether the body can be produced again (empty, in memory, a file, a replayable stream).
    var bodyIsReplayable: Bool
    /// Whether the connection had carried a hop before this one.
    var connectionWasReused: Bool
    /// Whether any byte of the request reached the socket.
    var requestWritten: Bool
    /// Whether any byte of the response arrived.
    var responseBytesSeen: Bool
    var closure: Closure
    /// How many times the hop was already sent again after a close (``maximumResends``).
    var resends: Int
    var isCancelled: Bool
    /// How many times the hop was already sent again because the server did not process it
    /// (``maximumUnprocessedResends``).
    var unprocessedResends = 0
    /// Whether the hop was already sent again because a GOAWAY that named an error left it
    /// unprocessed (``Closure/notProcessedWithError``: once at most).
    var resentAfterGoAwayError = false

    /// Whether the hop goes again.
    var allowsResend: Bool {
        guard !self.isCancelled, !self.responseBytesSeen, self.closure != .failed, self.bodyIsReplayable else { return false }
        if self.closure == .notProcessed { return self.unprocessedResends < Self.maximumUnprocessedResends }
        if self.closure == .notProcessedWithError {
            return !self.resentAfterGoAwayError && self.unprocessedResends < Self.maximumUnprocessedResends
        }
        if self.closure == .http1Required { return true }
        guard self.resends < Self.maximumResends else { return false }
        if !self.requestWritten { return true }
        guard self.connectionWasReused else { return false }
        return self.methodIsIdempotent
    }

    /// Whether a request with a method that is not idempotent says it may be repeated: an
    /// `Idempotency-Key` field (the HTTPAPI working group's draft; Stripe's and PayPal's APIs) or
    /// `X-Idempotency-Key`, as Go's `net/http` reads them. Looked up only for such methods.
    static func hasIdempotencyKey(_ method: HTTPRequest.Method, fields: HTTPFields) -> Bool {
        guard !Self.isIdempotent(method) else { return false }
        return fields[Self.idempotencyKey] != nil || fields[Self.legacyIdempotencyKey] != nil
    }

    private static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    private static let legacyIdempotencyKey = HTTPField.Name("X-Idempotency-Key")!

    static func isIdempotent(_ method: HTTPRequest.Method) -> Bool {
        switch method {
        case .get, .head, .options, .trace, .put, .delete: true
        default: false
        }
    }
}

extension ResendRule {
    /// The rule for a hop with `method`.
    init(
        method: HTTPRequest.Method, bodyIsReplayable: Bool, connectionWasReused: Bool, requestWritten: Bool, responseBytesSeen: Bool,
        closure: Closure, resends: Int, isCancelled: Bool, unprocessedResends: Int = 0, resentAfterGoAwayError: Bool = false
    ) {
        self.init(
            methodIsIdempotent: Self.isIdempotent(method), bodyIsReplayable: bodyIsReplayable, connectionWasReused: connectionWasReused,
            requestWritten: requestWritten, responseBytesSeen: responseBytesSeen, closure: closure, resends: resends,
            isCancelled: isCancelled, unprocessedResends: unprocessedResends, resentAfterGoAwayError: resentAfterGoAwayError)
    }
}
