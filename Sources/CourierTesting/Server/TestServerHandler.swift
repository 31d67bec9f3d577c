import Foundation
import HTTPTypes
import NIOFoundationCompat
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// Serves one HTTP/1.1 connection or one HTTP/2 stream (behind `HTTP2FramePayloadToHTTP1ServerCodec`).
///
/// It gathers a request, answers it from a custom route (on a task, then back on the event loop)
/// or from the built-in routes (synchronously, no task), and writes the ``Reply``. A request for
/// the upload sink (`/courier/upload`, unless a custom route claims it) is not gathered: its body
/// is folded into an ``UploadSink`` as it arrives. On HTTP/1.1 the `HTTPServerPipelineHandler` in
/// front of it holds pipelined requests back until a response ends.
final class TestServerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: ServerState
    private let scheme: String
    private var context: ChannelHandlerContext?
    private var inbound = Inbound.idle
    /// Timers of a paced, delayed or streamed reply, cancelled when the channel goes away.
    private var timers: [Scheduled<Void>] = []
    /// The wait of a `.held` reply for its release, cancelled when the channel goes away.
    private var heldBody: Task<Void, Never>?
    /// The body of a `.streamed` reply being written, as the channel becomes writable.
    private var streaming: (body: StreamedBody, keepAlive: Bool)?
    /// Whether the streamed body waits for the channel to become writable (counted in the state).
    private var waitsForWritability = false
    /// Whether `pump(context:)` is running (it is not re-entered).
    private var isPumping = false
    private var isActive = true
    private var cachedAddresses: (origin: String, authority: String)?
    /// Requests answered or being answered on this connection (HTTP/1.1) or stream (HTTP/2).
    private var requestsSeen = 0

    init(state: ServerState, scheme: String) {
        self.state = state
        self.scheme = scheme
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.stop()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.stop()
        context.fireChannelInactive()
    }

    private func stop() {
        self.isActive = false
        self.streaming = nil
        self.setWaitsForWritability(false)
        for timer in self.timers { timer.cancel() }
        self.timers.removeAll()
        self.heldBody?.cancel()
        self.heldBody = nil
    }

    /// Where the request being received stands.
    private enum Inbound {
        /// Between requests.
        case idle
        /// Gathering the body for a route that needs it whole.
        case buffering(HTTPRequestHead, ByteBuffer)
        /// Folding the body into an upload sink as it arrives, keeping none of it.
        case sinking(HTTPRequestHead, UploadSink)
        /// Sending each piece of the body back as it arrives (`/courier/echo-stream`), the
        /// response begun when the head came; the request log records it without its body.
        case echoing(HTTPRequestHead)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            if Self.path(of: head) == "/courier/refuse-upload" {
                self.refuseUpload(head, context: context)
                return
            }
            let echoes = self.isBuiltIn(head, path: "/courier/echo-stream")
            self.inbound =
                echoes ? .echoing(head) : self.isBuiltIn(head, path: UploadSink.path) ? .sinking(head, UploadSink()) : .buffering(head, ByteBuffer())
            if head.version == .http1_1 || head.version.major >= 2,
                head.headers[canonicalForm: "Expect"].contains(where: { $0.lowercased() == "100-continue" })
            {
                context.writeAndFlush(self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
            }
            if echoes {
                let contentType = head.headers.first(name: "Content-Type") ?? "application/octet-stream"
                self.writeHead(.ok, ["Content-Type": contentType], keepAlive: head.version.major >= 2 || head.isKeepAlive, context: context)
                context.flush()
            }
        case .body(var chunk):
            switch self.inbound {
            case .idle:
                break
            case .buffering(let head, var body):
                self.inbound = .idle  // let go of the enum's reference so that the append does not copy
                body.writeBuffer(&chunk)
                self.inbound = .buffering(head, body)
            case .sinking(let head, var sink):
                sink.consume(chunk)
                self.inbound = .sinking(head, sink)
            case .echoing:
                context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(chunk))), promise: nil)
            }
        case .end(let trailers):
            let inbound = self.inbound
            self.inbound = .idle
            switch inbound {
            case .idle:
                return
            case .buffering(let head, let body):
                self.respond(to: head, body: body, trailers: trailers, context: context)
            case .sinking(let head, let sink):
                var request = self.incomingRequest(head, body: ByteBuffer(), context: context)
                request.trailers = trailers
                self.state.didReceive(request.publicRequest, version: IncomingRequest.name(of: head.version))
                self.write(sink.reply(to: request), for: head, context: context)
            case .echoing(let head):
                var request = self.incomingRequest(head, body: ByteBuffer(), context: context)
                request.trailers = trailers
                self.state.didReceive(request.publicRequest, version: IncomingRequest.name(of: head.version))
                self.writeEnd(keepAlive: head.version.major >= 2 || head.isKeepAlive, context: context)
            }
        }
    }

    /// The path of `head`'s target, without its query.
    private static func path(of head: HTTPRequestHead) -> Substring {
        let uri = head.uri[...]
        return uri.firstIndex(of: "?").map { uri[..<$0] } ?? uri
    }

    /// `/courier/refuse-upload`: answers 413 as soon as the head is in, never `100 Continue`
    /// (with `?after-continue=1`, right after a `100 Continue` to a request that expects one, in
    /// the same write, as Node's and gunicorn's servers do), and drops whatever body follows; an
    /// HTTP/1 connection closes after the answer.
    private func refuseUpload(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        self.inbound = .idle
        let request = self.incomingRequest(head, body: ByteBuffer(), context: context)
        self.state.didReceive(request.publicRequest, version: IncomingRequest.name(of: head.version))
        if head.uri.contains("after-continue=1"),
            head.headers[canonicalForm: "Expect"].contains(where: { $0.lowercased() == "100-continue" })
        {
            context.write(self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
        }
        let body = ByteBuffer(string: "<h1>Payload Too Large</h1>\n")
        let keepAlive = head.version.major >= 2
        self.writeHead(.payloadTooLarge, ["Content-Type": "text/html; charset=utf-8", "Content-Length": String(body.readableBytes)], keepAlive: keepAlive, context: context)
        context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        self.writeEnd(keepAlive: keepAlive, context: context)
    }

    /// Whether `head` asks for the built-in route at `path` (the upload sink, the streamed
    /// echo) and no custom route claims it.
    private func isBuiltIn(_ head: HTTPRequestHead, path builtIn: String) -> Bool {
        let path = Self.path(of: head)
        guard path == builtIn else { return false }
        if case .none = self.state.route(path: path, method: head.method.rawValue) { return true }
        return false
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A WebSocket upgrade the routes refused (``WebSocketRoute``): swift-nio's upgrader says so
        // with this error, and the request goes on to the ordinary routes, which answer it.
        if let error = error as? NIOWebSocketUpgradeError, error == .unsupportedWebSocketTarget { return }
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            self.setWaitsForWritability(false)
            self.pump(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    /// Records in the server's state whether the streamed body is held back by its peer.
    private func setWaitsForWritability(_ waits: Bool) {
        guard waits != self.waitsForWritability else { return }
        self.waitsForWritability = waits
        self.state.streamedBodyWaits(waits)
    }

    // MARK: Answering

    private func incomingRequest(_ head: HTTPRequestHead, body: ByteBuffer, context: ChannelHandlerContext) -> IncomingRequest {
        let addresses = self.addresses(context)
        var request = IncomingRequest(head: head, body: body, scheme: self.scheme, origin: addresses.origin, defaultAuthority: addresses.authority)
        request.earlierRequestsOnConnection = self.requestsSeen
        self.requestsSeen += 1
        return request
    }

    private func respond(to head: HTTPRequestHead, body: ByteBuffer, trailers: HTTPHeaders?, context: ChannelHandlerContext) {
        var request = self.incomingRequest(head, body: body, context: context)
        request.trailers = trailers
        self.state.didReceive(request.publicRequest, version: IncomingRequest.name(of: head.version))

        switch self.state.route(path: request.path, method: head.method.rawValue) {
        case .none:
            self.write(HTTPBinRoutes.reply(to: request), for: head, context: context)
        case .wrongMethod(let allowed):
            self.write(.methodNotAllowed(allowed), for: head, context: context)
        case .handler(let handler):
            let publicRequest = request.publicRequest
            let loop = context.eventLoop
            let bound = NIOLoopBound(self, eventLoop: loop)
            Task {
                let reply: Reply
                do {
                    reply = Reply(try await handler(publicRequest))
                } catch {
                    reply = .text("\(error)\n", status: .internalServerError)
                }
                loop.execute {
                    let handler = bound.value
                    guard handler.isActive, let context = handler.context else { return }
                    handler.write(reply, for: head, context: context)
                }
            }
        }
    }

    /// The peer's address and ours, looked up once per connection or stream.
    private func addresses(_ context: ChannelHandlerContext) -> (origin: String, authority: String) {
        if let addresses = self.cachedAddresses { return addresses }
        let connection = context.channel.parent ?? context.channel
        let local = connection.localAddress
        let addresses = (
            origin: connection.remoteAddress?.ipAddress ?? "127.0.0.1",
            authority: local.map { address in
                let ip = address.ipAddress ?? "127.0.0.1"
                return "\(ip.contains(":") ? "[\(ip)]" : ip):\(address.port ?? 0)"
            } ?? "localhost"
        )
        self.cachedAddresses = addresses
        return addresses
    }

    private func write(_ reply: Reply, for request: HTTPRequestHead, context: ChannelHandlerContext) {
        // HTTP/2 streams end with the response; only HTTP/1 connections may need closing.
        let keepAlive = request.version.major >= 2 || request.isKeepAlive
        let isHead = request.method == .HEAD
        switch reply {
        case .complete(let status, var headers, let body):
            headers.replaceOrAdd(name: "Content-Length", value: String(body.readableBytes))
            self.writeHead(status, headers, keepAlive: keepAlive, context: context)
            if !isHead, body.readableBytes > 0 { context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
            self.writeEnd(keepAlive: keepAlive, context: context)

        case .paced(let status, let headers, let chunks, let interval, let ending):
            let keepAlive = keepAlive && !(ending == .completeThenClose && request.version.major < 2)
            self.writeHead(status, headers, keepAlive: keepAlive, context: context)
            context.flush()
            self.writePaced(isHead ? [] : chunks[...], interval: interval, ending: isHead ? .complete : ending, keepAlive: keepAlive, context: context)

        case .streamed(let status, let headers, let body):
            let keepAlive = keepAlive && !(body.ending == .completeThenClose && request.version.major < 2)
            self.writeHead(status, headers, keepAlive: keepAlive, context: context)
            if isHead {
                self.writeEnd(keepAlive: keepAlive, context: context)
            } else {
                self.streaming = (body, keepAlive)
                self.pump(context: context)
            }

        case .delayed(let delay, let reply):
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            self.timers.append(context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
                let handler = bound.value
                guard handler.isActive, let context = handler.context else { return }
                handler.write(reply, for: request, context: context)
            })

        case .held(let status, var headers, var body, let sentFirst, let release):
            headers.replaceOrAdd(name: "Content-Length", value: String(body.readableBytes))
            self.writeHead(status, headers, keepAlive: keepAlive, context: context)
            if !isHead, let first = body.readSlice(length: min(sentFirst, body.readableBytes)), first.readableBytes > 0 {
                context.write(self.wrapOutboundOut(.body(.byteBuffer(first))), promise: nil)
            }
            context.flush()
            guard !isHead else {
                self.writeEnd(keepAlive: keepAlive, context: context)
                return
            }
            let loop = context.eventLoop
            let bound = NIOLoopBound(self, eventLoop: loop)
            let rest = body
            // Waits for the test's release; `stop()` cancels it when the channel goes first.
            self.heldBody = Task {
                await release()
                loop.execute {
                    let handler = bound.value
                    handler.heldBody = nil
                    guard handler.isActive, let context = handler.context else { return }
                    if rest.readableBytes > 0 { context.write(handler.wrapOutboundOut(.body(.byteBuffer(rest))), promise: nil) }
                    handler.writeEnd(keepAlive: keepAlive, context: context)
                }
            }

        case .reset:
            context.close(promise: nil)

        case .headThenClose(let status, let headers):
            self.writeHead(status, headers, keepAlive: false, context: context)
            context.flush()
            context.close(promise: nil)

        case .trailed(let status, let headers, let body, let trailers):
            self.writeHead(status, headers, keepAlive: keepAlive, context: context)
            if !isHead { context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
            let written = context.writeAndFlush(self.wrapOutboundOut(.end(isHead ? nil : trailers)))
            if !keepAlive { written.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }

        case .truncated(let status, let headers, let body):
            self.writeHead(status, headers, keepAlive: false, context: context)
            context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(body)))).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        }
    }

    private func writeHead(_ status: HTTPResponseStatus, _ headers: HTTPHeaders, keepAlive: Bool, context: ChannelHandlerContext) {
        var headers = headers
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
        context.write(self.wrapOutboundOut(.head(head)), promise: nil)
    }

    private func writeEnd(keepAlive: Bool, context: ChannelHandlerContext) {
        let written = context.writeAndFlush(self.wrapOutboundOut(.end(nil)))
        if !keepAlive {
            written.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    /// Ends a paced or streamed response as `ending` says.
    private func finish(_ ending: ReplyEnding, keepAlive: Bool, context: ChannelHandlerContext) {
        switch ending {
        case .complete, .completeThenClose:
            // `keepAlive` is already false when an HTTP/1 connection is to close.
            self.writeEnd(keepAlive: keepAlive, context: context)
        case .drop:
            // The empty write completes after every earlier one: only then close, so that no
            // promised byte is lost.
            context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer())))).assumeIsolated().whenComplete { _ in
                context.close(promise: nil)
            }
        }
    }

    private func writePaced(_ chunks: ArraySlice<ByteBuffer>, interval: TimeAmount, ending: ReplyEnding, keepAlive: Bool, context: ChannelHandlerContext) {
        if interval == .zero {
            for chunk in chunks { context.write(self.wrapOutboundOut(.body(.byteBuffer(chunk))), promise: nil) }
            self.finish(ending, keepAlive: keepAlive, context: context)
            return
        }
        guard let first = chunks.first else {
            self.finish(ending, keepAlive: keepAlive, context: context)
            return
        }
        context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(first))), promise: nil)
        let rest = chunks.dropFirst()
        if rest.isEmpty {
            self.finish(ending, keepAlive: keepAlive, context: context)
            return
        }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        self.timers.removeAll()  // the earlier timers have fired
        self.timers.append(context.eventLoop.assumeIsolated().scheduleTask(in: interval) {
            let handler = bound.value
            guard handler.isActive, let context = handler.context else { return }
            handler.writePaced(rest, interval: interval, ending: ending, keepAlive: keepAlive, context: context)
        })
    }

    /// Writes the streamed body while the channel is writable (and its pace allows), then ends
    /// the response.
    private func pump(context: ChannelHandlerContext) {
        // A flush below can bring a writability event, which calls this again: the loop that is
        // already running carries on instead, so that the stack stays flat.
        guard !self.isPumping else { return }
        self.isPumping = true
        defer { self.isPumping = false }
        while let (current, keepAlive) = self.streaming {
            guard context.channel.isActive else {
                // The peer went away (an HTTP/2 stream reset): every further write would fail.
                self.streaming = nil
                self.setWaitsForWritability(false)
                return
            }
            var body = current
            let action = body.next(isWritable: context.channel.isWritable, allocator: context.channel.allocator)
            self.streaming = (body, keepAlive)
            switch action {
            case .write(let chunk):
                let size = chunk.readableBytes
                let state = self.state
                // Flushed chunk by chunk: a TLS handler holds unflushed writes without making the
                // channel unwritable, so writing until unwritable would buffer the whole body.
                context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(chunk)))).whenSuccess { state.streamedBodyWrote(size) }
            case .waitForWritable:
                // Cleared by the writability event that the peer reading brings, or at once when
                // the flush made room.
                self.setWaitsForWritability(true)
                context.flush()
                if context.channel.isWritable {
                    self.setWaitsForWritability(false)
                    continue
                }
                return
            case .waitForTick:
                context.flush()
                return
            case .scheduleTick:
                context.flush()
                let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
                self.timers.removeAll()  // the earlier ticks have fired
                self.timers.append(context.eventLoop.assumeIsolated().scheduleTask(in: StreamedBody.tick) {
                    let handler = bound.value
                    guard handler.isActive, let context = handler.context else { return }
                    handler.streaming?.body.tickElapsed()
                    handler.pump(context: context)
                })
                return
            case .finish(let ending):
                self.streaming = nil
                self.setWaitsForWritability(false)
                self.finish(ending, keepAlive: keepAlive, context: context)
                return
            }
        }
    }
}

