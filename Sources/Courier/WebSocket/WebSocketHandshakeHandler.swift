import Foundation
import NIOCore
import NIOHTTP1

/// Sends the opening handshake's GET on a connection just made (TCP, a proxy's tunnel, TLS) and
/// reads the answer's head; ``WebSocketHandshake`` checks it. On a 101 that passes, `completion`
/// succeeds on the loop, and the caller adds the WebSocket handlers after this one and removes
/// it: the bytes that came after the head (frames sent with the 101) then go on to them.
/// Otherwise `completion` fails and the connection closes.
///
/// It writes and reads the head itself rather than through swift-nio's HTTP codec: the response
/// decoder also watches outbound writes, so while it is being removed a close frame written in
/// answer to the first frame would reach it as a request part.
final class WebSocketHandshakeHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The largest response head taken, its blank line included.
    static let maximumHeadSize = 64 * 1024
    /// The most interim (1xx) heads taken before the answer to the upgrade: Go's net/http's bound
    /// ("too many 1xx informational responses" past 5). Without one, a server sending
    /// `100 Continue` heads without end kept the handshake waiting until its timeout.
    static let maximumInterimHeads = 5

    private let head: HTTPRequestHead
    private let handshake: WebSocketHandshake
    private var completion: EventLoopPromise<HTTPResponseHead>?
    private var received = ByteBuffer()
    /// Where the next look for the head's end starts in `received` (``parseHead(_:searchFrom:maximumSize:)``).
    private var searchFrom = 0
    private var response: HTTPResponseHead?
    /// How many interim (1xx) heads came before the answer.
    private var interimHeads = 0
    private var sent = false
    private let makeError: @Sendable (String, HTTPResponseHead?, (any Error)?) -> any Error

    init(
        head: HTTPRequestHead,
        handshake: WebSocketHandshake,
        completion: EventLoopPromise<HTTPResponseHead>,
        makeError: @escaping @Sendable (String, HTTPResponseHead?, (any Error)?) -> any Error
    ) {
        self.head = head
        self.handshake = handshake
        self.completion = completion
        self.makeError = makeError
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { self.sendRequest(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // What came after the 101's head is the WebSocket's.
        if self.response != nil, self.received.readableBytes > 0 {
            let rest = self.received
            self.received = ByteBuffer()
            context.fireChannelRead(self.wrapInboundOut(rest))
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        self.sendRequest(context: context)
        context.fireChannelActive()
    }

    private func sendRequest(context: ChannelHandlerContext) {
        guard !self.sent else { return }
        self.sent = true
        context.writeAndFlush(self.wrapOutboundOut(Self.serialize(self.head, allocator: context.channel.allocator)), promise: nil)
    }

    /// The request head as HTTP/1.1 text.
    static func serialize(_ head: HTTPRequestHead, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 256)
        buffer.writeString("\(head.method.rawValue) \(head.uri) HTTP/1.1\r\n")
        for (name, value) in head.headers {
            buffer.writeString(name)
            buffer.writeString(": ")
            buffer.writeString(value)
            buffer.writeString("\r\n")
        }
        buffer.writeString("\r\n")
        return buffer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = self.unwrapInboundIn(data)
        self.received.writeBuffer(&bytes)
        // The heads in what came, one after the other: a loop, not a call for each interim head
        // (a read of 64 KiB of `100 Continue` heads nested 2,600 calls deep).
        while self.response == nil, self.completion != nil {
            switch Self.parseHead(&self.received, searchFrom: &self.searchFrom) {
            case .incomplete:
                return
            case .tooLarge:
                self.fail(context: context, self.makeError("the response head is over \(Self.maximumHeadSize) bytes", nil, nil))
            case .invalid(let reason):
                self.fail(context: context, self.makeError("the answer to the upgrade is not HTTP/1.1: \(reason)", nil, nil))
            case .head(let head):
                if head.status.code >= 100, head.status.code < 200, head.status != .switchingProtocols {
                    // An interim answer is not the handshake's; the next head is. Its bytes are
                    // dropped, or the buffer kept every head read before the answer.
                    self.interimHeads += 1
                    guard self.interimHeads <= Self.maximumInterimHeads else {
                        let message = "the server sent more than \(Self.maximumInterimHeads) interim (1xx) answers before its answer to the upgrade"
                        self.fail(context: context, self.makeError(message, nil, nil))
                        return
                    }
                    self.received.discardReadBytes()
                    continue
                }
                if let failure = self.handshake.failure(of: head) {
                    self.fail(context: context, self.makeError(failure, head, nil))
                    return
                }
                self.response = head
                let completion = self.completion
                self.completion = nil
                completion?.succeed(head)
            }
        }
    }

    enum Parsed: Equatable {
        case incomplete
        /// The head is, or will be once it ends, longer than the bound.
        case tooLarge
        case invalid(String)
        case head(HTTPResponseHead)
    }

    /// Takes a whole response head off the front of `buffer`, if it is there and holds at most
    /// `maximumSize` bytes. The bound is the same however the head was cut: one that has not
    /// ended is too large as soon as its end can only come past the bound.
    ///
    /// `searchFrom` is where in `buffer`'s readable bytes its end is looked for (0 for a new
    /// head), kept between calls: a head that comes a byte at a time costs a look at each byte
    /// once, not at the whole head again.
    static func parseHead(
        _ buffer: inout ByteBuffer, searchFrom: inout Int, maximumSize: Int = WebSocketHandshakeHandler.maximumHeadSize
    ) -> Parsed {
        let view = buffer.readableBytesView
        let terminator: [UInt8] = [13, 10, 13, 10]
        guard let end = view[(view.startIndex + min(searchFrom, view.count))...].firstRange(of: terminator) else {
            // An end may start in the last three bytes.
            searchFrom = max(0, view.count - 3)
            return view.count >= maximumSize ? .tooLarge : .incomplete
        }
        searchFrom = 0
        let length = end.upperBound - view.startIndex
        guard length <= maximumSize else { return .tooLarge }
        guard let text = buffer.readString(length: length) else { return .invalid("not text") }
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: true).map(String.init)
        guard !lines.isEmpty else { return .invalid("no status line") }
        let statusLine = lines.removeFirst()
        // Read as the proxy tunnel reads its own.
        guard let (code, reason) = HTTPConnectStateMachine.statusLine(statusLine) else {
            return .invalid("the status line \(statusLine)")
        }
        var headers = HTTPHeaders()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { return .invalid("the field line \(line)") }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty else { return .invalid("a field with no name") }
            headers.add(name: name, value: value)
        }
        return .head(HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: code, reasonPhrase: reason), headers: headers))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.fail(context: context, self.makeError("the opening handshake failed: \(error)", self.response, error))
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.fail(context: context, self.makeError("the connection closed during the opening handshake", self.response, nil))
        context.fireChannelInactive()
    }

    private func fail(context: ChannelHandlerContext, _ error: any Error) {
        guard let completion = self.completion else { return }
        self.completion = nil
        completion.fail(error)
        context.close(promise: nil)
    }
}
