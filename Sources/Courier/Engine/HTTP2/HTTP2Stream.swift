import HTTPTypes
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// One hop's stream on an ``HTTP2Connection``: no channel, pipeline or codec of its own, a few
/// fields in its connection's ``HTTP2ConnectionHandler``, which hands it the stream's frames and
/// swift-nio-http2's events about it. Everything here runs on the connection's loop.
///
/// The decisions are an ``HTTP2StreamStateMachine``'s; the stream turns the hop's request parts
/// into frames (the head waits for what follows it, so that a request without a body is one
/// HEADERS frame with END_STREAM, and the last DATA, or the HEADERS of the body's trailer fields,
/// carries END_STREAM), the server's frames into response parts (through a
/// ``ResponseInflater`` when the pool decompresses), the hop's reads into WINDOW_UPDATE, and
/// its close into RST_STREAM when the stream is under way. The hop itself is driven by a
/// ``HopHandler`` in stream mode, as on a connection of its own.
final class HTTP2Stream {
    let id: HTTP2StreamID
    let eventLoop: any EventLoop
    private let channel: any Channel
    /// The connection, until the stream is finished (the pool counts the stream until then).
    private var connection: HTTP2Connection?
    /// Where frames go; dropped when the stream is finished.
    private var connectionHandler: HTTP2ConnectionHandler?
    /// The hop's driver; dropped when the stream is finished.
    var hopHandler: HopHandler?
    private var stateMachine: HTTP2StreamStateMachine
    /// The head written and not yet sent: it goes with END_STREAM when the request's end follows
    /// at once.
    private var pending: (payload: HTTP2Frame.FramePayload, promise: EventLoopPromise<Void>?)?
    /// The body's chunks written and not yet all sent, oldest first, each with the promise its
    /// last frame completes: the connection's ``HTTP2DataScheduler`` says which frames they go
    /// out as, and when (its windows allow).
    /// Made with the first chunk: a stream without a body (most) allocates nothing for it.
    private var outbound: CircularBuffer<(data: IOData, promise: EventLoopPromise<Void>?)>?
    /// The promise of the body's end (END_STREAM) while it waits for the chunks before it.
    private var endPromise: EventLoopPromise<Void>?
    /// The trailers' header block while it waits for the chunks before it.
    private var trailers: (block: HPACKHeaders, promise: EventLoopPromise<Void>?)?
    /// The decompression ratio, when the pool decompresses.
    private let decompressionRatio: Int?
    private var inflater: ResponseInflater?
    /// Whether this stream's response is decoded (``HopHandler/CodingFields``), when the
    /// stream decompresses at all: set by the hop before its head goes out.
    var decodesResponse = true
    /// Whether the request is a HEAD, whose response ends at its head (set by the hop's handler).
    var answersHEAD = false
    /// The body's bytes as they came, before decompression, for the hop's metrics (a field, not
    /// a ``ResponseBodyCounter`` object a stream).
    private(set) var bodyBytesReceived: Int64 = 0
    /// Removed from the connection and counted closed by the pool.
    private(set) var isFinished = false
    /// The longest request header list the server takes, if it said (its connection's SETTINGS).
    var peerMaximumHeaderListSize: Int? { self.connectionHandler?.peerMaximumHeaderListSize }
    /// The longest frame the server takes, a request's header block's (its connection's SETTINGS).
    var peerMaximumFrameSize: Int { self.connectionHandler?.peerMaximumFrameSize ?? HopHandler.http2MinimumFrameSize }

    init(
        id: HTTP2StreamID, connection: HTTP2Connection, connectionHandler: HTTP2ConnectionHandler, targetWindow: Int,
        decompressionRatio: Int?
    ) {
        self.id = id
        self.connection = connection
        self.channel = connection.channel
        self.eventLoop = connection.channel.eventLoop
        self.connectionHandler = connectionHandler
        self.stateMachine = HTTP2StreamStateMachine(targetWindow: targetWindow)
        self.decompressionRatio = decompressionRatio
    }

    /// Whether the stream decompresses the response (its hop handler then asks for it with
    /// `Accept-Encoding`).
    var decompresses: Bool { self.decompressionRatio != nil }