/// The pattern `/courier/big/{n}` repeats: 64 KiB of `0123456789abcdef…`, made once and sliced.
enum GeneratedBytes {
    static let chunk: ByteBuffer = {
        let pattern = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/".utf8)
        var buffer = ByteBuffer()
        buffer.reserveCapacity(65_536)
        for index in 0..<65_536 { buffer.writeInteger(pattern[index % pattern.count]) }
        return buffer
    }()
}

extension Reply {
    /// A custom route's response as a reply.
    init(_ response: TestServer.Response) {
        var headers = HTTPHeaders()
        for field in response.headerFields { headers.add(name: field.name.rawName, value: field.value) }
        // NIO's `init(statusCode:reasonPhrase:)` drops the phrase of a code it knows: a route's own
        // phrase (`200 A-OK`) goes out as a custom status; none (`Status(code: 200)`) as NIO's.
        let standard = HTTPResponseStatus(statusCode: response.status.code)
        let status = response.status.reasonPhrase.isEmpty || standard.reasonPhrase == response.status.reasonPhrase
            ? standard : HTTPResponseStatus.custom(code: UInt(response.status.code), reasonPhrase: response.status.reasonPhrase)
        if let release = response.bodyHeldUntil {
            self = .held(status, headers, ByteBuffer(data: response.body), sentFirst: response.bytesSentBeforeHold, release: release)
        } else {
            self = .complete(status, headers, ByteBuffer(data: response.body))
        }
    }
}
