import Foundation
import NIOCore
import NIOHTTP2

/// The decisions of one HTTP/2 connection, apart from its I/O: what the server's SETTINGS and
/// GOAWAY mean for the pool, when an idle connection is pinged, and when it closes.
///
/// A value with no channel, lock or clock: ``HTTP2ConnectionHandler`` feeds it the connection's
/// events, with the time they happened (the event loop's `now`), and runs the ``Action`` each
/// returns. The pool keeps its own accounting (streams per connection, waiting hops); this machine
/// only hears when the connection becomes idle (no stream open) or busy.
///
/// - Before the pool counts the connection (``attached()``), what the server said is kept: the
///   last `SETTINGS_MAX_CONCURRENT_STREAMS` and a GOAWAY, reported on attachment.
/// - The first GOAWAY drains the connection; a later one may only lower the last stream the
///   server will process (RFC 9113 6.8).
/// - Idle, with nothing received for ``Configuration/pingInterval``, it sends a PING; no frame
///   within ``Configuration/pingTimeout`` of it (the ACK or any other) closes the connection.
///   Idle for ``Configuration/idleTimeout`` it asks the pool to let it close; that deadline wins a
///   tie with the ping's, so a ping interval at or above the idle timeout never fires.
/// - One timer at a time: ``Action/scheduleIdleCheck(at:)`` and ``Action/sendPing(_:checkAt:)``
///   ask for it (replacing any scheduled one), ``idleCheckFired(now:)`` reports it.
struct HTTP2ConnectionStateMachine {
    struct Configuration: Equatable {
        /// How long a connection with no stream open is kept.
        var idleTimeout: TimeAmount
        /// How long an idle connection may hear nothing before it sends a PING.
        var pingInterval: TimeAmount
        /// How long a PING may wait for any frame before the connection counts as dead.
        var pingTimeout: TimeAmount
        /// The ID of the connection's first stream (odd; 1 but in tests).
        var firstStreamID = 1
        /// How long the server may take to send its first SETTINGS, counted from when the pool
        /// counts the connection (the engine's connect timeout).
        var settingsTimeout: TimeAmount = .seconds(10)
    }

    enum CloseReason: Equatable {
        /// No frame arrived within the ping timeout of a PING.
        case pingTimeout
        /// A connection error (swift-nio-http2 or below): every stream fails with it.
        case connectionError
        /// The server sent no SETTINGS within ``Configuration/settingsTimeout`` of the connection's
        /// attachment (RFC 9113 3.4: its first frame): the connection never became usable.
        case noSettings
        /// The server sent `SETTINGS_ENABLE_PUSH` other than 0, which a server must not send: a
        /// connection error of type PROTOCOL_ERROR (RFC 9113 6.5.2). Courier sends GOAWAY with it,
        /// and every stream fails with ``HTTP2ServerEnabledPush``.
        case serverEnabledPush
    }

    enum Action: Equatable {
        case none
        /// The server's SETTINGS (the first makes the connection ready); the maximum is its
        /// `SETTINGS_MAX_CONCURRENT_STREAMS`, nil when it has not said.
        case reportMaximumStreams(Int?)
        /// The server's first GOAWAY: streams above `lastStreamID` were not processed; the pool
        /// opens no new stream here and closes the connection once its streams end.
        case drain(lastStreamID: HTTP2StreamID)
        /// A later GOAWAY lowered the last stream the server will process.
        case lowerLastStreamID(HTTP2StreamID)
        /// Call ``idleCheckFired(now:)`` at the deadline.
        case scheduleIdleCheck(at: NIODeadline)
        /// Send a PING with this payload, and call ``idleCheckFired(now:)`` at `checkAt`.
        case sendPing(HTTP2PingData, checkAt: NIODeadline)
        /// Idle for the idle timeout: close unless the pool handed out a stream meanwhile (its
        /// ``becameBusy()`` may still be on its way to the loop).
        case closeIfStillIdle
        /// Close the connection.
        case close(CloseReason)
    }

    private enum Lifecycle: Equatable {
        /// The pool does not count the connection yet; what the server said waits for it.
        case waitingForPool(settingsReceived: Bool, maximumStreams: Int?, goAway: HTTP2StreamID?)
        case active
        /// GOAWAY came: the pool drains the connection.
        case goingAway(lastStreamID: HTTP2StreamID)
        case closed
    }

    private enum Ping: Equatable {
        case none
        case awaitingAnswer(sentAt: NIODeadline)
    }

