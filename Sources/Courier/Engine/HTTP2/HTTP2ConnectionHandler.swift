import NIOCore
import NIOHTTP2

/// What an ``HTTP2ConnectionHandler`` tells whoever owns its connection (``HTTP2Connection``, for
/// the pool). Called on the channel's loop.
protocol HTTP2ConnectionDelegate: AnyObject {
    /// The server's SETTINGS (the first makes the connection ready), with its
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` if it said.
    func http2ReceivedSettings(maximumStreams: Int?)
    /// The server's first GOAWAY: streams above `lastStreamID` were not processed; no new stream.
    func http2GoingAway(lastStreamID: HTTP2StreamID)
    /// A later GOAWAY lowered the last stream the server will process.
    func http2LastStreamIDLowered(to lastStreamID: HTTP2StreamID)
    /// The connection was idle for the idle timeout: whether it may close (false when a stream was
    /// handed out meanwhile).
    func http2IdleTimeoutReached() -> Bool
    /// A connection error reached the handler (the connection closes): what its streams fail with.
    func http2ConnectionFailed(_ error: any Error)
    /// The handler is about to close the connection, and why.
    func http2WillClose(_ reason: HTTP2ConnectionStateMachine.CloseReason)
    /// The connection can take no new stream (it went inactive): the pool stops handing it out
    /// at once, before its close reaches the pool.
    func http2ConnectionUnusable()
}

/// The last handler of an ``HTTP2Connection``'s own pipeline, after swift-nio-http2's handler in
/// its frame mode (no stream channels): it feeds the connection's frames (stream 0), reads,
/// idleness and timer to an ``HTTP2ConnectionStateMachine`` and does what it decides: tell the
/// delegate, send a PING, schedule the next check, close.
///
/// It also carries the connection's streams (``HTTP2Stream``, one a hop): it gives each the next
/// stream ID, hands it its frames and swift-nio-http2's events about it (its window, its close,
/// its stream errors), writes what it sends, and keeps the connection's receive window open as
/// data arrives (the streams' own windows are back-pressure; the connection's is not).
///
/// The streams' request bodies go out as an ``HTTP2DataScheduler`` decides, which counts the
/// server's send windows from its WINDOW_UPDATE and SETTINGS frames (swift-nio-http2's
/// `NIOHTTP2WindowUpdatedEvent` reports a window as swift-nio-http2 counts it, once a frame
/// leaves its buffer, and no event reports a new `SETTINGS_INITIAL_WINDOW_SIZE` of the server's):
/// a stream queues its chunks and flushes, and the frames go when the windows allow, after the
/// read that reopened them.
final class HTTP2ConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private var stateMachine: HTTP2ConnectionStateMachine
    /// The server's `SETTINGS_MAX_HEADER_LIST_SIZE`, nil until it says one.
    var peerMaximumHeaderListSize: Int? { self.stateMachine.peerMaximumHeaderListSize }
    /// The server's `SETTINGS_MAX_FRAME_SIZE`, 16 KiB until it says one.
    var peerMaximumFrameSize: Int { self.stateMachine.peerMaximumFrameSize }
    /// The server's first GOAWAY that named an error, if one came.
    var serverGoAway: HTTP2GoAwayRefusal? { self.stateMachine.serverGoAway }
    /// What swift-nio-http2 sent (below it in the pipeline), to tell which errors end the
    /// connection; without it, every HTTP/2 error does.
    let sentFrames: HTTP2SentFramesWatcher?
    /// Set once the connection's owner counts it (``attach(_:)``); dropped when the pipeline lets
    /// go of the handler.
    private(set) var delegate: (any HTTP2ConnectionDelegate)?
    private var context: ChannelHandlerContext?
    /// The first error that ended the connection, of any kind (a TLS alert too), whether or not
    /// the pool had attached it: why a connection that closed before the server's SETTINGS
    /// failed to open.
    private(set) var closingError: (any Error)?
    private var idleCheck: Scheduled<Void>?
    /// The streams under way, by ID.
    private var streams: [HTTP2StreamID: HTTP2Stream] = [:]
    /// The ID the next stream gets (a client's are odd and increase). Past 2^31 - 1 the
    /// connection has none left: it takes no new stream, and the pool opens another.
    private var nextStreamID: Int
    /// The receive window each stream keeps open (`SETTINGS_INITIAL_WINDOW_SIZE` Courier sends).
    private let streamWindow: Int
    /// The receive window the connection keeps open.
    private let connectionWindow: Int
    /// Which DATA frames the streams' bodies go out as, and when.
    private var dataScheduler = HTTP2DataScheduler()
    /// Whether frames of the data scheduler are being written (a write may come back here).
    private var isSendingData = false
    /// Whether the scheduler may have more frames than the writes under way took.
    private var moreDataMayGo = false
    /// Whether a task to write the scheduler's frames is queued on the loop.
    private var sendDataScheduled = false
    /// Whether a WINDOW_UPDATE or SETTINGS frame of this read may let data go.
    private var windowsChangedInRead = false

    init(
        configuration: HTTP2ConnectionStateMachine.Configuration, sentFrames: HTTP2SentFramesWatcher? = nil,
        streamWindow: Int = 65535, connectionWindow: Int = 65535
    ) {
        self.stateMachine = HTTP2ConnectionStateMachine(configuration: configuration)
        self.nextStreamID = configuration.firstStreamID
        self.sentFrames = sentFrames
        self.streamWindow = streamWindow
        self.connectionWindow = connectionWindow
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.cancelIdleCheck()
        self.context = nil
        self.delegate = nil
    }

    /// The owner made and counts the connection: what the server said before goes to it now. On
    /// the connection's loop.
    func attach(_ delegate: any HTTP2ConnectionDelegate) {
        self.delegate = delegate
        self.run(self.stateMachine.attached(now: self.context?.eventLoop.now))
    }

    /// No stream is open on the connection.
    func becameIdle() {
        guard let context else { return }
        self.run(self.stateMachine.becameIdle(now: context.eventLoop.now))
    }

    /// A stream was handed out.
    func becameBusy() {
        self.stateMachine.becameBusy()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = self.unwrapInboundIn(data)
        switch frame.payload {
        case .windowUpdate(let increment):
            self.dataScheduler.windowIncreased(frame.streamID, by: increment)
            self.windowsChangedInRead = true
        case .settings(.settings(let settings)):
            self.dataScheduler.settingsReceived(settings)
            self.windowsChangedInRead = true
        default:
            break
        }
        if frame.streamID == .rootStream {
            self.run(self.stateMachine.received(frame.payload, now: context.eventLoop.now))
        } else {
            // A frame of a stream no longer here (reset, or closed under way) is dropped.
            self.streams[frame.streamID]?.received(frame.payload)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Three or four events a stream, on the connection's one loop: each is told apart by its
        // exact type (swift-nio-http2's events are structs), not by trying `as?` casts in turn,
        // which cost a failing cast each for the events that come first (a stream's creation
        // passed through three).
        let type = Swift.type(of: event)
        if type == NIOHTTP2WindowUpdatedEvent.self {
            let event = event as! NIOHTTP2WindowUpdatedEvent
            guard let size = event.inboundWindowSize else { return }
            if event.streamID == .rootStream {
                // The connection's window reopens as data arrives, whoever reads it.
                if let increment = HTTP2StreamStateMachine.windowIncrement(size: size, target: self.connectionWindow) {
                    context.write(
                        self.wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
                        promise: nil)
                    context.flush()
                }
            } else {
                self.streams[event.streamID]?.windowChanged(to: size)
            }
        } else if type == StreamClosedEvent.self {
            let event = event as! StreamClosedEvent
            self.streams[event.streamID]?.closedBySwiftNIOHTTP2(reason: event.reason)
        } else if type == NIOHTTP2BulkStreamWindowChangeEvent.self {
            let event = event as! NIOHTTP2BulkStreamWindowChangeEvent
            for stream in self.streams.values { stream.initialWindowChanged(by: event.delta) }
        }
        // The pipeline's last handler: nothing after it takes events (firing them on cost a few
        // retains an event, three or four events a stream).
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.windowsChangedInRead {
            // Once a read, so that the read's WINDOW_UPDATEs (one a DATA frame, from Tomcat) add up.
            self.windowsChangedInRead = false
            if self.dataScheduler.hasBodies {
                self.sendData()
                context.flush()
            }
        }
        self.run(self.stateMachine.readCompleted(now: context.eventLoop.now))
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? NIOHTTP2Errors.StreamError {
            // swift-nio-http2 found a stream error in what the server sent and resets the stream:
            // its hop hears why.
            self.streams[error.streamID]?.failed(error.baseError)
        }
        // A stream error (swift-nio-http2 reset that stream, which hears of it) or a frame it
        // refused to send (a stream created after the server's GOAWAY, whose handler sends its
        // request elsewhere): the other streams go on.
        let goAwaySent = self.sentFrames?.sent.sentGoAway ?? true
        guard HTTP2ConnectionStateMachine.endsConnection(error, goAwaySent: goAwaySent) else { return }
        var error = error
        if error is NIOHTTP2Errors.UnableToParseFrame, self.sentFrames?.sent.goAwayCode == .compressionError {
            // swift-nio-http2 reports every header block it cannot decode as a frame it could not
            // parse, its reason only in the GOAWAY it sent: say which, and the likely cause.
            error = HTTP2HeaderBlockUndecodable()
        }
        // A connection error: every stream on it fails with it as the connection closes.
        if self.closingError == nil { self.closingError = error }
        self.delegate?.http2ConnectionFailed(error)
        self.run(self.stateMachine.errorCaught())
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Told now, on the loop: a hop handed this connection before the close reaches the pool
        // would find no stream to open and come back for it again.
        self.delegate?.http2ConnectionUnusable()
        self.stateMachine.channelInactive()
        self.cancelIdleCheck()
        self.endStreams()
        context.fireChannelInactive()
    }

    /// Every stream still here ends with the connection: its hop fails with the connection's
    /// error, if one closed it.
    private func endStreams() {
        let streams = self.streams.values
        self.streams.removeAll()
        for stream in streams { stream.closedBySwiftNIOHTTP2(reason: nil) }
    }

    // MARK: Streams

    /// A new stream of `connection` (not yet sent: its HEADERS go with the hop's request), or nil
    /// when the connection closed or has no stream ID left.
    func makeStream(on connection: HTTP2Connection, decompressionRatio: Int?) -> HTTP2Stream? {
        guard let context, context.channel.isActive, self.nextStreamID <= Int(Int32.max) else { return nil }
        let id = HTTP2StreamID(self.nextStreamID)
        self.nextStreamID += 2
        let stream = HTTP2Stream(
            id: id, connection: connection, connectionHandler: self, targetWindow: self.streamWindow, decompressionRatio: decompressionRatio)
        self.streams[id] = stream
        return stream
    }

    /// A stream's frame goes out.
    func write(_ frame: HTTP2Frame, promise: EventLoopPromise<Void>?) {
        guard let context else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        context.write(self.wrapOutboundOut(frame), promise: promise)
    }

    func flush() {
        self.context?.flush()
    }

    /// A stream's flush: its queued body may go (as the windows allow), then everything written.
    func flush(_ id: HTTP2StreamID) {
        if self.dataScheduler.hasBodies {
            self.dataScheduler.flushed(id)
            self.sendData()
        }
        self.context?.flush()
    }

    /// A stream is over.
    func streamFinished(_ id: HTTP2StreamID) {
        self.streams[id] = nil
        self.dataScheduler.streamClosed(id)
    }

    // MARK: Request bodies

    /// A stream's HEADERS go out without END_STREAM: a body follows.
    func streamOpened(_ id: HTTP2StreamID) {
        self.dataScheduler.streamOpened(id)
    }

    /// A stream queued a chunk of its body.
    func queued(_ id: HTTP2StreamID, length: Int) {
        self.dataScheduler.queued(id, length: length)
    }

    /// A stream's body ends after what it queued.
    func ended(_ id: HTTP2StreamID, with end: HTTP2DataScheduler.End) {
        self.dataScheduler.ended(id, with: end)
    }

    /// A DATA frame the scheduler chose goes out; one that fails was not sent (swift-nio-http2
    /// dropped it as its stream closed, or refused it), and its bytes go back to the connection's
    /// window.
    func writeData(_ frame: HTTP2Frame, length: Int, promise: EventLoopPromise<Void>?) {
        guard let context else {
            self.dataScheduler.dataNotSent(length: length)
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        // The chunk's own promise when the frame ends a chunk; one of its own only for a frame cut
        // from the middle of a chunk.
        let written = promise ?? context.eventLoop.makePromise(of: Void.self)
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        written.futureResult.whenFailure { _ in
            loopBound.value.dataNotSent(length: length)
        }
        context.write(self.wrapOutboundOut(frame), promise: written)
    }

    /// A DATA frame of `length` bytes was never sent: the connection's window still has them, and
    /// another stream may send them (in a task of the loop's own: this comes from inside
    /// swift-nio-http2, failing the frame's promise).
    func dataNotSent(length: Int) {
        self.dataScheduler.dataNotSent(length: length)
        self.moreDataMayGo = true
        guard !self.isSendingData, !self.sendDataScheduled, let context else { return }
        self.sendDataScheduled = true
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let handler = loopBound.value
            handler.sendDataScheduled = false
            guard handler.context != nil else { return }
            handler.sendData()
            handler.flush()
        }
    }

    /// Writes the frames the scheduler lets go now (the caller flushes).
    private func sendData() {
        self.moreDataMayGo = true
        // A write may come back here (a stream that fails closes, and flushes): the frames it
        // let go are written by the loop under way.
        guard !self.isSendingData else { return }
        self.isSendingData = true
        defer { self.isSendingData = false }
        while self.moreDataMayGo {
            self.moreDataMayGo = false
            for frame in self.dataScheduler.nextFrames() {
                if let stream = self.streams[frame.streamID] {
                    stream.send(frame.kind, to: self)
                } else if case .data(let length, _, _) = frame.kind {
                    self.dataScheduler.dataNotSent(length: length)
                }
            }
        }
    }

    private func run(_ action: HTTP2ConnectionStateMachine.Action) {
        switch action {
        case .none:
            break
        case .reportMaximumStreams(let maximum):
            self.delegate?.http2ReceivedSettings(maximumStreams: maximum)
        case .drain(let lastStreamID):
            self.delegate?.http2GoingAway(lastStreamID: lastStreamID)
        case .lowerLastStreamID(let lastStreamID):
            self.delegate?.http2LastStreamIDLowered(to: lastStreamID)
        case .scheduleIdleCheck(let deadline):
            self.scheduleIdleCheck(at: deadline)
        case .sendPing(let payload, let deadline):
            self.context?.writeAndFlush(self.wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(payload, ack: false))), promise: nil)
            self.scheduleIdleCheck(at: deadline)
        case .closeIfStillIdle:
            if self.delegate?.http2IdleTimeoutReached() == true {
                self.context?.close(promise: nil)
            }
        case .close(let reason):
            if reason == .serverEnabledPush, let context {
                // A connection error of Courier's finding: GOAWAY with its code (the last stream
                // the server opened is none, 0), and the streams fail with what the server did.
                let error = HTTP2ServerEnabledPush()
                if self.closingError == nil { self.closingError = error }
                self.delegate?.http2ConnectionFailed(error)
                let goAway = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .rootStream, errorCode: .protocolError, opaqueData: nil))
                context.writeAndFlush(self.wrapOutboundOut(goAway), promise: nil)
            }
            self.delegate?.http2WillClose(reason)
            // The streams end now, not when the channel goes inactive: over TLS the close waits
            // for the server's close_notify, and swift-nio-http2 goes on reading meanwhile. A
            // response that followed the frame that broke the connection (a PUSH_PROMISE after
            // Courier disabled push) then reached its stream, which succeeded on a connection
            // that had failed (OkHttp's push test, in seven runs out of ten when run alone).
            self.endStreams()
            self.context?.close(promise: nil)
        }
    }

    /// Replaces the scheduled check, if any.
    private func scheduleIdleCheck(at deadline: NIODeadline) {
        guard let context else { return }
        self.idleCheck?.cancel()
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        self.idleCheck = context.eventLoop.scheduleTask(deadline: deadline) {
            let handler = loopBound.value
            handler.idleCheck = nil
            guard let context = handler.context else { return }
            handler.run(handler.stateMachine.idleCheckFired(now: context.eventLoop.now))
        }
    }

    private func cancelIdleCheck() {
        self.idleCheck?.cancel()
        self.idleCheck = nil
    }
}
