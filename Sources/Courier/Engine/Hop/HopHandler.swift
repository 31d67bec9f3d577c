import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTP2
import NIOSSL

/// What drives one hop at a time, over either protocol: the last handler of an
/// ``HTTP1Connection``'s pipeline, or (stream mode) one HTTP/2 stream's driver. It writes the
/// hop's request, hands the response to the hop's exchange, and gives the connection back to the
/// pool when both sides are done with it. Everything here runs on the connection's loop.
///
/// The decisions are a ``HopStateMachine``'s: the handler feeds it the pipeline's
/// events, the writes that completed, the exchange's pauses and the timers, and does what it
/// returns. The handler keeps what the machine must not: the hop itself, the body and its pump,
/// the transaction's metrics, and the scheduled timers.
///
/// In stream mode (``init(stream:carrying:firstStream:)``) it is in no pipeline: it carries one
/// HTTP/2 stream's hop the same way, writing to and reading from an ``HTTP2Stream`` (which makes
/// the frames and hands it the response parts and events), and the stream closes when the hop
/// ends.
final class HopHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart
    private typealias Machine = HopStateMachine

    /// Bodies in memory, and a streamed body's longer chunks, go out in slices of this size, each
    /// reported as sent once written.
    static let sliceLength = 64 * 1024

    /// Set by the pool once the connection exists; dropped when the pipeline lets go of the handler.
    var connection: HTTP1Connection?
    /// The HTTP/2 connection whose stream this handler carries (stream mode), until the stream is
    /// over.
    private var stream: HTTP2Connection?
    /// The stream this handler writes to, reads from and closes (stream mode).
    private let http2Stream: HTTP2Stream?
    /// Tells whether any byte arrived since the hop began (the first handler of the pipeline); none
    /// in stream mode, where the server says what it did not process.
    private let readWatcher: HTTP1ReadWatcher?
    private var context: ChannelHandlerContext?
    /// The connection's loop (kept after the pipeline lets go of the handler, for held parts).
    private var eventLoop: (any EventLoop)?
    private var stateMachine: HopStateMachine
    /// The hop under way: set while the machine runs one.
    private var hop: EngineHop?
    /// The task sending the running hop's streamed body, if the body is one.
    private var pump: Task<Void, Never>?
    /// The body held back until the server answers `Expect: 100-continue` (or the wait ends),
    /// with its send generation.
    private var heldBody: (body: OutgoingBody, generation: Int)?
    /// The running hop's transaction metrics, filled in as it goes.
    private var metrics: TransactionMetrics?
    /// Counts the body before the decompressor, when an HTTP/1.1 connection has one (a stream
    /// counts its DATA itself).
    private let bodyCounter: ResponseBodyCounter?
    /// Whether the response is decompressed before it reaches this handler (asked for with
    /// `Accept-Encoding`; its bytes as they came are counted apart).
    private let decompresses: Bool
    private var idleCheck: Scheduled<Void>?
    /// The end of the wait for `100 Continue`, while a body is held back.
    private var continueDeadline: Scheduled<Void>?

    init(readWatcher: HTTP1ReadWatcher, bodyCounter: ResponseBodyCounter? = nil) {
        self.readWatcher = readWatcher
        self.http2Stream = nil
        self.bodyCounter = bodyCounter
        self.decompresses = bodyCounter != nil
        self.stateMachine = HopStateMachine(mode: .connection)
    }

    /// A handler for `stream`, one stream of `connection`; `firstStream` when no stream opened on
    /// the connection before it (a later one is on a reused connection, for the resend rule).
    init(stream connection: HTTP2Connection, carrying stream: HTTP2Stream, firstStream: Bool) {
        self.readWatcher = nil
        self.stream = connection
        self.http2Stream = stream
        self.bodyCounter = nil
        self.decompresses = stream.decompresses
        self.eventLoop = stream.eventLoop
        self.stateMachine = HopStateMachine(mode: .stream, onReusedConnection: !firstStream)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        self.eventLoop = context.eventLoop
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        // The connection holds this handler: let go, or neither is ever freed.
        self.connection = nil
        self.stream = nil
    }

    // MARK: Hops

    /// Starts `hop` on the connection (or stream). `carriesSetup`: the pool handed the connection
    /// to it as it opened, and its transaction may report the connection's setup
    /// (``ConnectionEstablishment/apply(to:carriesSetup:channel:)``).
    func run(_ hop: EngineHop, carriesSetup: Bool = false) {
        guard self.connection != nil || self.stream != nil, self.transportIsActive else {
            // The connection closed before the hop started: nothing was sent, so it goes to
            // another connection, a few times at most.
            hop.restartElsewhere()
            return
        }
        let request = hop.request
        let (body, cancellation, withoutExpectation, resends, unprocessedResends, resentAfterGoAwayError) = hop.state.withLockedValue {
            ($0.body, $0.cancellation, $0.withoutExpectation, $0.resends, $0.unprocessedResends, $0.resentAfterGoAwayError)
        }
        let head: OutgoingRequestHead
        if let http2Stream = self.http2Stream {
            // Straight into the stream's header block (its `Accept-Encoding` too, when it
            // decompresses). A stream is always HTTPS, never through a forwarding proxy.
            do {
                let (block, size, codings) = try Self.headerBlock(
                    for: request, key: hop.key, length: body.length, acceptEncoding: self.decompresses,
                    userAgent: hop.pool.settings.userAgent,
                    peerMaximumHeaderListSize: http2Stream.peerMaximumHeaderListSize,
                    peerMaximumFrameSize: http2Stream.peerMaximumFrameSize)
                if self.decompresses { http2Stream.decodesResponse = codings.decodes(request) }
                if request.method == .head { http2Stream.answersHEAD = true }
                head = .stream(block, size: size)
            } catch is RequestHeadTooLargeForHTTP2 {
                // swift-nio-http2 sends no CONTINUATION frames: this request alone goes over
                // HTTP/1.1, where its head goes as it is (curl sends it in CONTINUATION frames).
                // Nothing was sent.
                self.afterHop(self.stateMachine.headRefused())
                hop.pool.resend(hop, reason: .headTooLargeForHTTP2)
                return
            } catch {
                // Courier's refusal, not the server's: nothing was sent.
                hop.end(.failure(CourierError(
                    .invalidRequest, "\(request.summary): the request cannot be sent over HTTP/2 (\(error))", request: request,
                    underlyingError: error)))
                self.afterHop(self.stateMachine.headRefused())
                return
            }
        } else {
            var codings = CodingFields()
            var http1Head = Self.head(for: request, key: hop.key, length: body.length, codings: &codings)
            if self.decompresses { self.bodyCounter?.decodes = codings.decodes(request) }
            if let userAgent = hop.pool.settings.userAgent, !codings.hasUserAgent {
                http1Head.add(name: "User-Agent", value: userAgent)
            }
            if self.decompresses, codings.asks {
                // The connection decompresses, and asks for it: added here, while the fields are
                // this head's alone (added further on, by a handler of the pipeline, to a head
                // this handler still shared, it copied them all).
                http1Head.add(name: "Accept-Encoding", value: "deflate, gzip")
            }
            http1Head.adjust(for: hop.key.route, url: request.url)
            head = .connection(http1Head)
        }
        var hasBody = true
        if case .empty = body { hasBody = false }
        var viaForwardingProxy = false
        if case .forward = hop.key.route { viaForwardingProxy = true }
        let decision = self.stateMachine.startHop(
            Machine.HopStart(
                requested: ExpectContinue.requested(in: request.headerFields), asksToClose: head.asksToClose,
                hasBody: hasBody, bodyLength: body.length, method: request.method,
                bodyIsReplayable: request.body.isReplayable, viaForwardingProxy: viaForwardingProxy,
                expectContinue: hop.pool.settings.expectContinue, withoutExpectation: withoutExpectation,
                resends: resends, isCancelled: cancellation != nil, unprocessedResends: unprocessedResends,
                resentAfterGoAwayError: resentAfterGoAwayError,
                hasIdempotencyKey: ResendRule.hasIdempotencyKey(request.method, fields: request.headerFields)))
        switch decision {
        case .restartElsewhere:
            // Busy (the pool never allows it) or closed: nothing was sent.
            hop.restartElsewhere()
        case .endCancelled(let then):
            hop.end(.failure(cancellation ?? CourierError.cancelled))
            self.afterHop(then)
        case .send(let expectation, let removingExpectField):
            self.send(
                hop, head: head, body: body, expectation: expectation, removingExpectField: removingExpectField, carriesSetup: carriesSetup)
        }
    }

    /// Writes the hop's request head, then its body, or holds the body for `100 Continue`.
    private func send(
        _ hop: EngineHop, head: OutgoingRequestHead, body: OutgoingBody, expectation: ExpectContinue.Decision, removingExpectField: Bool,
        carriesSetup: Bool
    ) {
        guard let eventLoop = self.eventLoop else { return }
        var head = head
        let generation = hop.exchange.sendGeneration
        self.hop = hop
        var metrics = TransactionMetrics(request: hop.request, fetchStart: hop.fetchStart)
        if let stream = self.stream {
            stream.establishment.apply(to: &metrics, carriesSetup: carriesSetup, channel: stream.channel)
        } else if let connection = self.connection {
            connection.establishment.apply(to: &metrics, carriesSetup: carriesSetup, channel: connection.channel)
        }
        self.readWatcher?.sawBytes = false
        self.readWatcher?.isIdle = false
        self.readWatcher?.expectHead()
        self.bodyCounter?.bytes = 0
        metrics.requestStart = .now
        metrics.countOfRequestHeaderBytesSent = head.size
        if removingExpectField { head.removeExpect() }
        if expectation == .announce {
            head.announceContinue()
            metrics.countOfRequestHeaderBytesSent += Int64("Expect: 100-continue\r\n".utf8.count)
        }
        // Moved, not copied: a copy left alive here would make the body's first change to the
        // metrics copy their storage.
        self.metrics = consume metrics
        let headWritten = eventLoop.makePromise(of: Void.self)
        let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
        headWritten.futureResult.whenComplete { result in
            let handler = loopBound.value
            guard handler.hop === hop else { return }
            switch result {
            case .success:
                handler.stateMachine.requestHeadWritten()
            case .failure(let error) where Self.isRefusedAfterGoAway(error):
                // The stream never opened: the server's GOAWAY came between the pool handing it
                // out and its HEADERS (swift-nio-http2 refused them; nothing went out). Runs inside
                // the write, so the stream closes before anything else of it reaches the connection
                // (and a draining connection whose last stream this was can close).
                handler.http2Stream?.headersRefused()
                handler.perform(handler.stateMachine.channelFailed(handler.loss(error)))
            case .failure:
                // The connection or stream failing says why, and when.
                break
            }
        }
        self.writeHead(head, promise: headWritten)
        if expectation != .sendAtOnce {
            // The body waits for `100 Continue`, a final answer, or the end of the wait.
            self.flush()
            guard self.hop === hop else { return }
            hop.exchange.requestHeadSent()
            self.heldBody = (body, generation)
            self.continueDeadline = eventLoop.scheduleTask(in: hop.pool.settings.expectContinue.timeout) {
                let handler = loopBound.value
                guard handler.hop === hop else { return }
                handler.continueDeadline = nil
                handler.perform(handler.stateMachine.continueWaitExpired())
            }
            return
        }
        self.sendBody(body, of: hop, generation: generation)
    }

    /// Writes the request's body and its end (with the body's trailer fields).
    private func sendBody(_ body: OutgoingBody, of hop: EngineHop, generation: Int) {
        guard let eventLoop = self.eventLoop else { return }
        let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
        let trailers = Self.trailers(of: hop.request)
        switch body {
        case .empty:
            self.write(.end(trailers), promise: nil)
            self.flush()
            // The flush may have ended the hop here (a stream that could not open).
            guard self.hop === hop else { return }
            self.metrics?.requestEnd = .now
            hop.exchange.requestHeadSent()
            self.requestEnded(of: hop)
        case .data(let data) where data.count <= Self.sliceLength:
            let buffer = ByteBuffer(data: data)
            self.write(.body(.byteBuffer(buffer)), promise: nil)
            let ended = self.http2Stream == nil ? nil : eventLoop.makePromise(of: Void.self)
            self.write(.end(trailers), promise: ended)
            self.flush()
            guard self.hop === hop else { return }
            self.metrics?.requestEnd = .now
            self.metrics?.countOfRequestBodyBytesSent = Int64(buffer.readableBytes)
            hop.exchange.requestHeadSent()
            hop.exchange.hopSentBodyPart(Int64(buffer.readableBytes), generation: generation)
            self.requestEnded(of: hop, once: ended?.futureResult)
        case .data(let data):
            var buffer = ByteBuffer(data: data)
            // Upload progress follows the socket: each slice counts once it is written.
            hop.exchange.requestHeadSent()
            while let slice = buffer.readSlice(length: min(Self.sliceLength, buffer.readableBytes)), slice.readableBytes > 0 {
                let written = eventLoop.makePromise(of: Void.self)
                let exchange = hop.exchange
                written.futureResult.whenSuccess {
                    exchange.hopSentBodyPart(Int64(slice.readableBytes), generation: generation)
                    guard loopBound.value.hop === hop else { return }
                    loopBound.value.metrics?.countOfRequestBodyBytesSent += Int64(slice.readableBytes)
                }
                self.write(.body(.byteBuffer(slice)), promise: written)
            }
            let ended = eventLoop.makePromise(of: Void.self)
            ended.futureResult.whenSuccess {
                guard loopBound.value.hop === hop else { return }
                loopBound.value.metrics?.requestEnd = .now
            }
            self.write(.end(trailers), promise: ended)
            self.flush()
            self.requestEnded(of: hop, once: self.http2Stream == nil ? nil : ended.futureResult)
        case .stream(let source, let length):
            self.flush()
            guard self.hop === hop else { return }
            hop.exchange.requestHeadSent()
            self.pump = self.streamBody(source, length: length, of: hop, generation: generation, eventLoop: eventLoop)
        }
    }

    /// The whole request of `hop` was written (or queued, for a body in memory).
    private func requestEnded(of hop: EngineHop) {
        // A write that failed at once may have ended the hop already.
        guard self.hop === hop else { return }
        self.perform(self.stateMachine.requestEnded())
    }

    /// A body in memory was queued whole: over HTTP/1.1 it ends now (the channel writes what it
    /// buffered, whatever comes next); on an HTTP/2 stream once `written`, its END_STREAM, left.
    /// A stream's queued DATA waits for the server's windows and is dropped when the stream
    /// closes, so an answer that ended before it (RFC 9113 8.1) must not end the hop, whose stream
    /// would be reset with the rest of the body unsent, while the hop reported success.
    private func requestEnded(of hop: EngineHop, once written: EventLoopFuture<Void>?) {
        guard let written else {
            self.requestEnded(of: hop)
            return
        }
        guard let eventLoop = self.eventLoop else { return }
        let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
        // A stream closed first fails the promise: the hop ends with it, by its close.
        written.whenSuccess { loopBound.value.requestEnded(of: hop) }
    }

    func cancel(_ hop: EngineHop) {
        // Not started yet (`run` checks the cancellation) or already ended: nothing to do.
        guard self.hop === hop else { return }
        let byTimeout = (hop.cancellation as? CourierError)?.code == .timedOut
        if let connection = self.stream, byTimeout {
            // A stream that timed out: its connection may be dead (only an idle one is pinged).
            // It takes no new stream, and closes once its other streams end.
            connection.pool.http2ConnectionUnusable(connection)
        }
        self.perform(self.stateMachine.hopCancelled(byTimeout: byTimeout))
    }

    /// Sends a file or stream body chunk by chunk, each once the previous one was written.
    ///
    /// The pump is a task of its own (the stream is an `AsyncSequence`); ``endRunning()`` cancels
    /// it when the hop ends otherwise (cancelled, failed, its connection gone), which also ends a
    /// wait for a chunk that never comes.
    private func streamBody(
        _ source: RequestBody.Stream, length: RequestBody.Length, of hop: EngineHop, generation: Int, eventLoop: any EventLoop
    ) -> Task<Void, Never> {
        let request = hop.request
        let trailers = Self.trailers(of: request)
        let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
        // The body's end, from the pump's task: through the channel on a connection, on the loop
        // for a stream (which is no channel). Its chunks: ``writeFromPump(_:of:generation:)``.
        let channel = self.context?.channel
        let writeAndFlush: @Sendable (HTTPClientRequestPart) -> EventLoopFuture<Void> = { part in
            if let channel { return channel.writeAndFlush(part) }
            return eventLoop.flatSubmit { loopBound.value.writeAndFlushFromPump(part) }
        }
        return Task {
            let outcome: Result<Void, any Error>
            do {
                var sent: Int64 = 0
                for try await chunk in source {
                    guard hop.cancellation == nil else { return }
                    sent += Int64(chunk.readableBytes)
                    if case .known(let declared) = length, sent > declared {
                        throw ConnectionPoolError.bodyLengthMismatch(declared: declared, sent: sent)
                    }
                    // Written on the loop, in slices counted as each is written
                    // (``writeFromPump(_:of:generation:)``); the next chunk is read once the last
                    // slice went.
                    try await eventLoop.flatSubmit { loopBound.value.writeFromPump(chunk, of: hop, generation: generation) }.get()
                }
                // Cancelled by `endRunning()`: the hop is over; nothing more goes out.
                if Task.isCancelled { return }
                if case .known(let declared) = length, sent != declared {
                    throw ConnectionPoolError.bodyLengthMismatch(declared: declared, sent: sent)
                }
                try await writeAndFlush(.end(trailers)).get()
                outcome = .success(())
            } catch {
                if !(error is CourierError || error is ConnectionPoolError) {
                    let active = try? await eventLoop.submit { loopBound.value.transportIsActive }.get()
                    // A write failed because the connection (or stream) closed: the read side
                    // reports why.
                    if active != true { return }
                }
                outcome = .failure(NIOExchange.bodyStreamFailure(error, request: request))
            }
            eventLoop.execute { loopBound.value.bodyEnded(hop, outcome) }
        }
    }

    /// Writes a chunk of the pump's body and flushes; the future completes once its last byte was
    /// written.
    ///
    /// A chunk longer than ``sliceLength`` (a file's are 512 KiB, a form's up to that) goes in
    /// slices of that length, as a body in memory does: upload progress, the exchange's idle
    /// clock and the transaction's count follow the socket slice by slice. Counted once per chunk,
    /// a link slower than a chunk per idle timeout (512 KiB a minute is 70 kbit/s; in 15 s, 280)
    /// timed an upload out with "no data" while its bytes went steadily. Each slice is counted on
    /// the event loop, where its write completes: the delegate's calls for one exchange never
    /// overlap, and the response's events come on this loop. The transaction counts what went out
    /// too, as the upload's progress does: a hop that ends before the stream does (cancelled, timed
    /// out, answered early, its stream failing) reports what it sent.
    private func writeFromPump(_ chunk: ByteBuffer, of hop: EngineHop, generation: Int) -> EventLoopFuture<Void> {
        guard let eventLoop = self.eventLoop else { preconditionFailure("a handler carrying a hop knows its loop") }
        // A pump that lost its hop (cancelled, still reading) writes nothing on the connection.
        guard self.hop === hop else { return eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
        var rest = chunk
        while rest.readableBytes > Self.sliceLength {
            self.writeCounted(rest.readSlice(length: Self.sliceLength)!, of: hop, generation: generation, on: eventLoop)
        }
        let written = self.writeCounted(rest, of: hop, generation: generation, on: eventLoop)
        self.flush()
        return written
    }

    /// Writes `slice` of the pump's body, counted once written (``writeFromPump(_:of:generation:)``).
    @discardableResult
    private func writeCounted(_ slice: ByteBuffer, of hop: EngineHop, generation: Int, on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
        let exchange = hop.exchange
        let bytes = Int64(slice.readableBytes)
        let written = eventLoop.makePromise(of: Void.self)
        written.futureResult.whenSuccess {
            exchange.hopSentBodyPart(bytes, generation: generation)
            let handler = loopBound.value
            guard handler.hop === hop else { return }
            handler.metrics?.countOfRequestBodyBytesSent += bytes
        }
        self.write(.body(.byteBuffer(slice)), promise: written)
        return written.futureResult
    }

    private func bodyEnded(_ hop: EngineHop, _ outcome: Result<Void, any Error>) {
        guard self.hop === hop else { return }
        switch outcome {
        case .success:
            self.metrics?.requestEnd = .now
            self.perform(self.stateMachine.requestEnded())
        case .failure(let error):
            self.perform(self.stateMachine.requestBodyFailed(error))
        }
    }

    // MARK: Actions

    /// Does what the machine decided.
    private func perform(_ action: Machine.Action) {
        switch action {
        case .none:
            break
        case .read:
            self.readTransport()
        case .close:
            self.closeTransport()
        case .interimHead:
            self.hop?.exchange.hopReceivedInterimHead()
        case .sendHeldBody:
            self.continueDeadline?.cancel()
            self.continueDeadline = nil
            guard let hop = self.hop, self.heldBody != nil, let eventLoop = self.eventLoop else { return }
            // Not inside the read that carried the `100 Continue`: a server that answers and
            // closes right after it (Node's and gunicorn's refuse an upload so) resets the body's
            // first writes, and a write that failed there closed the connection before the decoder
            // handed on the answer behind the `100`. After the read, that answer has been taken;
            // and a write that fails later lets NIO read what is left before it closes.
            let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
            eventLoop.execute {
                let handler = loopBound.value
                guard handler.hop === hop, let held = handler.heldBody, handler.transportIsActive else { return }
                handler.heldBody = nil
                handler.sendBody(held.body, of: hop, generation: held.generation)
            }
        case .forwardHead(let head, let networkProtocol):
            guard let hop = self.hop else { return }
            // A final answer ends any wait for `100 Continue` (the body is withheld).
            self.continueDeadline?.cancel()
            self.continueDeadline = nil
            self.metrics?.responseStart = .now
            self.metrics?.networkProtocolName = networkProtocol
            self.metrics?.countOfResponseHeaderBytesReceived = head.size
            self.metrics?.response = head.response
            hop.exchange.hopReceivedHead(head.response, over: networkProtocol)
        case .forwardBody(let buffer):
            guard let hop = self.hop, let eventLoop = self.eventLoop else { return }
            self.metrics?.countOfResponseBodyBytesAfterDecoding += Int64(buffer.readableBytes)
            if let wait = hop.exchange.hopReceivedBodyPart(buffer, on: eventLoop) {
                self.stateMachine.pauseDelivery()
                let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
                wait.whenComplete { _ in loopBound.value.resumeDelivery() }
            }
        case .discardBody(let buffer):
            self.metrics?.countOfResponseBodyBytesAfterDecoding += Int64(buffer.readableBytes)
        case .responseEnded(let trailers, let next):
            guard let hop = self.hop else { return }
            self.metrics?.responseEnd = .now
            if case .repeatWithoutExpectation = next {
                self.endRunning()
                self.closeTransport()
                hop.state.withLockedValue { $0.withoutExpectation = true }
                hop.pool.resend(hop)
                return
            }
            if let trailers {
                // Chunked trailers (HTTP/1.1) or trailing HEADERS (HTTP/2), before the end.
                hop.exchange.hopReceivedTrailers(HTTPFields(nioHeaders: trailers))
            }
            if case .succeed(let then) = next { self.succeed(then: then) }
        case .succeedHop(let then):
            self.succeed(then: then)
        case .failHop(let failure, let then):
            guard let hop = self.hop else { return }
            // Not sent again, but the origin's later requests go over HTTP/1.1 all the same.
            if case .http1Required = failure { hop.pool.originRequiresHTTP1(hop.key) }
            if case .proxyAuthenticationRequired(let head) = failure {
                // The transaction's answer, as a redirect's is (the exchange may answer it).
                self.metrics?.responseStart = .now
                self.metrics?.response = head.response
            }
            let error = self.error(for: failure, of: hop)
            self.endRunning()
            hop.end(.failure(error))
            self.afterHop(then)
        case .resendHop(let then, let reason):
            guard let hop = self.hop else { return }
            self.endRunning()
            hop.pool.resend(hop, reason: reason)
            self.afterHop(then)
        }
    }

    /// The hop's response is complete (and its request sent, or abandoned): the hop ends well,
    /// once the connection went back to the pool or closed.
    private func succeed(then: Machine.AfterHop) {
        guard let hop = self.hop else { return }
        self.endRunning()
        self.afterHop(then)
        hop.end(.success(()))
    }

    private func error(for failure: Machine.Failure, of hop: EngineHop) -> any Error {
        switch failure {
        case .cancelled:
            return hop.cancellation ?? CourierError.cancelled
        case .connectionLost(let error):
            return error ?? ConnectionPoolError.closedBeforeResponseComplete
        case .closedBeforeAnswering(let attempts):
            return ConnectionPoolError.closedBeforeAnswering(attempts: attempts)
        case .notProcessed(let attempts):
            return ConnectionPoolError.notProcessed(attempts: attempts)
        case .refusedAgainAfterGoAwayError(let error):
            return (error as? HTTP2GoAwayRefusal)?.refusingAgain ?? error ?? ConnectionPoolError.closedBeforeResponseComplete
        case .http1Required(let error):
            return error ?? ConnectionPoolError.closedBeforeResponseComplete
        case .requestBodyFailed(let error):
            return error
        case .closedOnReuseNotResent(let reset):
            return ConnectionPoolError.closedOnReuseNotResent(method: hop.request.method.rawValue, overHTTP2: self.stream != nil, reset: reset)
        case .proxyAuthenticationRequired(let head):
            // The forwarding proxy, not the origin, refused: a typed error that names it.
            var proxyName = "the proxy"
            var credentials = "none were configured"
            if case .forward(let proxy) = hop.key.route {
                proxyName = proxy.displayName
                credentials = ProxyTunnelFailure.credentialsVerdict(proxy: proxy, response: head.response)
            }
            return CourierError(
                .proxyAuthenticationRequired,
                "\(proxyName) wants authentication to forward \(hop.request.summary) (407 \(head.response.status.reasonPhrase)): \(credentials)",
                request: hop.request, response: head.response)
        case .expectationRefusedAfterBodyBegan(let head):
            return CourierError(
                .bodyReadFailed,
                "\(hop.request.summary): the server refused Expect: 100-continue (417 \(head.response.status.reasonPhrase)) after the body began to go out, and the body, a stream read once, cannot be sent again without it (a RequestBody.replayableStream body can; a session whose expectContinueThreshold is nil announces no expectation)",
                request: hop.request, response: head.response)
        }
    }

    /// The running hop is over for this connection: its body pump, if any, stops, and its
    /// transaction's metrics go to the hop (before the caller ends it).
    private func endRunning() {
        if let hop = self.hop, var metrics = self.metrics.take() {
            if let counter = self.bodyCounter {
                metrics.countOfResponseBodyBytesReceived = counter.bytes
            } else if let http2Stream = self.http2Stream, self.decompresses {
                metrics.countOfResponseBodyBytesReceived = http2Stream.bodyBytesReceived
            } else {
                metrics.countOfResponseBodyBytesReceived = metrics.countOfResponseBodyBytesAfterDecoding
            }
            hop.record(metrics)
        }
        self.metrics = nil
        self.pump?.cancel()
        self.pump = nil
        self.hop = nil
        self.heldBody = nil
        self.continueDeadline?.cancel()
        self.continueDeadline = nil
    }

    /// The hop ended: the connection goes back to the pool, or closes.
    private func afterHop(_ then: Machine.AfterHop) {
        switch then {
        case .none:
            break
        case .close where self.http2Stream != nil:
            // A stream both sides ended closes without a frame; one still open (the hop failed,
            // or was cancelled) is reset (``HTTP2StreamStateMachine``).
            self.http2Stream?.close()
        case .close:
            self.context?.close(promise: nil)
        case .giveBack(let serverIdleTimeout):
            guard let connection, let context, context.channel.isActive else {
                self.context?.close(promise: nil)
                return
            }
            self.becameIdle()
            connection.reusableUntil = serverIdleTimeout.map { .now() + $0 }
            connection.pool.release(connection)
        }
    }

    // MARK: Idle connections

    /// A new connection nobody waited for: idle, unless a hop was handed to it first (a caller
    /// that took it from the pool's idle list before this ran).
    func becameIdleBeforeAnyHop() {
        guard self.hop == nil, self.stateMachine.hopsCarried == 0 else { return }
        self.becameIdle()
    }

    /// Starts the idle clock (one check per idle timeout at most is scheduled), and has the read
    /// watcher close the connection on any byte that comes before the next request.
    private func becameIdle() {
        self.readWatcher?.isIdle = true
        guard let context, let connection else { return }
        self.perform(self.stateMachine.becameIdle(now: context.eventLoop.now, timeout: connection.pool.settings.idleTimeout))
    }

    private func perform(_ action: Machine.IdleAction) {
        switch action {
        case .none:
            break
        case .scheduleCheck(let deadline):
            guard let context else { return }
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            self.idleCheck = context.eventLoop.scheduleTask(deadline: deadline) {
                let handler = loopBound.value
                handler.idleCheck = nil
                guard let context = handler.context else { return }
                handler.perform(handler.stateMachine.idleCheckFired(now: context.eventLoop.now))
            }
        case .closeIfStillIdle:
            guard let connection, let context else { return }
            if connection.pool.removeIdle(connection) {
                context.close(promise: nil)
            }
        }
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part: HopResponsePart
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            // llhttp reads any three digits; `000`–`099` name no class (RFC 9110 15), and a
            // response with one is refused rather than handed on as status 0.
            if head.status.code < 100 {
                self.perform(self.stateMachine.channelFailed(self.loss(MalformedStatusCode(code: Int(head.status.code)))))
                return
            }
            // A response to HEAD ends at its head: its fields decide keep-alive, not llhttp's
            // reading (``HopResponseHead/init(nioHead:answersHEAD:unsupportedTransferCoding:reasonPhrase:)``). Asked only of a head
            // that says "close".
            var coding: UnsupportedTransferCoding?
            // The server's own reason phrase too (`200 Everything Fine`), which NIO's decoder replaced.
            var hopHead = HopResponseHead(
                nioHead: head, answersHEAD: self.hop?.request.method == .head, unsupportedTransferCoding: &coding,
                reasonPhrase: self.readWatcher?.reasonPhrase(for: Int(head.status.code)))
            // A final head that came with both Content-Length and Transfer-Encoding (the first
            // was removed before the decoder): its connection carries nothing more.
            if hopHead.status >= 200, self.readWatcher?.droppedContentLength == true { hopHead.isKeepAlive = false }
            let status = hopHead.status
            part = .head(consume hopHead)
            if let coding, HTTPResponse.hasBody(status: status, answeringHEAD: self.hop?.request.method == .head) {
                // Its body is not the content, and how it ends is the server's guess: the hop
                // fails and the connection closes. (A head that has no body, a HEAD's answer, a
                // 204 or 304, may name the coding its body would have had: nothing is coded.)
                self.perform(self.stateMachine.channelFailed(self.loss(coding)))
                return
            }
        case .body(let buffer): part = .body(buffer)
        case .end(let trailers): part = .end(trailers)
        }
        self.stateMachine.readBegan()
        self.perform(self.stateMachine.responseReceived(part))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.perform(self.stateMachine.readCompleted())
        context.fireChannelReadComplete()
    }

    // MARK: Stream mode

    /// A response part of the stream (stream mode).
    func streamReceived(_ part: HopResponsePart) {
        self.perform(self.stateMachine.responseReceived(part))
    }

    /// The stream's window shrank: the hop reads on unless its exchange is suspended (stream
    /// mode; what a channel's automatic read does).
    func streamReadRequested() {
        self.perform(self.stateMachine.readRequested())
    }

    /// The stream failed (stream mode): a stream error, a reset, the body's decompression.
    func streamFailed(_ error: any Error) {
        self.perform(self.stateMachine.channelFailed(self.loss(error)))
    }

    /// The stream closed (stream mode).
    func streamInactive() {
        self.perform(self.stateMachine.channelInactive(self.loss(nil)))
    }

    /// The stream is over (stream mode): the connection is no longer this handler's to hold (a
    /// suspended exchange may keep the handler a while, for the parts it holds).
    func streamFinished() {
        self.stream = nil
    }

    /// Writes from the body pump's task, on the loop (stream mode).
    private func writeAndFlushFromPump(_ part: HTTPClientRequestPart) -> EventLoopFuture<Void> {
        guard let eventLoop = self.eventLoop else { preconditionFailure("a handler in stream mode knows its loop") }
        let promise = eventLoop.makePromise(of: Void.self)
        self.write(part, promise: promise)
        self.flush()
        return promise.futureResult
    }

    // MARK: Transport

    /// Whether the connection (or stream) can still carry the hop.
    private var transportIsActive: Bool {
        if let http2Stream { return http2Stream.isActive }
        return self.context?.channel.isActive == true
    }

    private func writeHead(_ head: OutgoingRequestHead, promise: EventLoopPromise<Void>) {
        switch head {
        case .stream(let block, _):
            if let http2Stream {
                http2Stream.writeHead(block, promise: promise)
            } else {
                promise.fail(ChannelError.ioOnClosedChannel)
            }
        case .connection(let head):
            self.write(.head(head.nio), promise: promise)
        }
    }

    private func write(_ part: HTTPClientRequestPart, promise: EventLoopPromise<Void>?) {
        if let http2Stream {
            http2Stream.write(part, promise: promise)
        } else if let context {
            context.write(self.wrapOutboundOut(part), promise: promise)
        } else {
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
    }

    private func flush() {
        if let http2Stream {
            http2Stream.flush()
        } else {
            self.context?.flush()
        }
    }

    private func readTransport() {
        if let http2Stream {
            http2Stream.read()
        } else {
            self.context?.read()
        }
    }

    private func closeTransport() {
        if let http2Stream {
            http2Stream.close()
        } else {
            self.context?.close(promise: nil)
        }
    }

    /// The exchange takes body again: the parts held meanwhile go first, then the loss or the
    /// read that waited for them.
    private func resumeDelivery() {
        self.stateMachine.resumeDelivery()
        while let action = self.stateMachine.nextHeldAction() {
            self.perform(action)
        }
    }

    func read(context: ChannelHandlerContext) {
        self.perform(self.stateMachine.readRequested())
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A TLS peer closed the socket without close_notify: the connection is already going
        // inactive, and a body delimited by the close is complete; `channelInactive` decides.
        if let error = error as? NIOSSLError, error == .uncleanShutdown { return }
        self.perform(self.stateMachine.channelFailed(self.loss(error)))
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.idleCheck?.cancel()
        self.idleCheck = nil
        self.perform(self.stateMachine.channelInactive(self.loss(nil)))
        context.fireChannelInactive()
    }

    /// How the connection (or stream) ended, for the machine: what the error says, and what the
    /// read watcher and the hop know.
    private func loss(_ error: (any Error)?) -> Machine.Loss {
        guard let hop = self.hop else {
            return Machine.Loss(error: error, closure: .closed, responseBytesSeen: false, isCancelled: false)
        }
        // A stream closed without a reason of its own: its connection's error, if it failed.
        var error = error ?? self.stream?.connectionError
        if let closed = error as? NIOHTTP2Errors.StreamClosed, let stream = self.stream {
            // Closed by Courier's side, not the server: reset by swift-nio-http2 for a stream error
            // in what the server sent (a body past its length, a malformed field), or under way;
            // or dropped with CANCEL as the connection failed (the GOAWAY Courier's side then
            // sends; a stream the server's GOAWAY left out is dropped so too, and is not
            // processed, below). After a connection error, either is its consequence
            // (swift-nio-http2 went on reading frames for a stream whose head it could not
            // decode, and reset it with STREAM_CLOSED): the connection's error says why. Before
            // a response head, the one frame swift-nio-http2 resets a stream for with
            // STREAM_CLOSED is DATA.
            let resetByCourier = stream.resetSent(for: closed.streamID) == closed.errorCode
            let droppedWithConnection = closed.errorCode == .cancel && !stream.wasNotProcessed(closed.streamID)
            if resetByCourier || droppedWithConnection, let connectionError = stream.connectionError {
                error = connectionError
            } else if resetByCourier {
                error = closed.errorCode == .streamClosed && self.http2Stream?.awaitsResponseHead == true
                    ? HTTP2DataBeforeResponseHead() : HTTP2StreamResetByCourier(errorCode: closed.errorCode)
            }
        }
        var closure = error.map(self.closure(for:)) ?? .closed
        if closure == .notProcessed, let closed = error as? NIOHTTP2Errors.StreamClosed, closed.errorCode == .cancel, let stream = self.stream {
            // swift-nio-http2 closes a stream the server's GOAWAY left out as if reset with
            // CANCEL; the server reset nothing.
            error = HTTP2StreamBeyondGoAway(streamID: Int(closed.streamID), lastStreamID: Int(stream.lastStreamIDProcessed))
        }
        // Not processed because of a GOAWAY that named an error: sent again once at most, and the
        // error says what the server said when it is not. HTTP_1_1_REQUIRED is a refusal of
        // HTTP/2 only: over HTTP/1.1 it goes (``ResendRule``).
        if closure == .notProcessed, let refusal = self.stream?.serverGoAway {
            error = refusal
            closure = refusal.errorCode == .http11Required ? .http1Required : .notProcessedWithError
        } else if closure == .closed || closure == .reset || (closure == .failed && error is NIOHTTP2Errors.StreamClosed),
            let goAway = self.stream?.serverGoAway
        {
            // The connection closed after a GOAWAY that named an error, or the server reset the
            // stream after it, the request among those the server took (Tomcat's
            // ENHANCE_YOUR_CALM, "Too much overhead", then STREAM_CLOSED for streams still
            // sending): what the server said is why, not a kept-alive connection's idle timeout
            // nor a reset of this stream's own; and, as for a request it did not process, the
            // request is not sent again at once.
            error = goAway.afterProcessing
            closure = .failed
        }
        return Machine.Loss(
            error: error,
            closure: closure,
            responseBytesSeen: self.readWatcher?.sawBytes == true,
            isCancelled: hop.cancellation != nil)
    }

    /// What an error on the connection (or stream) says about how it ended.
    private func closure(for error: any Error) -> ResendRule.Closure {
        // A stream refused before it opened (GOAWAY had come): nothing of it left.
        if Self.isRefusedAfterGoAway(error) { return .notProcessed }
        if let closed = error as? NIOHTTP2Errors.StreamClosed, let stream = self.stream {
            // The server reset it with HTTP_1_1_REQUIRED: it processed nothing, and wants HTTP/1.1.
            if closed.errorCode == .http11Required { return .http1Required }
            // REFUSED_STREAM, or dropped by a GOAWAY naming an earlier stream (RFC 9113 8.7).
            let refused = closed.errorCode == .refusedStream || (closed.errorCode == .cancel && stream.wasNotProcessed(closed.streamID))
            return refused ? .notProcessed : .failed
        }
        if let error = error as? IOError, [ECONNRESET, EPIPE].contains(error.errnoCode) { return .reset }
        if let error = error as? ChannelError, error == .eof || error == .ioOnClosedChannel || error == .alreadyClosed { return .closed }
        return .failed
    }

    /// Whether swift-nio-http2 refused a stream's HEADERS because the server's GOAWAY had come:
    /// `CreatedStreamAfterGoaway` while other streams are still open on the connection, and
    /// `IOOnClosedConnection` once none is (the GOAWAY left the connection fully quiesced). Either
    /// way nothing of the stream went out. Before, the second was left to the connection's close,
    /// and a server that waits for the client to close it (Go's waits a second) held the request
    /// until then, or until its timeout.
    static func isRefusedAfterGoAway(_ error: any Error) -> Bool {
        error is NIOHTTP2Errors.CreatedStreamAfterGoaway || error is NIOHTTP2Errors.IOOnClosedConnection
    }
}