    let configuration: Configuration
    private var lifecycle = Lifecycle.waitingForPool(settingsReceived: false, maximumStreams: nil, goAway: nil)
    /// Since when no stream has been open, or nil while one is.
    private var idleSince: NIODeadline?
    /// When the last bytes came from the server, if any came since the connection was made.
    private var lastReceived: NIODeadline?
    private var ping = Ping.none
    /// The payload of the next PING.
    private var nextPingPayload: UInt64 = 1
    /// When the scheduled check comes due, if one is scheduled.
    private var scheduledCheck: NIODeadline?
    /// When the server's first SETTINGS must have come, while it has not.
    private var settingsDeadline: NIODeadline?
    /// The server's last `SETTINGS_MAX_HEADER_LIST_SIZE`, nil until it says one: the longest
    /// request header list it takes (RFC 9113 6.5.2: each field's name and value, and 32 octets).
    private(set) var peerMaximumHeaderListSize: Int?
    /// The server's last `SETTINGS_MAX_FRAME_SIZE` (RFC 9113 6.5.2: 16 KiB until it says one):
    /// the longest frame swift-nio-http2 sends it, a request's header block included (it sends
    /// no CONTINUATION frames). Go's server says 1 MiB.
    private(set) var peerMaximumFrameSize = HopHandler.http2MinimumFrameSize
    /// The server's first GOAWAY that named an error (not NO_ERROR), with its debug data: why
    /// the streams it did not process were dropped.
    private(set) var serverGoAway: HTTP2GoAwayRefusal?

    init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// Whether the connection closed, or decided to.
    var isClosed: Bool { self.lifecycle == .closed }

    // MARK: The pool

    /// The pool counts the connection: what the server said before is reported now. Given the
    /// time, a connection whose server has not sent its SETTINGS yet waits for them at most
    /// ``Configuration/settingsTimeout``: until then the pool counts it as connecting and opens no
    /// other connection to the host, so a server that never sends them (or a balancer whose
    /// backend hangs) held every request to the host for as long as it kept the socket open.
    mutating func attached(now: NIODeadline? = nil) -> Action {
        guard case .waitingForPool(let settingsReceived, let maximumStreams, let goAway) = self.lifecycle else { return .none }
        if let goAway {
            // The pool takes a draining connection as ready: the SETTINGS no longer matter.
            self.lifecycle = .goingAway(lastStreamID: goAway)
            return .drain(lastStreamID: goAway)
        }
        self.lifecycle = .active
        if settingsReceived { return .reportMaximumStreams(maximumStreams) }
        guard let now else { return .none }
        self.settingsDeadline = now + self.configuration.settingsTimeout
        return self.scheduleCheckIfEarlier()
    }

    /// The pool says no stream is open on the connection.
    mutating func becameIdle(now: NIODeadline) -> Action {
        self.idleSince = now
        return self.scheduleCheckIfEarlier()
    }

    /// The pool handed out a stream.
    mutating func becameBusy() {
        self.idleSince = nil
    }

    // MARK: The server

    /// A frame of the connection's own (stream 0) arrived.
    mutating func received(_ payload: HTTP2Frame.FramePayload, now: NIODeadline) -> Action {
        self.heardFromServer(now: now)
        switch payload {
        case .settings(.settings(let settings)):
            if settings.contains(where: { $0.parameter == .enablePush && $0.value != 0 }), self.lifecycle != .closed {
                self.lifecycle = .closed
                return .close(.serverEnabledPush)
            }
            if let limit = settings.last(where: { $0.parameter == .maxHeaderListSize })?.value {
                self.peerMaximumHeaderListSize = limit
            }
            // RFC 9113 6.5.2 allows 2^14 to 2^24-1; swift-nio-http2 refuses other values as a
            // PROTOCOL_ERROR before this sees them.
            if let size = settings.last(where: { $0.parameter == .maxFrameSize })?.value,
               size >= HopHandler.http2MinimumFrameSize {
                self.peerMaximumFrameSize = size
            }
            let maximum = settings.last { $0.parameter == .maxConcurrentStreams }?.value
            switch self.lifecycle {
            case .waitingForPool(_, let previous, let goAway):
                self.lifecycle = .waitingForPool(settingsReceived: true, maximumStreams: maximum ?? previous, goAway: goAway)
                return .none
            case .active:
                self.settingsDeadline = nil
                return .reportMaximumStreams(maximum)
            case .goingAway, .closed:
                return .none
            }
        case .goAway(let lastStreamID, let errorCode, let debugData):
            if self.serverGoAway == nil, errorCode != .noError {
                self.serverGoAway = HTTP2GoAwayRefusal(errorCode: errorCode, debugData: debugData)
            }
            switch self.lifecycle {
            case .waitingForPool(let settingsReceived, let maximumStreams, let previous):
                let lowest = previous.map { min($0, lastStreamID) } ?? lastStreamID
                self.lifecycle = .waitingForPool(settingsReceived: settingsReceived, maximumStreams: maximumStreams, goAway: lowest)
                return .none
            case .active:
                self.lifecycle = .goingAway(lastStreamID: lastStreamID)
                return .drain(lastStreamID: lastStreamID)
            case .goingAway(let previous):
                guard lastStreamID < previous else { return .none }
                self.lifecycle = .goingAway(lastStreamID: lastStreamID)
                return .lowerLastStreamID(lastStreamID)
            case .closed:
                return .none
            }
        default:
            // PING (answered by swift-nio-http2), its ACK, WINDOW_UPDATE: liveness only.
            return .none
        }
    }

