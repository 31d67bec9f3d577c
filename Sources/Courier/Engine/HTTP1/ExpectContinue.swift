import HTTPTypes
import NIOCore

/// When a request body waits for the server's `100 Continue` (RFC 9110 section 10.1.1), and for
/// how long at most: ``NIOEngine/Configuration/expectContinueThreshold`` and
/// ``NIOEngine/Configuration/expectContinueTimeout``. Pure: ``HopHandler`` asks it for
/// each request.
struct ExpectContinue: Sendable, Equatable {
    /// What to do with one request.
    enum Decision: Equatable {
        /// Send the body right after the head.
        case sendAtOnce
        /// Add `Expect: 100-continue` to the head, and hold the body back until `100 Continue`, a
        /// final answer (then the body is not sent), or the timeout.
        case announce
        /// The request carries the expectation already: hold the body back the same way.
        case wait
    }

    /// What a request's own fields expect (``requested(in:)``).
    enum Requested: Equatable {
        /// No `Expect` field.
        case none
        /// `Expect: 100-continue` (any case, in a list or not).
        case `continue`
        /// An `Expect` of another kind: the caller's to make, and Courier adds none of its own (it
        /// would make a list such as `Expect: x, 100-continue` the caller never wrote).
        case other
    }

    /// Bodies of at least this many bytes are announced; nil: none is.
    var threshold: Int64?
    /// How long a body waits at most.
    var timeout: TimeAmount

    init(threshold: Int64?, timeout: TimeAmount) {
        self.threshold = threshold
        self.timeout = timeout
    }

    init(_ configuration: NIOEngine.Configuration) {
        self.init(
            threshold: configuration.expectContinueThreshold.map { max($0, 0) },
            timeout: .seconds(clamping: configuration.expectContinueTimeout, nan: 1))
    }

    /// The decision for a request with `head` and a body of `length` (`hasBody` false for none),
    /// sent to a server that answered with HTTP/1.0 before (`serverIsHTTP10`: it knows no
    /// expectation, and waiting for it would only delay the body), on an HTTP/2 stream when
    /// `overHTTP2`. `requested`: what the request's own fields expect (``requested(in:)``).
    ///
    /// Over HTTP/2 Courier announces no expectation of its own (curl, Go and OkHttp announce none
    /// there): many servers never answer `100 Continue` on a stream (hypercorn's held every such
    /// upload for the whole wait), a refusal comes at once anyway, and flow control bounds what was
    /// sent. A request that carries the expectation itself waits over either protocol.
    func decision(
        requested: Requested, hasBody: Bool, length: RequestBody.Length, serverIsHTTP10: Bool, overHTTP2: Bool = false
    ) -> Decision {
        // No expectation without content (RFC 9110 section 10.1.1).
        guard hasBody, length != .known(0) else { return .sendAtOnce }
        switch requested {
        case .continue: return serverIsHTTP10 ? .sendAtOnce : .wait
        case .other: return .sendAtOnce
        case .none: break
        }
        guard !serverIsHTTP10, !overHTTP2, let threshold, case .known(let bytes) = length, bytes >= threshold else { return .sendAtOnce }
        return .announce
    }
}

extension ExpectContinue {
    /// What a request's own fields expect, read once from the request, whichever protocol's head
    /// it goes out in: one look for the field in the common case (none).
    static func requested(in fields: HTTPFields) -> Requested {
        guard fields.contains(.expect) else { return .none }
        let asksForContinue = fields[values: .expect].contains { value in
            value.split(separator: ",").contains { $0.trimmingSpaces().equalsLowercased("100-continue") }
        }
        return asksForContinue ? .continue : .other
    }
}