    /// Whether no final response head has come on the stream.
    var awaitsResponseHead: Bool { self.stateMachine.awaitsResponseHead }

    /// Whether the stream can still carry its hop (and its connection is open).
    var isActive: Bool {
        !self.isFinished && self.stateMachine.isOpen && self.channel.isActive
    }

    // MARK: From the hop

    /// A part of the request. The head waits for the next part or a flush.
    func write(_ part: HTTPClientRequestPart, promise: EventLoopPromise<Void>?) {
        guard !self.isFinished, let connectionHandler else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        switch part {
        case .head:
            // A stream's head is its header block, made by the hop's handler (`writeHead`).
            assertionFailure("an HTTP/2 stream's head goes through writeHead")
            promise?.fail(ChannelError.ioOnClosedChannel)
        case .body(let body):
            self.sendPending(to: connectionHandler, endStream: false)
            // A refused HEADERS may have ended the stream meanwhile.
            guard !self.isFinished else {
                promise?.fail(ChannelError.ioOnClosedChannel)
                return
            }
            // An empty chunk is no frame (an empty DATA frame without END_STREAM is what a flood
            // of them is made of).
            guard body.readableBytes > 0 else {
                promise?.succeed()
                return
            }
            if self.outbound == nil { self.outbound = CircularBuffer(initialCapacity: 4) }
            self.outbound!.append((body, promise))
            connectionHandler.queued(self.id, length: body.readableBytes)
        case .end(let trailers):
            if let trailers {
                // The head and the last DATA go without END_STREAM; the trailers' HEADERS carry it.
                self.sendPending(to: connectionHandler, endStream: false)
                guard !self.isFinished, self.stateMachine.canSendTrailers else {
                    promise?.fail(ChannelError.ioOnClosedChannel)
                    return
                }
                self.trailers = (HTTP2StreamStateMachine.requestTrailerBlock(for: trailers), promise)
                connectionHandler.ended(self.id, with: .trailers)
            } else if self.pending != nil {
                // No body: the HEADERS carry END_STREAM.
                if let promise {
                    if let earlier = self.pending?.promise {
                        earlier.futureResult.cascade(to: promise)
                    } else {
                        self.pending?.promise = promise
                    }
                }
                self.sendPending(to: connectionHandler, endStream: true)
            } else {
                guard !self.isFinished else {
                    promise?.fail(ChannelError.ioOnClosedChannel)
                    return
                }
                // On the body's last DATA frame, or an empty one.
                self.endPromise = promise
                connectionHandler.ended(self.id, with: .endStream)
            }
        }
    }

    /// Writes the frame the connection's ``HTTP2DataScheduler`` chose for this stream: bytes from
    /// the front of its first chunk, or its end.
    func send(_ frame: HTTP2DataScheduler.Frame.Kind, to connectionHandler: HTTP2ConnectionHandler) {
        switch frame {
        case .data(let length, let endsChunk, let endStream):
            guard let first = self.outbound?.first else {
                connectionHandler.dataNotSent(length: length)
                return
            }
            let bytes: IOData
            var promise: EventLoopPromise<Void>? = nil
            if endsChunk {
                self.outbound!.removeFirst()
                bytes = first.data
                promise = first.promise
            } else {
                var rest = first.data
                bytes = Self.slicePrefix(length, of: &rest)
                self.outbound![self.outbound!.startIndex] = (rest, first.promise)
            }
            if endStream {
                self.stateMachine.sendingBody(endStream: true)
                if let endPromise = self.endPromise.take() {
                    if let promise {
                        promise.futureResult.cascade(to: endPromise)
                    } else {
                        promise = endPromise
                    }
                }
            }
            connectionHandler.writeData(
                HTTP2Frame(streamID: self.id, payload: .data(.init(data: bytes, endStream: endStream))), length: length, promise: promise)
        case .endStream:
            self.stateMachine.sendingBody(endStream: true)
            connectionHandler.write(
                HTTP2Frame(streamID: self.id, payload: .data(.init(data: .byteBuffer(ByteBuffer()), endStream: true))),
                promise: self.endPromise.take())
        case .trailers:
            guard let (block, promise) = self.trailers.take() else { return }
            guard self.stateMachine.sendingTrailers() else {
                promise?.fail(ChannelError.ioOnClosedChannel)
                return
            }
            connectionHandler.write(HTTP2Frame(streamID: self.id, payload: .headers(.init(headers: block, endStream: true))), promise: promise)
        }
    }