    /// Bytes arrived (a read ended), whatever stream they were for: a PING they answered makes
    /// the next one due sooner than its answer's deadline, the check already scheduled.
    mutating func readCompleted(now: NIODeadline) -> Action {
        self.heardFromServer(now: now)
        return self.scheduleCheckIfEarlier()
    }

    private mutating func heardFromServer(now: NIODeadline) {
        self.lastReceived = now
        self.ping = .none
    }

    // MARK: Time

    /// The scheduled check came due.
    mutating func idleCheckFired(now: NIODeadline) -> Action {
        self.scheduledCheck = nil
        guard self.lifecycle == .active else { return .none }
        if let deadline = self.settingsDeadline, now >= deadline {
            self.lifecycle = .closed
            return .close(.noSettings)
        }
        if case .awaitingAnswer(let sentAt) = self.ping, now >= sentAt + self.configuration.pingTimeout {
            self.lifecycle = .closed
            return .close(.pingTimeout)
        }
        if let idleSince = self.idleSince {
            if now >= idleSince + self.configuration.idleTimeout {
                return .closeIfStillIdle
            }
            if self.ping == .none, now >= self.quietSince(idleSince) + self.configuration.pingInterval {
                self.ping = .awaitingAnswer(sentAt: now)
                let payload = HTTP2PingData(withInteger: self.nextPingPayload)
                self.nextPingPayload &+= 1
                let next = self.nextDeadline() ?? now + self.configuration.pingTimeout
                self.scheduledCheck = next
                return .sendPing(payload, checkAt: next)
            }
        }
        return self.scheduleCheckIfEarlier()
    }

    /// Since when the idle connection has heard nothing.
    private func quietSince(_ idleSince: NIODeadline) -> NIODeadline {
        self.lastReceived.map { max($0, idleSince) } ?? idleSince
    }

    /// The next time something may be due: a PING's answer, the idle timeout, the next PING.
    private func nextDeadline() -> NIODeadline? {
        guard self.lifecycle == .active else { return nil }
        var next: NIODeadline?
        func consider(_ deadline: NIODeadline) { next = next.map { min($0, deadline) } ?? deadline }
        if let deadline = self.settingsDeadline { consider(deadline) }
        if case .awaitingAnswer(let sentAt) = self.ping {
            consider(sentAt + self.configuration.pingTimeout)
        }
        if let idleSince = self.idleSince {
            consider(idleSince + self.configuration.idleTimeout)
            if self.ping == .none {
                consider(self.quietSince(idleSince) + self.configuration.pingInterval)
            }
        }
        return next
    }

    /// Schedules the next check unless one is scheduled no later (a check that comes early only
    /// schedules the next).
    private mutating func scheduleCheckIfEarlier() -> Action {
        guard let next = self.nextDeadline(), self.scheduledCheck.map({ next < $0 }) ?? true else { return .none }
        self.scheduledCheck = next
        return .scheduleIdleCheck(at: next)
    }

    // MARK: The end

