import Foundation
import HTTPTypes
import NIOFoundationCompat
import NIOCore
import NIOHTTP1

/// Serves one HTTP/1.1 connection or one HTTP/2 stream (behind `HTTP2FramePayloadToHTTP1ServerCodec`).
///
/// It gathers a request, answers it from a custom route (on a task, then back on the event loop)
/// or from the built-in routes (synchronously, no task), and writes the ``Reply``. On HTTP/1.1 the
/// `HTTPServerPipelineHandler` in front of it holds pipelined requests back until a response ends.
final class TestServerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: ServerState
    private let scheme: String
    private var context: ChannelHandlerContext?
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()
    /// Timers of a paced or delayed reply, cancelled when the channel goes away.
    private var timers: [Scheduled<Void>] = []
    /// Bytes still to generate for a `.generated` reply, written as the channel becomes writable.
    private var generating: (remaining: Int, keepAlive: Bool)?
    private var isActive = true
    private var cachedAddresses: (origin: String, authority: String)?

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
        self.generating = nil
        for timer in self.timers { timer.cancel() }
        self.timers.removeAll()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            self.body.clear()
        case .body(var chunk):
            self.body.writeBuffer(&chunk)
        case .end:
            guard let head = self.head else { return }
            self.head = nil
            self.respond(to: head, context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { self.generate(context: context) }
        context.fireChannelWritabilityChanged()
    }

    // MARK: Answering

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let addresses = self.addresses(context)
        let request = IncomingRequest(
            head: head,
            body: self.body,
            scheme: self.scheme,
            origin: addresses.origin,
            defaultAuthority: addresses.authority
        )
        self.body = ByteBuffer()
        self.state.didReceive(request.publicRequest)

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

        case .paced(let status, let headers, let chunks, let interval):
            self.writeHead(status, headers, keepAlive: keepAlive, context: context)
            context.flush()
            self.writePaced(isHead ? [] : chunks[...], interval: interval, keepAlive: keepAlive, context: context)

        case .generated(let status, var headers, let total):
            headers.replaceOrAdd(name: "Content-Length", value: String(total))
            self.writeHead(status, headers, keepAlive: keepAlive, context: context)
            self.generating = (isHead ? 0 : total, keepAlive)
            self.generate(context: context)

        case .delayed(let delay, let reply):
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            self.timers.append(context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
                let handler = bound.value
                guard handler.isActive, let context = handler.context else { return }
                handler.write(reply, for: request, context: context)
            })

        case .reset:
            context.close(promise: nil)

        case .headThenClose(let status, let headers):
            self.writeHead(status, headers, keepAlive: false, context: context)
            context.flush()
            context.close(promise: nil)

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

    private func writePaced(_ chunks: ArraySlice<ByteBuffer>, interval: TimeAmount, keepAlive: Bool, context: ChannelHandlerContext) {
        if interval == .zero {
            for chunk in chunks { context.write(self.wrapOutboundOut(.body(.byteBuffer(chunk))), promise: nil) }
            self.writeEnd(keepAlive: keepAlive, context: context)
            return
        }
        guard let first = chunks.first else {
            self.writeEnd(keepAlive: keepAlive, context: context)
            return
        }
        context.writeAndFlush(self.wrapOutboundOut(.body(.byteBuffer(first))), promise: nil)
        let rest = chunks.dropFirst()
        if rest.isEmpty {
            self.writeEnd(keepAlive: keepAlive, context: context)
            return
        }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        self.timers.removeAll()  // the earlier timers have fired
        self.timers.append(context.eventLoop.assumeIsolated().scheduleTask(in: interval) {
            let handler = bound.value
            guard handler.isActive, let context = handler.context else { return }
            handler.writePaced(rest, interval: interval, keepAlive: keepAlive, context: context)
        })
    }

    /// Writes generated bytes while the channel is writable, then ends the response.
    private func generate(context: ChannelHandlerContext) {
        while let (remainingBytes, keepAlive) = self.generating {
            var remaining = remainingBytes
            if remaining == 0 {
                self.generating = nil
                self.writeEnd(keepAlive: keepAlive, context: context)
                return
            }
            guard context.channel.isWritable else {
                context.flush()
                return
            }
            let size = min(remaining, GeneratedBytes.chunk.readableBytes)
            context.write(self.wrapOutboundOut(.body(.byteBuffer(GeneratedBytes.chunk.getSlice(at: 0, length: size)!))), promise: nil)
            remaining -= size
            self.generating = (remaining, keepAlive)
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
        self = .complete(HTTPResponseStatus(statusCode: response.status.code, reasonPhrase: response.status.reasonPhrase), headers, ByteBuffer(data: response.body))
    }
}
