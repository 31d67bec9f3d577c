import Foundation
import NIOCore
import NIOSSL
import NIOWebSocket

/// What a ``WebSocketChannelHandler`` reports to its task; called on the channel's loop.
protocol WebSocketChannelHandlerDelegate: AnyObject, Sendable {
    /// A message for the consumer. Returns how many bytes of messages (this one included) wait
    /// unread now: past the maximum, the connection closes with 1008.
    func webSocketDidReceive(_ message: WebSocketMessage) -> Int
    /// A PONG answered the user's PINGs with these payloads (its own and the earlier ones).
    func webSocketPingsAnswered(_ payloads: [ByteBuffer])
    /// The connection is over (called once).
    func webSocketDidFinish(_ ending: WebSocketConnectionStateMachine.Ending)
}

/// Runs a ``WebSocketConnectionStateMachine`` on a connection after the opening handshake: frames
/// from swift-nio's decoder in, client frames (masked, RFC 6455 5.3) out through its encoder, the
/// keep-alive PING's timer and the wait for the server's close. It never holds reads back: control
/// frames must be read whatever the consumer does, and the machine bounds what waits unread.
final class WebSocketChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    struct Timing {
        /// How often a PING goes out; nil for none.
        var pingInterval: TimeAmount?
        /// How long Courier waits for the server's close frame after its own.
        var closeTimeout: TimeAmount

        init(pingInterval: TimeAmount?, closeTimeout: TimeAmount) {
            self.pingInterval = pingInterval
            self.closeTimeout = closeTimeout
        }

