import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTP2
import NIOSSL

/// The last handler of an ``HTTP1Connection``'s pipeline: it writes one hop's request, hands the
/// response to the hop's exchange, and gives the connection back to the pool when both sides
/// are done with it. Everything here runs on the connection's loop.
///
/// In stream mode (``init(stream:)``) it is the last handler of one HTTP/2 stream, after
/// swift-nio-http2's HTTP/1 codec: it carries that stream's one hop the same way, and the stream
/// closes when the hop ends.
final class HTTP1ConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// The hop under way.
    private struct Running {
        let hop: HTTP1Hop
        /// Whether the connection carried a hop before this one (then a close before any
        /// response byte may be the server's idle timeout, and the hop can go again).
        let isReused: Bool
        /// Whether the request head reached the socket (then the server may have read it).
        var requestWritten = false
        var requestSent = false
        var responseStarted = false
        /// The response is complete; the request body is still going out (a status below 300
        /// lets it finish, as AsyncHTTPClient does, and the hop ends with it).
        var responseEnded = false
        var status = 0
        var keepAlive = true
        /// The request asked for `Connection: close`.
        let closeRequested: Bool
        /// The task sending a streamed body, if the body is one.
        var pump: Task<Void, Never>?
        /// The body held back until the server answers `Expect: 100-continue` (or the wait ends),
        /// with its send generation.
        var heldBody: (body: OutgoingBody, generation: Int)?
        /// A final answer came instead of `100 Continue`: the body was never sent, and the
        /// connection cannot carry another request (the server may read what follows as the body).
        var bodyWithheld = false
        /// The server refused the expectation (417) with the body held back: its answer is not
        /// the response; the request goes again without the expectation once the answer ends.
        var repeatWithoutExpectation = false
    }

    /// Bodies in memory go out in slices of this size, each reported as sent once written.
    static let sliceLength = 64 * 1024

    /// Set by the pool once the connection exists; dropped when the pipeline lets go of the handler.
    var connection: HTTP1Connection?
    /// The HTTP/2 connection whose stream this handler carries (stream mode); dropped with the handler.
    private var stream: HTTP2Connection?
    /// Tells whether any byte arrived since the hop began (the first handler of the pipeline); none
    /// in stream mode, where the server says what it did not process.
    private let readWatcher: HTTP1ReadWatcher?
    /// How long the server said it keeps an idle connection (`Keep-Alive: timeout=N`), if it said.
    private var serverIdleTimeout: TimeAmount?
    private var context: ChannelHandlerContext?
    /// The connection's loop (kept after the pipeline lets go of the handler, for held parts).
    private var eventLoop: (any EventLoop)?
    private var running: Running?
    private var hopsCarried = 0
    /// The exchange wants no more body for now (its task is suspended).
    private var readingPaused = false
    /// A read the pipeline asked for while paused.
    private var readPending = false
    /// Response parts decoded (from bytes read before the pause) while paused, delivered on resume.
    private var pausedParts = CircularBuffer<HTTPClientResponsePart>()
    /// The connection closed (nil error) or failed while parts were held: the hop fails after
    /// them unless they end it, so that every body byte that arrived reaches the exchange first.
    private var endedWhilePaused: Optional<(any Error)?> = .none
    private var idleSince: NIODeadline?
    private var idleCheck: Scheduled<Void>?
    /// The running hop's transaction metrics, filled in as it goes (kept apart from ``Running``,
    /// which is copied often).
    private var metrics: TransactionMetrics?
    /// Counts the body before the decompressor, when there is one.
    private let bodyCounter: ResponseBodyCounter?
    /// In stream mode: whether this is the connection's first stream (its transaction carries the
    /// connection's setup).
    private let firstStream: Bool
    /// The end of the wait for `100 Continue`, while a body is held back.
    private var continueDeadline: Scheduled<Void>?
    /// The server answered with HTTP/1.0: it knows no `Expect: 100-continue`.
    private var serverIsHTTP10 = false

    init(readWatcher: HTTP1ReadWatcher, bodyCounter: ResponseBodyCounter? = nil) {
        self.readWatcher = readWatcher
        self.bodyCounter = bodyCounter
        self.firstStream = false
    }

    /// A handler for one stream of `connection`.
    init(stream connection: HTTP2Connection, firstStream: Bool, bodyCounter: ResponseBodyCounter? = nil) {
        self.readWatcher = nil
        self.stream = connection
        self.bodyCounter = bodyCounter
        self.firstStream = firstStream
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

    func run(_ hop: HTTP1Hop) {
        guard let context, self.connection != nil || self.stream != nil, context.channel.isActive, self.running == nil else {
            // The connection closed (or is busy, which the pool never allows) before the hop
            // started: nothing was sent, so it goes to another connection, a few times at most.
            hop.restartElsewhere()
            return
        }
        if let cancellation = hop.cancellation {
            hop.end(.failure(cancellation))
            self.hopFinished(reusable: true)
            return
        }
        let request = hop.request
        let body = hop.body
        let generation = hop.exchange.sendGeneration
        self.idleSince = nil
        let closeRequested = request.headerFields[.connection]?.lowercased().contains("close") == true
        self.running = Running(hop: hop, isReused: self.hopsCarried > 0, closeRequested: closeRequested)
        var metrics = TransactionMetrics(request: request, fetchStart: hop.fetchStart)
        if let stream = self.stream {
            stream.establishment.apply(to: &metrics, firstTransaction: self.firstStream, channel: stream.channel)
        } else if let connection = self.connection {
            connection.establishment.apply(to: &metrics, firstTransaction: self.hopsCarried == 0, channel: connection.channel)
        }
        self.hopsCarried += 1
        self.readWatcher?.sawBytes = false
        self.readWatcher?.expectHead()
        self.bodyCounter?.bytes = 0
        var head = Self.head(for: request, key: hop.key, length: body.length)
        hop.key.route.adjust(&head, for: request.url)
        metrics.requestStart = .now
        metrics.countOfRequestHeaderBytesSent = Self.size(of: head)
        if self.bodyCounter != nil, !head.headers.contains(name: "Accept-Encoding") {
            // The decompressor adds `Accept-Encoding: deflate, gzip` on its way out.
            metrics.countOfRequestHeaderBytesSent += Int64("Accept-Encoding: deflate, gzip\r\n".utf8.count)
        }
        var hasBody = true
        if case .empty = body { hasBody = false }
        var expectation = hop.pool.settings.expectContinue.decision(
            for: head, hasBody: hasBody, length: body.length, serverIsHTTP10: self.serverIsHTTP10)
        if expectation != .sendAtOnce, hop.state.withLockedValue({ $0.withoutExpectation }) {
            // The server refused the expectation (417): this send goes without one.
            expectation = .sendAtOnce
            head.headers.remove(name: "Expect")
        }
        if expectation == .announce {
            head.headers.add(name: "Expect", value: "100-continue")
            metrics.countOfRequestHeaderBytesSent += Int64("Expect: 100-continue\r\n".utf8.count)
        }
        self.metrics = metrics
        let headWritten = context.eventLoop.makePromise(of: Void.self)
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        headWritten.futureResult.whenSuccess {
            guard let running = loopBound.value.running, running.hop === hop else { return }
            loopBound.value.running?.requestWritten = true
        }
        context.write(self.wrapOutboundOut(.head(head)), promise: headWritten)
        if expectation != .sendAtOnce {
            // The body waits for `100 Continue`, a final answer, or the end of the wait.
            context.flush()
            hop.exchange.requestHeadSent()
            self.running?.heldBody = (body, generation)
            self.continueDeadline = context.eventLoop.scheduleTask(in: hop.pool.settings.expectContinue.timeout) {
                loopBound.value.releaseHeldBody(of: hop)
            }
            return
        }
        self.sendBody(body, of: hop, generation: generation, context: context)
    }

    /// Sends the body held back for `100 Continue` (it came, or the wait ended).
    private func releaseHeldBody(of hop: HTTP1Hop) {
        self.continueDeadline?.cancel()
        self.continueDeadline = nil
        guard let running = self.running, running.hop === hop, let held = running.heldBody, let context else { return }
        self.running?.heldBody = nil
        self.sendBody(held.body, of: hop, generation: held.generation, context: context)
    }

    /// Writes the request's body and its end.
    private func sendBody(_ body: OutgoingBody, of hop: HTTP1Hop, generation: Int, context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        switch body {
        case .empty:
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
            self.running?.requestSent = true
            self.metrics?.requestEnd = .now
            hop.exchange.requestHeadSent()
        case .data(let data) where data.count <= Self.sliceLength:
            let buffer = ByteBuffer(data: data)
            context.write(self.wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
            self.running?.requestSent = true
            self.metrics?.requestEnd = .now
            self.metrics?.countOfRequestBodyBytesSent = Int64(buffer.readableBytes)
            hop.exchange.requestHeadSent()
            hop.exchange.hopSentBodyPart(Int64(buffer.readableBytes), generation: generation)
        case .data(let data):
            var buffer = ByteBuffer(data: data)
            // Upload progress follows the socket: each slice counts once it is written.
            hop.exchange.requestHeadSent()
            while let slice = buffer.readSlice(length: min(Self.sliceLength, buffer.readableBytes)), slice.readableBytes > 0 {
                let written = context.eventLoop.makePromise(of: Void.self)
                let exchange = hop.exchange
                written.futureResult.whenSuccess {
                    exchange.hopSentBodyPart(Int64(slice.readableBytes), generation: generation)
                    guard loopBound.value.running?.hop === hop else { return }
                    loopBound.value.metrics?.countOfRequestBodyBytesSent += Int64(slice.readableBytes)
                }
                context.write(self.wrapOutboundOut(.body(.byteBuffer(slice))), promise: written)
            }
            let ended = context.eventLoop.makePromise(of: Void.self)
            ended.futureResult.whenSuccess {
                guard loopBound.value.running?.hop === hop else { return }
                loopBound.value.metrics?.requestEnd = .now
            }
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: ended)
            self.running?.requestSent = true
        case .stream(let source, let length):
            context.flush()
            hop.exchange.requestHeadSent()
            self.running?.pump = self.streamBody(source, length: length, of: hop, generation: generation, channel: context.channel)
        }
    }

    func cancel(_ hop: HTTP1Hop) {
        guard let running = self.running, running.hop === hop else {
            // Not started yet (`run` checks the cancellation) or already ended.
            return
        }
        self.endRunning()
        self.pausedParts.removeAll()
        self.endedWhilePaused = .none
        hop.end(.failure(hop.cancellation ?? CourierError.cancelled))
        self.context?.close(promise: nil)
    }

    /// Sends a file or stream body chunk by chunk, each once the previous one was written.
    ///
    /// The pump is a task of its own (the stream is an `AsyncSequence`); ``endRunning()`` cancels
    /// it when the hop ends otherwise (cancelled, failed, its connection gone), which also ends a
    /// wait for a chunk that never comes.
    private func streamBody(
        _ source: RequestBody.Stream, length: RequestBody.Length, of hop: HTTP1Hop, generation: Int, channel: any Channel
    ) -> Task<Void, Never> {
        let request = hop.request
        let loopBound = NIOLoopBound(self, eventLoop: channel.eventLoop)
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
                    try await channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer(chunk))).get()
                    hop.exchange.hopSentBodyPart(Int64(chunk.readableBytes), generation: generation)
                }
                let total = sent
                channel.eventLoop.execute {
                    guard loopBound.value.running?.hop === hop else { return }
                    loopBound.value.metrics?.countOfRequestBodyBytesSent = total
                }
                // Cancelled by `endRunning()`: the hop is over; nothing more goes out.
                if Task.isCancelled { return }
                if case .known(let declared) = length, sent != declared {
                    throw ConnectionPoolError.bodyLengthMismatch(declared: declared, sent: sent)
                }
                try await channel.writeAndFlush(HTTPClientRequestPart.end(nil)).get()
                outcome = .success(())
            } catch where !(error is CourierError || error is ConnectionPoolError) && !channel.isActive {
                // A write failed because the connection closed: the read side reports why.
                return
            } catch {
                outcome = .failure(NIOExchange.bodyStreamFailure(error, request: request))
            }
            channel.eventLoop.execute { loopBound.value.bodyEnded(hop, outcome) }
        }
    }

    private func bodyEnded(_ hop: HTTP1Hop, _ outcome: Result<Void, any Error>) {
        guard var running = self.running, running.hop === hop else { return }
        switch outcome {
        case .success:
            running.requestSent = true
            self.running = running
            self.metrics?.requestEnd = .now
            if running.responseEnded { self.finishRunning(running) }
        case .failure(let error):
            // A server that answered early ended the upload: its response is the outcome.
            if running.responseEnded {
                self.finishRunning(running)
            } else if !running.responseStarted {
                self.failRunning(hop, error)
            }
        }
    }

    private func failRunning(_ hop: HTTP1Hop, _ error: any Error) {
        guard let running = self.running, running.hop === hop else { return }
        self.endRunning()
        hop.end(.failure(error))
        self.context?.close(promise: nil)
    }

    /// The running hop is over for this connection: its body pump, if any, stops, and its
    /// transaction's metrics go to the hop (before the caller ends it).
    private func endRunning() {
        // Moved out (not copied): the struct is large and is not needed here after.
        if let running = self.running, var metrics = self.metrics.take() {
            if let counter = self.bodyCounter {
                metrics.countOfResponseBodyBytesReceived = counter.bytes
            } else {
                metrics.countOfResponseBodyBytesReceived = metrics.countOfResponseBodyBytesAfterDecoding
            }
            running.hop.record(metrics)
        }
        self.metrics = nil
        self.running?.pump?.cancel()
        self.running = nil
        self.continueDeadline?.cancel()
        self.continueDeadline = nil
    }

    /// The hop ended: the connection goes back to the pool, or closes.
    private func hopFinished(reusable: Bool) {
        guard self.stream == nil else {
            // A stream carries one hop; closing one that both sides ended is a no-op, else a reset.
            self.context?.close(promise: nil)
            return
        }
        guard reusable, let connection, let context, context.channel.isActive else {
            self.context?.close(promise: nil)
            return
        }
        self.becameIdle()
        connection.reusableUntil = self.serverIdleTimeout.map { .now() + $0 }
        if !connection.pool.release(connection) {
            context.close(promise: nil)
        }
    }

    // MARK: Idle connections

    /// Starts the idle clock; one check per idle timeout at most is scheduled.
    func becameIdle() {
        self.idleSince = .now()
        guard self.idleCheck == nil, let context, let connection else { return }
        self.scheduleIdleCheck(in: connection.pool.settings.idleTimeout, context: context)
    }

    private func scheduleIdleCheck(in delay: TimeAmount, context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        self.idleCheck = context.eventLoop.scheduleTask(in: delay) {
            loopBound.value.checkIdle()
        }
    }

    private func checkIdle() {
        self.idleCheck = nil
        guard let idleSince = self.idleSince, let context, let connection else { return }
        let timeout = connection.pool.settings.idleTimeout
        let remaining = idleSince + timeout - .now()
        if remaining > .zero {
            self.scheduleIdleCheck(in: remaining, context: context)
        } else if connection.pool.removeIdle(connection) {
            context.close(promise: nil)
        }
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = self.unwrapInboundIn(data)
        if self.readingPaused || !self.pausedParts.isEmpty {
            self.pausedParts.append(part)
        } else {
            self.handle(part)
        }
    }

    /// Hands a response part to the running hop. Parts held during a pause come here after the
    /// resume, possibly once the connection has closed.
    private func handle(_ part: HTTPClientResponsePart) {
        switch part {
        case .head(let head):
            guard var running = self.running else {
                self.context?.close(promise: nil)
                return
            }
            // 1xx answers other than 101 precede the real response; `100 Continue` lets a body
            // held back for it go.
            if head.status.code >= 100, head.status.code < 200, head.status.code != 101 {
                if head.status.code == 100, running.heldBody != nil { self.releaseHeldBody(of: running.hop) }
                return
            }
            if running.heldBody != nil {
                // A final answer instead of `100 Continue`: the body is not sent (RFC 9110 10.1.1).
                running.heldBody = nil
                running.bodyWithheld = true
                self.continueDeadline?.cancel()
                self.continueDeadline = nil
                if head.status.code == 417, running.hop.request.body.isReplayable,
                    running.hop.state.withLockedValue({ !$0.withoutExpectation && $0.resends < HTTP1ResendRule.maximumResends })
                {
                    // Refused because of the expectation: the request is repeated without it
                    // (RFC 9110 section 10.1.1), on another connection, once this answer ends.
                    running.repeatWithoutExpectation = true
                    running.responseStarted = true
                    running.status = 417
                    running.keepAlive = false
                    self.running = running
                    return
                }
            }
            if head.version == .http1_0, self.stream == nil { self.serverIsHTTP10 = true }
            if head.status.code == 407, case .forward(let proxy) = running.hop.key.route {
                // The forwarding proxy, not the origin, refused: a typed error that names it.
                let credentials = proxy.username.map { "the credentials for user '\($0)' were refused" } ?? "none were configured"
                let error = CourierError(
                    .proxyAuthenticationRequired,
                    "\(proxy.displayName) wants authentication to forward \(running.hop.request.summary) (407 \(head.status.reasonPhrase)): \(credentials)",
                    request: running.hop.request, response: HTTPResponse(nioHead: head))
                self.failRunning(running.hop, error)
                return
            }
            running.responseStarted = true
            running.status = Int(head.status.code)
            running.keepAlive = head.isKeepAlive
            self.running = running
            if let keepAlive = head.headers.first(name: "keep-alive") {
                self.serverIdleTimeout = Self.idleTimeout(fromKeepAlive: keepAlive)
            }
            let networkProtocol = self.stream != nil ? "h2" : (head.version == .http1_0 ? "http/1.0" : "http/1.1")
            let response = HTTPResponse(nioHead: head)
            self.metrics?.responseStart = .now
            self.metrics?.networkProtocolName = networkProtocol
            self.metrics?.countOfResponseHeaderBytesReceived = Self.size(of: head)
            self.metrics?.response = response
            running.hop.exchange.hopReceivedHead(response, over: networkProtocol)
        case .body(let buffer):
            guard let running = self.running, let eventLoop = self.eventLoop else { return }
            self.metrics?.countOfResponseBodyBytesAfterDecoding += Int64(buffer.readableBytes)
            // The body of a 417 that the request is repeated after is nobody's.
            if running.repeatWithoutExpectation { return }
            if let wait = running.hop.exchange.hopReceivedBodyPart(buffer, on: eventLoop) {
                self.readingPaused = true
                let loopBound = NIOLoopBound(self, eventLoop: eventLoop)
                wait.whenComplete { _ in loopBound.value.resumeReading() }
            }
        case .end(let trailers):
            guard var running = self.running else { return }
            self.metrics?.responseEnd = .now
            if running.repeatWithoutExpectation {
                let hop = running.hop
                self.endRunning()
                self.hopFinished(reusable: false)
                hop.state.withLockedValue { $0.withoutExpectation = true }
                hop.pool.resend(hop)
                return
            }
            if let trailers, !trailers.isEmpty {
                // Chunked trailers (HTTP/1.1) or trailing HEADERS (HTTP/2), before the end.
                running.hop.exchange.hopReceivedTrailers(HTTPFields(nioHeaders: trailers))
            }
            if !running.requestSent, !running.bodyWithheld, running.status < 300 {
                // The server answered before the upload ended and may still read it: let it finish.
                running.responseEnded = true
                self.running = running
                return
            }
            self.finishRunning(running)
        }
    }

    /// The hop's response is complete (and its request sent, or abandoned): the hop ends well.
    private func finishRunning(_ running: Running) {
        self.endRunning()
        self.hopFinished(reusable: running.keepAlive && running.requestSent && !running.closeRequested)
        running.hop.end(.success(()))
    }

    private func resumeReading() {
        self.readingPaused = false
        while !self.readingPaused, let part = self.pausedParts.popFirst() {
            self.handle(part)
        }
        guard !self.readingPaused else { return }
        if case .some(let error) = self.endedWhilePaused {
            self.endedWhilePaused = .none
            self.connectionEndedUnderHop(error: error)
        } else if self.readPending, let context {
            self.readPending = false
            context.read()
        }
    }

    func read(context: ChannelHandlerContext) {
        if self.readingPaused {
            self.readPending = true
        } else {
            context.read()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A TLS peer closed the socket without close_notify: the connection is already going
        // inactive, and a body delimited by the close is complete; `channelInactive` decides.
        if let error = error as? NIOSSLError, error == .uncleanShutdown { return }
        if self.readingPaused || !self.pausedParts.isEmpty {
            // Body parts that arrived before the failure are held for a suspended task: the hop
            // fails after they are delivered (the first reason is kept).
            if case .none = self.endedWhilePaused { self.endedWhilePaused = .some(error) }
        } else {
            self.connectionEndedUnderHop(error: error)
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.idleCheck?.cancel()
        self.idleCheck = nil
        if self.readingPaused || !self.pausedParts.isEmpty {
            // The held parts may end the response; the hop fails only if they do not.
            if case .none = self.endedWhilePaused { self.endedWhilePaused = .some(nil) }
        } else {
            self.connectionEndedUnderHop(error: nil)
        }
        context.fireChannelInactive()
    }

    /// The connection closed (`error` nil) or failed with a hop under way: the hop fails, or goes
    /// again on another connection as ``HTTP1ResendRule`` allows.
    private func connectionEndedUnderHop(error: (any Error)?) {
        guard let running = self.running else { return }
        // A stream closed without a reason of its own: its connection's error, if it failed.
        let error = error ?? self.stream?.connectionError
        if running.responseEnded {
            // The whole response came; the rest of the upload had nowhere to go.
            self.finishRunning(running)
            return
        }
        self.endRunning()
        let hop = running.hop
        let (resends, cancelled) = hop.state.withLockedValue { ($0.resends, $0.cancellation != nil) }
        let rule = HTTP1ResendRule(
            method: hop.request.method,
            bodyIsReplayable: hop.request.body.isReplayable,
            connectionWasReused: running.isReused,
            requestWritten: running.requestWritten,
            responseBytesSeen: running.responseStarted || self.readWatcher?.sawBytes == true,
            closure: error.map(self.closure(for:)) ?? .closed,
            resends: resends,
            isCancelled: cancelled)
        if rule.allowsResend {
            hop.pool.resend(hop)
        } else if resends >= HTTP1ResendRule.maximumResends, !rule.responseBytesSeen, rule.closure == .closed || rule.closure == .reset {
            // Sent again as often as allowed, and closed each time before any answer.
            hop.end(.failure(ConnectionPoolError.closedBeforeAnswering(attempts: resends + 1)))
        } else {
            hop.end(.failure(error ?? ConnectionPoolError.closedBeforeResponseComplete))
        }
    }

    /// What an error on the connection (or stream) says about how it ended.
    private func closure(for error: any Error) -> HTTP1ResendRule.Closure {
        if let closed = error as? NIOHTTP2Errors.StreamClosed, let stream = self.stream {
            // REFUSED_STREAM, or dropped by a GOAWAY naming an earlier stream (RFC 9113 8.7).
            let refused = closed.errorCode == .refusedStream || (closed.errorCode == .cancel && stream.wasNotProcessed(closed.streamID))
            return refused ? .notProcessed : .failed
        }
        if let error = error as? IOError, [ECONNRESET, EPIPE].contains(error.errnoCode) { return .reset }
        if let error = error as? ChannelError, error == .eof || error == .ioOnClosedChannel || error == .alreadyClosed { return .closed }
        return .failed
    }

    /// The idle time a `Keep-Alive` header promises (`timeout=5, max=100`), less a second for the
    /// request to reach the server before it closes; nil when it names none.
    static func idleTimeout(fromKeepAlive value: String) -> TimeAmount? {
        for parameter in value.split(separator: ",") {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == "timeout", let seconds = Int64(pair[1]), seconds >= 0 else { continue }
            return .seconds(max(seconds - 1, 0))
        }
        return nil
    }

    // MARK: Heads

    /// The size of a request head as HTTP/1.1 text: request line, fields, blank line.
    static func size(of head: HTTPRequestHead) -> Int64 {
        // "METHOD SP target SP HTTP/1.1 CRLF" ... "CRLF"
        var size = head.method.rawValue.utf8.count + 1 + head.uri.utf8.count + 1 + 8 + 2 + 2
        for (name, value) in head.headers { size += name.utf8.count + 2 + value.utf8.count + 2 }
        return Int64(size)
    }

    /// The size of a response head as HTTP/1.1 text: status line, fields, blank line.
    static func size(of head: HTTPResponseHead) -> Int64 {
        // "HTTP/1.1 SP 200 SP reason CRLF" ... "CRLF"
        var size = 8 + 1 + 3 + 1 + head.status.reasonPhrase.utf8.count + 2 + 2
        for (name, value) in head.headers { size += name.utf8.count + 2 + value.utf8.count + 2 }
        return Int64(size)
    }

    /// The request head: origin-form target, `Host`, and the body's framing, as AHC writes them.
    static func head(for request: Request, key: ConnectionPool.Key, length: RequestBody.Length) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count + 2)
        var hasHost = false
        for field in request.headerFields {
            switch field.name {
            case .contentLength, .transferEncoding: continue
            default: if field.name.canonicalName == "host" { hasHost = true }
            }
            headers.add(name: field.name.rawName, value: field.value)
        }
        if !hasHost {
            let host = key.host.contains(":") ? "[\(key.host)]" : key.host
            headers.add(name: "Host", value: key.port == key.defaultPort ? host : "\(host):\(key.port)")
        }
        switch length {
        case .known(0):
            // No Content-Length where the method gives a body no meaning (RFC 9110 8.6).
            switch request.method {
            case .get, .head, .delete, .connect, .trace: break
            default: headers.add(name: "Content-Length", value: "0")
            }
        case .known(let length):
            headers.add(name: "Content-Length", value: String(length))
        case .unknown:
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        var target = request.url.path(percentEncoded: true)
        if target.isEmpty { target = "/" }
        if let query = request.url.query(percentEncoded: true) {
            target += "?" + query
        }
        return HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue), uri: target, headers: headers)
    }
}