    /// The first `length` bytes of `data`, which keeps the rest (`length` is less than all).
    static func slicePrefix(_ length: Int, of data: inout IOData) -> IOData {
        switch data {
        case .byteBuffer(var buffer):
            let prefix = buffer.readSlice(length: length)!
            data = .byteBuffer(buffer)
            return .byteBuffer(prefix)
        case .fileRegion(var region):
            let prefix = FileRegion(fileHandle: region.fileHandle, readerIndex: region.readerIndex, endIndex: region.readerIndex + length)
            region.moveReaderIndex(forwardBy: length)
            data = .fileRegion(region)
            return .fileRegion(prefix)
        }
    }

    /// The request's head, as its header block: it waits for the next part or a flush, to go
    /// with END_STREAM if the request ends there.
    func writeHead(_ block: HPACKHeaders, promise: EventLoopPromise<Void>?) {
        guard !self.isFinished, self.connectionHandler != nil else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        self.pending = (.headers(.init(headers: block)), promise)
    }

    func flush() {
        guard let connectionHandler else { return }
        self.sendPending(to: connectionHandler, endStream: false)
        connectionHandler.flush(self.id)
    }

    private func sendPending(to connectionHandler: HTTP2ConnectionHandler, endStream: Bool) {
        // Taken out, not copied, and the frame made from the parts: a copy of the pending
        // payload, changed and wrapped again, retained the header block and the promise again.
        guard let (pendingPayload, promise) = self.pending.take() else { return }
        let payload: HTTP2Frame.FramePayload
        switch consume pendingPayload {
        case .headers(var headers):
            headers.endStream = endStream
            payload = .headers(headers)
            // The request's head (`pending` holds no other HEADERS).
            self.stateMachine.sendingHead(endStream: endStream)
            if !endStream { connectionHandler.streamOpened(self.id) }
        case let other:
            payload = other
        }
        connectionHandler.write(HTTP2Frame(streamID: self.id, payload: payload), promise: promise)
    }

    /// The HEADERS never went out (swift-nio-http2 refused them after the server's GOAWAY).
    func headersRefused() {
        self.stateMachine.headersRefused()
    }

    /// The hop takes more of the response: the window reopens if enough of it was used.
    func read() {
        guard !self.isFinished, let connectionHandler, let increment = self.stateMachine.readRequested() else { return }
        connectionHandler.write(HTTP2Frame(streamID: self.id, payload: .windowUpdate(windowSizeIncrement: increment)), promise: nil)
        connectionHandler.flush()
    }

    /// The hop is done with the stream: reset unless it ended (or never opened).
    func close() {
        guard !self.isFinished else { return }
        self.failPending()
        if case .reset(let code) = self.stateMachine.close(), let connectionHandler {
            connectionHandler.write(HTTP2Frame(streamID: self.id, payload: .rstStream(code)), promise: nil)
            connectionHandler.flush()
        }
        let hopHandler = self.hopHandler
        self.hopHandler = nil
        self.finish()
        hopHandler?.streamFinished()
    }

    // MARK: From the connection

    /// A frame of the stream arrived.
    func received(_ payload: HTTP2Frame.FramePayload) {
        guard !self.isFinished, let hopHandler else { return }
        let parts: HTTP2StreamStateMachine.Parts
        switch payload {
        case .headers(let headers):
            do {
                parts = try self.stateMachine.receivedHeaders(headers.headers, endStream: headers.endStream)
            } catch {
                hopHandler.streamFailed(error)
                return
            }
        case .data(let data):
            guard case .byteBuffer(let buffer) = data.data else { return }
            self.bodyBytesReceived += Int64(buffer.readableBytes)
            do {
                parts = try self.stateMachine.receivedData(buffer, endStream: data.endStream)
            } catch {
                hopHandler.streamFailed(error)
                return
            }
        default:
            // RST_STREAM: swift-nio-http2 closes the stream next. Nothing else concerns a hop.
            return
        }
        if let first = parts.first { self.deliver(first) }
        if let second = parts.second { self.deliver(second) }
    }