        /// A configuration's: an interval of zero or less sends no PING, as OkHttp's 0 (it was
        /// taken as 1 ms, and the connection ended at once for a PING not yet answered); NaN is
        /// the default, 30 s.
        init(_ configuration: WebSocketConfiguration) {
            self.pingInterval = configuration.pingInterval.flatMap { $0 <= 0 ? nil : .seconds(clamping: $0, nan: 30) }
            self.closeTimeout = .seconds(clamping: configuration.closeTimeout, to: 0...1e9, nan: 10)
        }
    }

    private var machine: WebSocketConnectionStateMachine
    private let timing: Timing
    private let delegate: any WebSocketChannelHandlerDelegate
    private var context: ChannelHandlerContext?
    private var pingTask: RepeatedTask?
    private var closeTimer: Scheduled<Void>?
    private var closing = false
    /// The write of Courier's close frame, which the TCP close waits for.
    private var closeFrameWritten: EventLoopFuture<Void>?
    /// The TCP close that does not wait for that write past the close timeout.
    private var forcedClose: Scheduled<Void>?

    /// `permessage-deflate`'s compressor and decompressor, if it was negotiated.
    private let deflate: PerMessageDeflate?

    /// The most payload bytes one frame of a message carries: a larger message goes as fragments
    /// (RFC 6455 5.4), written as the connection takes them, so that control frames (the
    /// keep-alive's PING, a PONG owed, a close) go out between them instead of waiting behind the
    /// whole message.
    static let fragmentSize = 1 << 16
    private let fragmentSize: Int
    /// How many bytes of fragments may wait in the channel's buffer: more makes fewer, larger
    /// writes (one fragment a time made a 1 MiB message cost a third more CPU); fewer lets a
    /// control frame out sooner.
    static let fragmentsAhead = 1 << 18
    private let fragmentsAhead: Int

    /// A message that goes out in fragments (or whole), its payload copied into each fragment's
    /// buffer as it goes: one copy of the caller's bytes, and a buffer of its own for each frame,
    /// which the frame encoder masks in place.
    private struct FragmentedMessage {
        enum Source {
            case text(String)
            case data(Data)
            /// A compressed payload.
            case buffer(ByteBuffer)
        }

        var opcode: WebSocketOpcode
        var source: Source
        var compressed: Bool
        /// Completed with the last fragment's write.
        var promise: EventLoopPromise<Void>?
        /// The payload's length, and how much of it went out.
        let count: Int
        var sent = 0

        init(opcode: WebSocketOpcode, source: Source, compressed: Bool, promise: EventLoopPromise<Void>?) {
            self.opcode = opcode
            self.source = source
            self.compressed = compressed
            self.promise = promise
            switch source {
            case .text(let text): self.count = text.utf8.count
            case .data(let data): self.count = data.count
            case .buffer(let buffer): self.count = buffer.readableBytes
            }
        }

        var started: Bool { self.sent > 0 }

        /// The next fragment's payload, at most `maximum` bytes.
        mutating func next(_ maximum: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
            let start = self.sent
            let length = min(maximum, self.count - start)
            self.sent += length
            switch self.source {
            case .text(var text):
                var fragment = allocator.buffer(capacity: length)
                text.withUTF8 { _ = fragment.writeBytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: $0[start..<(start + length)]))) }
                return fragment
            case .data(let data):
                var fragment = allocator.buffer(capacity: length)
                data.withUnsafeBytes { _ = fragment.writeBytes(UnsafeRawBufferPointer(rebasing: $0[start..<(start + length)])) }
                return fragment
            case .buffer(let buffer):
                let fragment = buffer.getSlice(at: buffer.readerIndex + start, length: length)!
                // The last piece is the buffer's only holder then: the encoder masks it in place.
                if self.sent == self.count { self.source = .data(Data()) }
                return fragment
            }
        }

        /// The whole payload in one buffer (for the compressor).
        func whole(allocator: ByteBufferAllocator) -> ByteBuffer {
            var copy = self
            copy.sent = 0
            return copy.next(self.count, allocator: allocator)
        }
    }

    /// What waits to be written behind a fragmented message: messages, and the user's close frame
    /// (which goes after the messages sent before it).
    private enum Outgoing {
        case message(FragmentedMessage)
        case close(ByteBuffer, EventLoopPromise<Void>)
    }

    private var outgoing = CircularBuffer<Outgoing>()

    init(
        maximumMessageSize: Int, maximumBufferedBytes: Int = .max, timing: Timing, deflate: PerMessageDeflate? = nil,
        fragmentSize: Int = WebSocketChannelHandler.fragmentSize, fragmentsAhead: Int = WebSocketChannelHandler.fragmentsAhead,
        delegate: any WebSocketChannelHandlerDelegate
    ) {
        self.machine = WebSocketConnectionStateMachine(
            maximumMessageSize: maximumMessageSize, maximumBufferedBytes: maximumBufferedBytes, compression: deflate != nil)
        self.deflate = deflate
        self.timing = timing
        self.fragmentSize = max(1, fragmentSize)
        self.fragmentsAhead = fragmentsAhead
        self.delegate = delegate
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if let interval = self.timing.pingInterval {
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            self.pingTask = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
                var payload = ByteBuffer()
                payload.writeInteger(UInt64.random(in: .min ... .max))
                loopBound.value.run(loopBound.value.machine.pingTimerFired(payload: payload))
            }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.stopTimers()
        self.forcedClose?.cancel()
        self.forcedClose = nil
        self.context = nil
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.run(self.machine.frameReceived(self.unwrapInboundIn(data)))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? NIOWebSocketError {
            switch error {
            case .invalidFrameLength:
                self.run(self.machine.decodingFailed(.messageTooBig, "a frame over the maximum message size"))
            case .multiByteControlFrameLength:
                self.run(self.machine.decodingFailed(.protocolError, "a control frame over 125 bytes"))
            case .fragmentedControlFrame:
                self.run(self.machine.decodingFailed(.protocolError, "a fragmented control frame"))
            }
        } else if let error = error as? WebSocketFrameLengthOverflow {
            // NIO's decoder calls this a frame too big (`invalidFrameLength`, 1009).
            self.run(self.machine.decodingFailed(.protocolError, error.description))
        } else if let error = error as? NIOSSLError, error == .uncleanShutdown {
            // The server closed the TCP connection without TLS's close_notify: the close that
            // follows is a close with no closing handshake (1006), as over ws://.
        } else if error is IOError {
            // The connection failed (a reset): not the server breaking WebSocket's rules (1002),
            // a close with no closing handshake (1006), which the close reports.
            context.close(promise: nil)
        } else {
            // Any other error comes from below the frame decoder (a TLS record that does not
            // decrypt, an alert from the server): the transport failed, which a close frame
            // written into it would not mend, and the server did not break WebSocket's rules.
            self.run(self.machine.connectionFailed("\(error)"))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.run(self.machine.connectionClosed())
        self.failOutgoing()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { self.writeOutgoing() }
        context.fireChannelWritabilityChanged()
    }

    // MARK: Outbound

    /// Sends a message (masked; in fragments past ``fragmentSize`` bytes), if the connection is open.
    func send(_ message: WebSocketMessage, promise: EventLoopPromise<Void>?) {
        guard self.machine.isOpen, let context = self.context else {
            promise?.fail(WebSocketTask.notOpenError())
            return
        }
        let allocator = context.channel.allocator
        var outgoing: FragmentedMessage
        switch message {
        case .text(let text): outgoing = FragmentedMessage(opcode: .text, source: .text(text), compressed: false, promise: promise)
        case .binary(let data): outgoing = FragmentedMessage(opcode: .binary, source: .data(data), compressed: false, promise: promise)
        }
        if let deflate = self.deflate {
            guard let compressed = deflate.compress(outgoing.whole(allocator: allocator), allocator: allocator) else {
                promise?.fail(CourierError(.internalInconsistency, "zlib could not compress a WebSocket message"))
                return
            }
            outgoing = FragmentedMessage(opcode: outgoing.opcode, source: .buffer(compressed), compressed: true, promise: promise)
        }
        // One frame, at once, when it is small and nothing waits before it.
        if outgoing.count <= self.fragmentSize, self.outgoing.isEmpty {
            let data = outgoing.next(outgoing.count, allocator: allocator)
            let frame = WebSocketFrame(fin: true, rsv1: outgoing.compressed, opcode: outgoing.opcode, maskKey: .random(), data: data)
            context.writeAndFlush(self.wrapOutboundOut(frame), promise: promise)
            return
        }
        self.outgoing.append(.message(outgoing))
        self.writeOutgoing()
    }

    /// Writes what waits, a fragment at a time, at least one and then while fewer than
    /// ``fragmentsAhead`` bytes wait in the channel's buffer (``channelWritabilityChanged(context:)``
    /// calls again when it drained).
    private func writeOutgoing() {
        guard let context = self.context else { return }
        var wrote = false
        while let first = self.outgoing.first, !wrote || self.hasRoom(context) {
            wrote = true
            switch first {
            case .close(let payload, let promise):
                self.outgoing.removeFirst()
                let frame = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: payload)
                context.write(self.wrapOutboundOut(frame), promise: promise)
                self.startCloseTimer(context: context)
            case .message(var message):
                let isFirst = !message.started
                let data = message.next(self.fragmentSize, allocator: context.channel.allocator)
                let last = message.sent == message.count
                let frame = WebSocketFrame(
                    fin: last, rsv1: message.compressed && isFirst, opcode: isFirst ? message.opcode : .continuation, maskKey: .random(),
                    data: data)
                if last {
                    self.outgoing.removeFirst()
                } else {
                    self.outgoing[self.outgoing.startIndex] = .message(message)
                }
                context.write(self.wrapOutboundOut(frame), promise: last ? message.promise : nil)
            }
        }
        if wrote {
            context.flush()
            // The messages ahead of a queued close frame moved: the bound on their stall starts
            // again. (While the connection is open no close is queued: nothing to look for.)
            if !self.machine.isOpen, self.closeIsQueued { self.startCloseStallTimer(context: context) }
        }
    }

    /// Whether the user's close frame waits behind messages still going out.
    private var closeIsQueued: Bool {
        self.outgoing.contains { if case .close = $0 { true } else { false } }
    }

    private func hasRoom(_ context: ChannelHandlerContext) -> Bool {
        guard let buffered = try? context.channel.syncOptions?.getOption(.bufferedWritableBytes) else { return context.channel.isWritable }
        return buffered < self.fragmentsAhead
    }

    /// The connection is closing: the messages still waiting never go, and the user's close frame
    /// waiting behind them goes now (between two fragments, as a control frame may).
    private func endOutgoing() {
        guard let context = self.context,
            let index = self.outgoing.firstIndex(where: { if case .close = $0 { true } else { false } }),
            case .close(let payload, let promise) = self.outgoing.remove(at: index)
        else {
            self.failOutgoing()
            return
        }
        self.failOutgoing()
        self.write(context: context, opcode: .connectionClose, data: payload, promise: promise)
    }

    /// Fails what waits to be written: the connection ended, or a close frame went out before it
    /// (nothing may follow one).
    private func failOutgoing() {
        let failed = self.outgoing
        self.outgoing.removeAll()
        for item in failed {
            switch item {
            case .message(let message): message.promise?.fail(WebSocketTask.notOpenError())
            case .close(_, let promise): promise.fail(WebSocketTask.notOpenError())
            }
        }
    }

    /// Sends a PING with `payload` (at most 125 bytes), if the connection is open.
    func sendPing(_ payload: ByteBuffer, promise: EventLoopPromise<Void>?) {
        guard let context = self.context, self.machine.userPingSent(payload) else {
            promise?.fail(WebSocketTask.notOpenError())
            return
        }
        self.write(context: context, opcode: .ping, data: payload, promise: promise)
    }

    /// The user's wait for the PONG of `payload` was cancelled.
    func pingAbandoned(_ payload: ByteBuffer) {
        self.machine.userPingAbandoned(payload)
    }

    func close(code: WebSocketCloseCode, reason: String) {
        self.run(self.machine.closeRequested(code: code, reason: reason))
    }

    func cancel() {
        self.run(self.machine.cancelled())
    }

    // MARK: Actions

    private func run(_ actions: [WebSocketConnectionStateMachine.Action]) {
        for action in actions {
            switch action {
            case .sendPong(let payload):
                if let context = self.context { self.write(context: context, opcode: .pong, data: payload, promise: nil) }
            case .sendPing(let payload):
                if let context = self.context { self.write(context: context, opcode: .ping, data: payload, promise: nil) }
            case .sendClose(let code, let reason):
                guard let context = self.context else { continue }
                let written = context.eventLoop.makePromise(of: Void.self)
                self.closeFrameWritten = written.futureResult
                self.write(context: context, opcode: .connectionClose, data: Self.closePayload(code, reason, context: context), promise: written)
                // The rest of a message being sent in fragments, and what waits behind it, never goes.
                self.failOutgoing()
            case .sendCloseAfterMessages(let code, let reason):
                guard let context = self.context else { continue }
                let written = context.eventLoop.makePromise(of: Void.self)
                self.closeFrameWritten = written.futureResult
                let payload = Self.closePayload(code, reason, context: context)
                if self.outgoing.isEmpty {
                    self.write(context: context, opcode: .connectionClose, data: payload, promise: written)
                    self.startCloseTimer(context: context)
                } else {
                    // The wait for the server's close starts when this one goes (`writeOutgoing`);
                    // until then, the close timeout bounds a stall of the messages ahead of it (a
                    // server that stops reading would otherwise hold the close for ever).
                    self.outgoing.append(.close(payload, written))
                    self.startCloseStallTimer(context: context)
                }
            case .deliver(let message):
                self.run(self.machine.messageQueued(unreadBytes: self.delegate.webSocketDidReceive(message)))
            case .inflate(let isText, let payload):
                guard let deflate = self.deflate, let context = self.context else { continue }
                let result = deflate.decompress(payload, limit: self.machine.maximumMessageSize, allocator: context.channel.allocator)
                self.run(self.machine.inflated(isText: isText, result))
            case .pingsAnswered(let payloads):
                self.delegate.webSocketPingsAnswered(payloads)
            case .closeConnection:
                self.stopTimers()
                self.endOutgoing()
                guard !self.closing, let context = self.context else { continue }
                self.closing = true
                // After the close frame went out, if one did.
                let channel = context.channel
                if let written = self.closeFrameWritten {
                    written.whenComplete { _ in channel.close(promise: nil) }
                    // A close frame behind a message the server does not read may wait for ever:
                    // the connection closes after the close timeout all the same.
                    self.forcedClose = context.eventLoop.scheduleTask(in: self.timing.closeTimeout) { channel.close(promise: nil) }
                } else {
                    context.close(promise: nil)
                }
            case .finish(let ending):
                self.stopTimers()
                self.delegate.webSocketDidFinish(ending)
            }
        }
    }

    /// Starts the wait for the server's answer to the user's close frame, which has just been
    /// written: from the frame's write, not from `close()`. Behind a long message still going out
    /// the frame waits for it, and a slow upload timed out a close the server had not been sent
    /// ("did not answer the close frame within 10 s"); OkHttp starts its wait as the frame is
    /// taken off its queue too.
    private func startCloseTimer(context: ChannelHandlerContext) {
        self.scheduleCloseTimer(context: context) { $0.closeTimedOut() }
    }

    /// Bounds the wait of a close frame queued behind messages: the close timeout, counted again
    /// each time a fragment of them goes out. A slow upload is not cut short; a server that reads
    /// nothing more ends the task (``WebSocketConnectionStateMachine/closeStalled()``).
    private func startCloseStallTimer(context: ChannelHandlerContext) {
        self.scheduleCloseTimer(context: context) { $0.closeStalled() }
    }

    /// The close timer, in place of the one running: `fired` is the machine's event when it fires.
    private func scheduleCloseTimer(
        context: ChannelHandlerContext, fired: @escaping @Sendable (inout WebSocketConnectionStateMachine) -> [WebSocketConnectionStateMachine.Action]
    ) {
        self.closeTimer?.cancel()
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        self.closeTimer = context.eventLoop.scheduleTask(in: self.timing.closeTimeout) {
            let handler = loopBound.value
            handler.run(fired(&handler.machine))
        }
    }

    /// A close frame's body: the code and at most 123 bytes of the reason (a control frame
    /// carries 125), cut on a character; empty without a code.
    private static func closePayload(_ code: WebSocketCloseCode?, _ reason: String, context: ChannelHandlerContext) -> ByteBuffer {
        var payload = context.channel.allocator.buffer(capacity: 2 + reason.utf8.count)
        if let code {
            payload.writeInteger(code.rawValue)
            var cut = Substring(reason)
            while cut.utf8.count > 123 { cut = cut.dropLast() }
            payload.writeString(String(cut))
        }
        return payload
    }

    private func write(context: ChannelHandlerContext, opcode: WebSocketOpcode, data: ByteBuffer, promise: EventLoopPromise<Void>?) {
        let frame = WebSocketFrame(fin: true, opcode: opcode, maskKey: .random(), data: data)
        context.writeAndFlush(self.wrapOutboundOut(frame), promise: promise)
    }

    private func stopTimers() {
        self.pingTask?.cancel()
        self.pingTask = nil
        self.closeTimer?.cancel()
        self.closeTimer = nil
    }
}
