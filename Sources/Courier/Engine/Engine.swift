import Foundation
import HTTPTypes
import NIOCore

/// The seam between Courier and a transport: one exchange at a time.
///
/// An engine sends a request's head and body, reports how many body bytes have gone out, delivers
/// the response head, then body chunks (pausing when asked), then completion or an error. It
/// follows redirects by asking its delegate first, by the request's
/// ``RequestOptions/redirectPolicy`` (a session manager sets it to its own
/// ``SessionConfiguration/redirectPolicy`` in a request that sets none, for every engine but a
/// ``NIOEngine``, which holds it in its configuration). It knows exchanges, not tasks: progress,
/// serialization, notifications and retries live above it, the same for every engine.
///
/// ``NIOEngine`` is the default. `CourierTesting` has a stub engine for tests that must not touch
/// a socket; write your own to put Courier on another transport (and have it refuse, as the
/// others do, what HTTP forbids in a field value: ``Request/checkFieldValues()``).
public protocol Engine: Sendable {
    /// Starts one exchange and returns its handle at once.
    ///
    /// The delegate may be called before this returns, on any thread, but never concurrently for
    /// one exchange; ``ExchangeDelegate/exchange(didCompleteWith:)`` is called exactly once and
    /// is the last call.
    func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange

    /// Stops the engine: exchanges still running fail, connections close, threads are released.
    /// An engine that was shut down fails every new exchange with ``CourierError/Code/sessionInvalidated``.
    func shutdown() async throws
}

/// The handle of one running exchange.
public protocol Exchange: AnyObject, Sendable {
    /// Ends the exchange; the delegate then completes with `error`.
    func cancel(with error: CourierError)
    /// Stops asking the transport for body bytes (back-pressure): nothing more is delivered and
    /// the server is slowed by TCP flow control until ``resumeReceiving()``.
    func suspendReceiving()
    /// Undoes ``suspendReceiving()``.
    func resumeReceiving()
}

/// What to do with a response head.
public enum ResponseDisposition: Sendable, Hashable {
    /// Go on and receive the body.
    case allow
    /// Cancel the exchange; it completes with ``CourierError/Code/cancelled``.
    case cancel
}

/// Receives the events of one exchange from an ``Engine``.
///
/// Calls for one exchange never overlap. They come on the engine's threads (event loops for
/// ``NIOEngine``): return quickly and never block.
public protocol ExchangeDelegate: AnyObject, Sendable {
    /// The engine made `exchange` and is about to start it: called inside
    /// ``Engine/execute(_:delegate:)``, before any other event, so that a suspension or a
    /// cancellation the delegate decides in the exchange's first events reaches it (``Engine``'s
    /// `execute` may deliver events before it returns the handle). Optional.
    func exchangeWillStart(_ exchange: any Exchange)

    /// Body bytes went out. `totalBytesExpectedToSend` is nil for a body of unknown length.
    func exchange(didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?)

    /// The server redirected. Return the request to follow (the proposal, changed or not), or nil to
    /// stop here and take the redirect response itself as the final response.
    func exchange(willPerformRedirection response: HTTPResponse, newRequest: Request) -> Request?

    /// The final response head arrived; `url` is the URL that answered (after redirects).
    func exchange(didReceive response: HTTPResponse, url: URL) -> ResponseDisposition

    /// The protocol the final response head came over, as ALPN names it (`"h2"`, `"http/1.1"`,
    /// `"http/1.0"`); called just before ``exchange(didReceive:url:)``. Optional: engines that
    /// do not know never call it.
    func exchange(willReceiveResponseOver networkProtocolName: String)

    /// A chunk of the response body arrived.
    func exchange(didReceive chunk: ByteBuffer)

    /// The final response ended with trailer fields (HTTP/1.1 chunked trailers, HTTP/2 trailing
    /// HEADERS); called after the last body chunk and before
    /// ``exchange(didCompleteWith:)``. Optional: engines that drop trailers never call it.
    func exchange(didReceiveTrailers trailers: HTTPFields)

    /// One transaction (a hop: the first request, or a redirect's) ended, with what the engine
    /// recorded of it; called before the next hop starts, or before
    /// ``exchange(didCompleteWith:)``. Optional: engines that record nothing never call it.
    func exchange(didFinishTransaction metrics: TransactionMetrics)

    /// The exchange ended: successfully when `error` is nil. Called exactly once, last.
    func exchange(didCompleteWith error: CourierError?)
}

extension ExchangeDelegate {
    /// Does nothing: a delegate that keeps no metrics need not implement it.
    public func exchange(didFinishTransaction metrics: TransactionMetrics) {}
    /// Does nothing: a delegate that waits for `execute` to return the handle need not implement it.
    public func exchangeWillStart(_ exchange: any Exchange) {}
    /// Does nothing: a delegate that does not keep trailers need not implement it.
    public func exchange(didReceiveTrailers trailers: HTTPFields) {}
    /// Does nothing: a delegate that does not care about the protocol need not implement it.
    public func exchange(willReceiveResponseOver networkProtocolName: String) {}
}