    /// Whether an error that reached the end of the connection's pipeline ends the connection,
    /// knowing whether swift-nio-http2 sent GOAWAY (``HTTP2SentFrames``).
    ///
    /// - Anything not HTTP/2's own (TLS, the socket): the connection below failed.
    /// - An HTTP/2 error after swift-nio-http2 sent GOAWAY: a connection error in what the server
    ///   sent (a malformed frame, a frame on a stream long closed, a flood its limits caught).
    /// - A frame it could not encode: its header compression may now disagree with the server's.
    ///
    /// Any other HTTP/2 error ends one stream at most: a stream error (swift-nio-http2 reset that
    /// stream, whose ``HTTP2Stream`` hears of it), or a frame it refused to send with nothing sent
    /// and its state unchanged (a stream created after the server's GOAWAY, a frame for a stream
    /// it no longer knows, which it reports and drops).
    static func endsConnection(_ error: any Error, goAwaySent: Bool) -> Bool {
        guard error is any NIOHTTP2Error else { return true }
        return goAwaySent || error is NIOHTTP2Errors.UnableToSerializeFrame
    }

    /// A connection error reached the end of the pipeline.
    mutating func errorCaught() -> Action {
        guard self.lifecycle != .closed else { return .none }
        self.lifecycle = .closed
        return .close(.connectionError)
    }

    /// The channel closed.
    mutating func channelInactive() {
        self.lifecycle = .closed
        self.scheduledCheck = nil
    }
}

extension HTTP2ConnectionStateMachine.Configuration {
    /// An engine configuration's PING interval and timeout (a millisecond to 10⁹ seconds; a value
    /// that is not a number is the default), with the pool's idle timeout.
    init(_ configuration: NIOEngine.Configuration, idleTimeout: TimeAmount, connectTimeout: TimeAmount = .seconds(10)) {
        func amount(_ seconds: TimeInterval, default: TimeInterval) -> TimeAmount {
            .seconds(clamping: seconds, nan: `default`)
        }
        self.init(
            idleTimeout: idleTimeout,
            pingInterval: amount(configuration.http2PingInterval, default: 30),
            pingTimeout: amount(configuration.http2PingTimeout, default: 10),
            firstStreamID: max(1, configuration.http2FirstStreamID) | 1,
            settingsTimeout: connectTimeout)
    }
}

/// A request an HTTP/2 server did not process because its GOAWAY named an error (not NO_ERROR):
/// the client is not sent elsewhere at once, and the error says what the server said.
/// ENHANCE_YOUR_CALM asks for less load and PROTOCOL_ERROR blames the client, so sending the
/// same request again on a new connection at once, as after a graceful GOAWAY, made ten more
/// connections in half a second (a scripted server; curl fails at once).
///
/// It is also why a request fails that the server did take, when the connection closes after such
/// a GOAWAY before its response is complete (``afterProcessing``): the server's words, not an idle
/// timeout's guess (Tomcat closes so, with ENHANCE_YOUR_CALM, on a client it finds abusive).
struct HTTP2GoAwayRefusal: Error, Equatable, CustomStringConvertible {
    let errorCode: NIOHTTP2.HTTP2ErrorCode
    /// The GOAWAY's debug data as text (printable ASCII, at most 200 bytes), if it had any.
    let debugText: String?
    /// Whether the GOAWAY left the request among those the server processes (its stream at or
    /// below the last one named), and the connection's close then cut its response short.
    private(set) var processed = false

    /// Whether the request had been sent again already, after another GOAWAY that named an error
    /// left it unprocessed (``ResendRule/Closure/notProcessedWithError``: once at most).
    private(set) var afterResend = false

    /// The same GOAWAY, for a request the server took whose connection then closed.
    var afterProcessing: HTTP2GoAwayRefusal {
        var refusal = self
        refusal.processed = true
        return refusal
    }

    /// The same GOAWAY, for a request it refused a second time (not sent again).
    var refusingAgain: HTTP2GoAwayRefusal {
        var refusal = self
        refusal.afterResend = true
        return refusal
    }

    init(errorCode: NIOHTTP2.HTTP2ErrorCode, debugData: ByteBuffer?) {
        self.errorCode = errorCode
        let bytes = debugData.map { Array($0.readableBytesView.prefix(200)) } ?? []
        let text = String(decoding: bytes.map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
        self.debugText = text.isEmpty ? nil : text
    }

    var description: String {
        let debug = self.debugText.map { " (\"\($0)\")" } ?? ""
        let when = self.processed ? "before the response was complete" : "before processing the request"
        let again = self.afterResend ? "; Courier had already sent it again once, on this new connection, after a GOAWAY with an error on another" : ""
        return "the server closed the HTTP/2 connection with GOAWAY \(NIOEngine.name(of: self.errorCode))\(debug) \(when)\(again)"
            + NIOEngine.hint(for: self.errorCode)
    }
}