    private func deliver(_ part: HopResponsePart) {
        // An earlier part may have ended the hop with the stream.
        guard let hopHandler else { return }
        switch part {
        case .head(let head):
            if let ratio = self.decompressionRatio, self.decodesResponse,
                head.response.status.code != 206 || ResponseInflater.rangeIsTheWholeCoding(head.response.headerFields[.contentRange])
            {
                self.inflater = ResponseInflater.make(fields: head.response.headerFields, ratio: ratio)
            }
            hopHandler.streamReceived(part)
        case .body(let buffer):
            guard let inflater else {
                hopHandler.streamReceived(part)
                return
            }
            do {
                try inflater.inflate(buffer, allocator: self.channel.allocator) { hopHandler.streamReceived(.body($0)) }
            } catch {
                hopHandler.streamFailed(error)
            }
        case .end:
            if let inflater = self.inflater.take() {
                do {
                    try inflater.finish(allocator: self.channel.allocator)
                } catch {
                    hopHandler.streamFailed(error)
                }
            }
            self.hopHandler?.streamReceived(part)
        }
    }

    /// swift-nio-http2 reported the stream's receive window: the hop, unless suspended, reads on.
    func windowChanged(to size: Int) {
        guard !self.isFinished else { return }
        self.stateMachine.windowChanged(to: size)
        self.hopHandler?.streamReadRequested()
    }

    /// The server's acknowledgement of Courier's `SETTINGS_INITIAL_WINDOW_SIZE` moved the window.
    func initialWindowChanged(by delta: Int) {
        self.stateMachine.initialWindowChanged(by: delta)
    }

    /// A stream error swift-nio-http2 found in what the server sent (it resets the stream next).
    func failed(_ error: any Error) {
        guard !self.isFinished else { return }
        self.hopHandler?.streamFailed(error)
    }

    /// swift-nio-http2 closed the stream (with the reset's code, if one ended it), or the
    /// connection closed (nil).
    func closedBySwiftNIOHTTP2(reason: NIOHTTP2.HTTP2ErrorCode?) {
        guard !self.isFinished else { return }
        // A response to HEAD that came with content after its head (Jetty 9.4's for a page):
        // swift-nio-http2 reset the stream for it, as a HEAD answer has none (RFC 9110 9.3.2).
        // The head is the whole response, as curl and HTTP/1.1 take it: it ends here.
        let headersEndedHEAD = reason == .protocolError && self.answersHEAD && !self.stateMachine.awaitsResponseHead
            && self.connection?.resetSent(for: self.id) == .protocolError
        self.stateMachine.closedBySwiftNIOHTTP2()
        let reason = headersEndedHEAD ? nil : reason
        if headersEndedHEAD { self.hopHandler?.streamReceived(.end(nil)) }
        self.failPending()
        let hopHandler = self.hopHandler
        self.hopHandler = nil
        self.finish()
        if let reason {
            hopHandler?.streamFailed(NIOHTTP2Errors.streamClosed(streamID: self.id, errorCode: reason))
        }
        hopHandler?.streamInactive()
        hopHandler?.streamFinished()
    }

    private func failPending() {
        if let pending = self.pending.take() {
            pending.promise?.fail(ChannelError.ioOnClosedChannel)
        }
        while let (_, promise) = self.outbound?.popFirst() {
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
        self.endPromise.take()?.fail(ChannelError.ioOnClosedChannel)
        self.trailers.take()?.promise?.fail(ChannelError.ioOnClosedChannel)
    }

    /// The stream is over: off the connection, and no longer counted by the pool.
    private func finish() {
        self.isFinished = true
        self.connectionHandler?.streamFinished(self.id)
        self.connectionHandler = nil
        if let connection = self.connection.take() {
            connection.pool.streamClosed(on: connection)
        }
    }
}
