import CourierTesting
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL

/// A loopback HTTP/2 server over TLS (Courier's test chain, `h2` only) whose streams do what a
/// test scripts: answer, wait until released, reset, end the connection with GOAWAY, or answer
/// and send GOAWAY while the connection's other streams go on. It counts
/// connections (opened and closed), streams, the most streams open at once and the PINGs it
/// received, announces a chosen `SETTINGS_MAX_CONCURRENT_STREAMS` (and, if asked,
/// `SETTINGS_MAX_HEADER_LIST_SIZE`), and can stop hearing its
/// connections (``stopAnswering()``: a server that is gone without closing them). With
/// `servesHTTP1`, ALPN offers `http/1.1` too, and a connection that chooses it answers every
/// request 200 with `over HTTP/1.1` (the script is for HTTP/2 streams only), counting them.
final class ScriptedHTTP2Server: Sendable {
    enum Action: Sendable {
        /// Answers 200 with `body`.
        case respond(String)
        /// Holds the stream until ``releaseHeld()``, then answers 200 with `body`.
        case hold(String)
        /// Resets the stream with `code`.
        case reset(HTTP2ErrorCode)
        /// Sends GOAWAY naming the stream before this one as the last processed, then closes the
        /// connection: this stream and any later one were not processed.
        case goAway
        /// Sends GOAWAY naming this stream as the last processed, then closes the connection
        /// without answering: a request processed and lost mid-way.
        case goAwayAfterProcessing
        /// As ``goAway``, with `code` and `debug` as the GOAWAY's error code and debug data.
        case goAwayWithError(HTTP2ErrorCode, debug: String)
        /// As ``goAwayAfterProcessing``, with `code` and `debug` as the GOAWAY's error code and
        /// debug data: a request the server took, lost as it closes the connection (Tomcat's
        /// ENHANCE_YOUR_CALM, "Too much overhead").
        case goAwayWithErrorAfterProcessing(HTTP2ErrorCode, debug: String)
        /// As ``goAwayWithErrorAfterProcessing``, with a RST_STREAM of `reset` for the stream
        /// between the GOAWAY and the close (Tomcat resets so the streams still sending DATA).
        case goAwayWithErrorThenReset(HTTP2ErrorCode, debug: String, reset: HTTP2ErrorCode)
        /// Answers 200 with one field `x-large` of `length` bytes and no body, in a HEADERS frame
        /// and as many CONTINUATION frames as it takes (swift-nio-http2 sends no CONTINUATION: it
        /// refuses a block larger than a frame), written below swift-nio-http2 as literals that do
        /// not change the header compression's table.
        case respondWithLargeField(length: Int)
        /// The same head without END_STREAM; its body (`ok`, END_STREAM) goes once the client's
        /// GOAWAY arrives, as a server's frames still in flight when the client gave up on the
        /// connection (hypercorn's body came so after a head Courier could not decode).
        case respondWithLargeFieldThenBodyAfterGoAway(length: Int)
        /// Closes the connection at once, with no GOAWAY and no answer: a server that went away
        /// (restarted, or closed an idle connection just as the stream arrived).
        case close
        /// Sends a malformed frame (a SETTINGS frame five bytes long) on the connection: a
        /// connection error (FRAME_SIZE_ERROR, RFC 9113 6.5) for the client.
        case protocolError
        /// Answers 200 with `body` and, in the same write (so that the client reads both at once,
        /// the answer first), a GOAWAY naming this stream as the last processed, as nginx does
        /// after `keepalive_requests`; the connection stays open, and streams opened before go on.
        case respondThenGoAway(String)
        /// Answers 200 with `body` under a `content-length` one byte short: a stream error
        /// (PROTOCOL_ERROR, RFC 9113 8.1.1) for the client, which resets the stream.
        case respondLongerThanDeclared(String)
        /// Answers 200 with a body of `count` chunks of `chunkSize` bytes (no length), all written
        /// at once: they leave as fast as the client's flow-control windows let them.
        case stream(chunkSize: Int, count: Int)
        /// Answers with `:status` `status` as written (`1000`, say) and nothing else: one HEADERS
        /// frame with END_STREAM.
        case respondWithStatus(String)
        /// Answers with `block` as written (the server checks none of its blocks), with END_STREAM
        /// unless `endStream` is false (the stream is then left open); with `trailers`, `block` is
        /// followed by a DATA frame (`body`) and `trailers`, which end the stream.
        case respondWithBlock([(String, String)], trailers: [(String, String)]? = nil, endStream: Bool = true)
        /// Answers with `:status` `status` and `body` in one DATA frame that ends the stream,
        /// whatever the status allows (a 204 with content, say).
        case respondWithContent(status: String, body: String)
        /// Answers 200 with `count` DATA frames of `x`, each followed by an empty DATA frame (an
        /// application's empty flush), then an empty one that ends the stream.
        case respondWithEmptyFrames(count: Int)
        /// Answers 200 with `part` and no END_STREAM, then sends GOAWAY naming no stream as
        /// processed (last stream 0): a server contradicting itself, whose GOAWAY drops the
        /// stream it is answering.
        case respondPartlyThenGoAwayExcludingIt(String)
        /// Sends DATA (`hi`) before any HEADERS on the stream, then a `:status: 200` HEADERS with
        /// END_STREAM, both written below swift-nio-http2 (which would refuse to send them so).
        case respondWithDataBeforeHeaders
        /// Sends each of `interim` (a 1xx header block as written, without END_STREAM), then
        /// answers 200 with `body`.
        case respondAfterInterim([[(String, String)]], body: String)
        /// Answers with `:status` `status`, `fields` as given (no `content-length` of its own) and
        /// `body`, in one DATA frame that ends the stream; an empty body is no DATA frame (the
        /// HEADERS end the stream).
        case answer(status: Int, fields: [(String, String)] = [], body: [UInt8] = [])
        /// Answers 200 (no length) with `part` in a DATA frame, then holds the stream until
        /// ``releaseHeld()``, which sends `rest` with END_STREAM: a body that stalls mid-way. An
        /// empty `part` is no DATA frame (only the head goes).
        case respondPartlyThenHold(part: String, rest: String)
        /// Answers 200 (no length) with `part` in a DATA frame, then resets the stream with
        /// `code`: a response cut off mid-body.
        case respondPartlyThenReset(part: String, code: HTTP2ErrorCode)
        /// Answers 200 with `body` (END_STREAM), then resets the stream with `code`: with
        /// NO_ERROR, a server that answered before reading the whole request and asks the client
        /// to stop sending it (RFC 9113 8.1).
        case respondThenReset(String, code: HTTP2ErrorCode)
        /// Stops reading the stream (its DATA stays unread, so its receive window does not
        /// reopen and the client's upload stalls once it is spent), then answers 200 with `body`
        /// (END_STREAM): a server that answered without reading the request, and says nothing
        /// more (no RST_STREAM). For `atHead`.
        case respondThenStopReading(String)
        /// Answers 200 with a `content-length` of `bytes` and that many zero bytes, in DATA frames
        /// of 16 KiB at most, written at once; ``responseBodyBytesSent`` counts the bytes of each
        /// frame once it left (swift-nio-http2 holds a frame until the client's windows take it).
        case respondCounted(bytes: Int)
        /// Answers 200 (no length) with `count` DATA frames of `chunk`, one every `interval` (the
        /// first at once), the last ending the stream: a slow server.
        case respondSlowly(chunk: String, count: Int, interval: TimeAmount)
        /// Sends a SETTINGS frame of `settings` on the connection, then answers 200 with `body`.
        case respondAfterSettings([HTTP2Setting], body: String)
        /// Sends a SETTINGS frame of `settings` on the connection and leaves the stream as it is
        /// (for ``start(maximumStreams:maximumHeaderListSize:requestsPerConnection:extraSettings:servesHTTP1:group:atHead:script:)``'s
        /// `atHead`: the stream is answered by the script once its request ended).
        case sendSettings([HTTP2Setting])
        /// Sends a PUSH_PROMISE promising stream 2 for `GET` `path` (written below swift-nio-http2,
        /// which would not send one to a client that disabled push), then answers 200 with `body`.
        case pushThenRespond(path: String, body: String)
    }

    /// A request a stream carried, as the server received it.
    struct RecordedRequest: Sendable {
        /// The header block's fields, pseudo-fields first, as they came.
        var fields: [(String, String)]
        var body: [UInt8]
        /// Whether the HEADERS frame ended the stream (no DATA frame followed).
        var headersEndedStream: Bool
        /// How many DATA frames came, empty ones included.
        var dataFrames: Int
        /// Which connection (0-based) carried it.
        var connection: Int

        /// The first value of the field named `name` (lower-case), if any.
        func value(of name: String) -> String? { self.fields.first { $0.0 == name }?.1 }
    }

    private struct State {
        var connections = 0
        var streams = 0
        var openStreams = 0
        var mostOpenStreams = 0
        var held: [@Sendable () -> Void] = []
        /// Streams scripted to hold are answered at once.
        var holdsNoMore = false
        var paths: [String] = []
        var closedConnections = 0
        /// Connections below this index drop what they receive before TLS (``stopReading()``).
        var unreadBelow = 0
        var pings = 0
        /// The `SETTINGS_MAX_HEADER_LIST_SIZE` the client's last SETTINGS gave, if any did.
        var clientMaximumHeaderListSize: Int?
        /// Connections opened before this many (0-based) hear nothing more.
        var deafBelow = 0
        /// As nginx's `keepalive_requests`: each connection answers this many streams; when the
        /// last of them arrives it sends a GOAWAY naming it, answers it, ignores later streams and
        /// closes once that answer is out. Nil: the script decides.
        var requestsPerConnection: Int?
        /// Streams each connection received, by connection.
        var streamsByConnection: [Int: Int] = [:]
        /// The codes of the RST_STREAM frames the client sent, in order.
        var resetsReceived: [HTTP2ErrorCode] = []
        /// Streams whose body waits for the client's GOAWAY, with what writes it.
        var bodiesAfterGoAway: [@Sendable () -> Void] = []
        /// The paths of the requests HTTP/1.1 connections received, in order.
        var http1Paths: [String] = []
        /// The longest header field value an HTTP/1.1 request carried.
        var http1LongestFieldValue = 0
        /// How many DATA bytes the streams received, all together, so far.
        var requestBodyBytes = 0
        /// How many DATA bytes each request carried, in the order the requests ended.
        var requestBodyLengths: [Int] = []
        /// The requests whose streams ended their side, in the order they ended.
        var requests: [RecordedRequest] = []
        /// How many bytes of ``Action/respondCounted(bytes:)`` bodies left, so far.
        var responseBodyBytesSent = 0
    }

    let channel: any Channel
    private let state: ObservedBox<State>
    var port: Int { self.channel.localAddress!.port! }

    private init(channel: any Channel, state: ObservedBox<State>) {
        self.channel = channel
        self.state = state
    }

    /// Starts a server; `script` says what the n-th stream (0-based, all connections together)
    /// does, knowing its path. Its connections run on `group`: NIO's shared loops, which every
    /// test's servers use, unless a test whose server works hard (a soak) gives it loops of its own,
    /// so that the other servers' answers (a PONG, say) do not wait behind its work.
    ///
    /// `atHead`, when given, is asked about each request whose HEADERS do not end the stream, as
    /// they arrive: an action it returns is done at once (a server that answers before the body
    /// is in), and the script is not asked about that stream again, unless the action is
    /// ``Action/sendSettings(_:)``, which answers nothing.
    static func start(
        maximumStreams: Int = 100,
        maximumHeaderListSize: Int? = nil,
        requestsPerConnection: Int? = nil,
        extraSettings: [HTTP2Setting] = [],
        servesHTTP1: Bool = false,
        group: any EventLoopGroup = TestServer.eventLoopGroup,
        atHead: (@Sendable (_ path: String) -> Action?)? = nil,
        script: @escaping @Sendable (_ index: Int, _ path: String) -> Action
    ) async throws -> ScriptedHTTP2Server {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array((TestCertificates.localhostLeaf + "\n" + TestCertificates.intermediateCA).utf8))
                .map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(TestCertificates.localhostKey.utf8), format: .pem))
        )
        tls.applicationProtocols = servesHTTP1 ? ["h2", "http/1.1"] : ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        var initial = State()
        initial.requestsPerConnection = requestsPerConnection
        let state = ObservedBox(initial)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let index = state.withLockedValue { state in
                    defer { state.connections += 1 }
                    return state.connections
                }
                channel.closeFuture.whenComplete { _ in state.withLockedValue { $0.closedConnections += 1 } }
                @Sendable func configureHTTP2(_ channel: any Channel) throws {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(DeafGate(state: state, index: index, threshold: { $0.deafBelow }), name: Self.framesGate)
                    try pipeline.addHandler(FlushGate())
                    var connection = NIOHTTP2Handler.ConnectionConfiguration()
                    connection.initialSettings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: maximumStreams)]
                    if let maximumHeaderListSize {
                        connection.initialSettings.append(HTTP2Setting(parameter: .maxHeaderListSize, value: maximumHeaderListSize))
                    }
                    connection.initialSettings += extraSettings
                    // What the server sends is the script's (a body longer than its length, a
                    // malformed header block).
                    connection.contentLengthValidation = .disabled
                    connection.headerBlockValidation = .disabled
                    _ = try pipeline.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: connection, streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(
                                StreamHandler(state: state, connection: index, atHead: atHead, script: script))
                        }
                    }
                    try pipeline.addHandler(PingCounter(state: state))
                }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    // Below TLS for ``stopReading()``, above it for ``stopAnswering()``.
                    try pipeline.addHandler(DeafGate(state: state, index: index, threshold: { $0.unreadBelow }))
                    try pipeline.addHandler(NIOSSLServerHandler(context: context))
                }.flatMap {
                    guard servesHTTP1 else { return channel.eventLoop.makeCompletedFuture { try configureHTTP2(channel) } }
                    return channel.configureHTTP2SecureUpgrade(
                        h2ChannelConfigurator: { channel in channel.eventLoop.makeCompletedFuture { try configureHTTP2(channel) } },
                        http1ChannelConfigurator: { channel in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                                try channel.pipeline.syncOperations.addHandler(HTTP1Responder(state: state))
                            }
                        })
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return ScriptedHTTP2Server(channel: channel, state: state)
    }

    /// Signalled after each change of what the server counts or holds: tests wait on it for
    /// the counts below.
    var changes: Changes { self.state.changes }

    var connectionCount: Int { self.state.read { $0.connections } }
    var resetsReceived: [HTTP2ErrorCode] { self.state.read { $0.resetsReceived } }
    var streamCount: Int { self.state.read { $0.streams } }
    /// The paths of the requests that came over HTTP/1.1 (`servesHTTP1`), in order.
    var http1Paths: [String] { self.state.read { $0.http1Paths } }
    /// The longest header field value a request over HTTP/1.1 carried.
    var http1LongestFieldValue: Int { self.state.read { $0.http1LongestFieldValue } }
    var mostOpenStreams: Int { self.state.read { $0.mostOpenStreams } }
    /// How many DATA bytes the streams received, all together, so far.
    var requestBodyBytes: Int { self.state.read { $0.requestBodyBytes } }
    /// How many DATA bytes each request carried, in the order the requests ended.
    var requestBodyLengths: [Int] { self.state.read { $0.requestBodyLengths } }
    /// The requests whose streams ended their side, in the order they ended.
    var requests: [RecordedRequest] { self.state.read { $0.requests } }
    /// How many bytes of ``Action/respondCounted(bytes:)`` bodies left, so far.
    var responseBodyBytesSent: Int { self.state.read { $0.responseBodyBytesSent } }
    var heldCount: Int { self.state.read { $0.held.count } }
    var paths: [String] { self.state.read { $0.paths } }
    /// How many connections closed (either side).
    var closedConnectionCount: Int { self.state.read { $0.closedConnections } }
    /// How many PINGs (not acknowledgements) the server received, all connections together.
    var pingCount: Int { self.state.read { $0.pings } }
    /// The `SETTINGS_MAX_HEADER_LIST_SIZE` the client advertised last, if it did.
    var clientMaximumHeaderListSize: Int? { self.state.read { $0.clientMaximumHeaderListSize } }

    /// The connections open now hear nothing more (their bytes are dropped after TLS): no PING
    /// is answered, no request seen. Later connections work as scripted.
    func stopAnswering() {
        self.state.withLockedValue { $0.deafBelow = $0.connections }
    }

    /// The connections open now drop every byte they receive, below TLS: not even a TLS
    /// close_notify is answered (a server that stopped reading). Later connections work as scripted.
    func stopReading() {
        self.state.withLockedValue { $0.unreadBelow = $0.connections }
    }

    /// Answers every held stream; with `andLater`, streams scripted to hold from now on too.
    func releaseHeld(andLater: Bool = false) {
        let held = self.state.withLockedValue { state -> [@Sendable () -> Void] in
            defer { state.held.removeAll() }
            if andLater { state.holdsNoMore = true }
            return state.held
        }
        for answer in held { answer() }
    }

    func shutdown() async throws {
        try await self.channel.close()
    }

    /// Drops a connection's bytes once the server stops hearing it: above TLS (its decrypted
    /// bytes, ``stopAnswering()``, where raw frames are written through its context, named
    /// ``framesGate``) or below it (not even a close_notify reaches TLS, ``stopReading()``).
    private final class DeafGate: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer

        let state: ObservedBox<State>
        let index: Int
        /// The state's count of connections that hear nothing at this gate.
        let threshold: @Sendable (State) -> Int

        init(state: ObservedBox<State>, index: Int, threshold: @escaping @Sendable (State) -> Int) {
            self.state = state
            self.index = index
            self.threshold = threshold
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard self.state.read({ self.index >= self.threshold($0) }) else { return }
            context.fireChannelRead(data)
        }
    }

    /// The name of the gate above TLS, through which raw frames are written.
    fileprivate static let framesGate = "frames-gate"

    /// Holds a connection's flushes while ``isHolding``: what is written meanwhile leaves in one
    /// write once it lets go.
    private final class FlushGate: ChannelOutboundHandler {
        typealias OutboundIn = IOData

        var isHolding = false

        func flush(context: ChannelHandlerContext) {
            guard !self.isHolding else { return }
            context.flush()
        }
    }

    /// Counts the PINGs a connection receives (swift-nio-http2 answers them) and notes the
    /// client's header-list limit.
    private final class PingCounter: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame

        let state: ObservedBox<State>

        init(state: ObservedBox<State>) {
            self.state = state
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch self.unwrapInboundIn(data).payload {
            case .ping(_, ack: false):
                self.state.withLockedValue { $0.pings += 1 }
            case .settings(.settings(let settings)):
                if let size = settings.last(where: { $0.parameter == .maxHeaderListSize }) {
                    self.state.withLockedValue { $0.clientMaximumHeaderListSize = size.value }
                }
            case .goAway:
                let bodies = self.state.withLockedValue { state in
                    defer { state.bodiesAfterGoAway.removeAll() }
                    return state.bodiesAfterGoAway
                }
                for body in bodies { body() }
            default:
                break
            }
        }
    }

    /// Answers every HTTP/1.1 request 200 with `over HTTP/1.1`, keeping the connection open.
    private final class HTTP1Responder: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let state: ObservedBox<State>

        init(state: ObservedBox<State>) {
            self.state = state
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch self.unwrapInboundIn(data) {
            case .head(let head):
                let longest = head.headers.map(\.value.utf8.count).max() ?? 0
                self.state.withLockedValue { state in
                    state.http1Paths.append(head.uri)
                    state.http1LongestFieldValue = max(state.http1LongestFieldValue, longest)
                }
            case .body:
                break
            case .end:
                let body = ByteBuffer(string: "over HTTP/1.1")
                let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["content-length": "\(body.readableBytes)"])
                context.write(self.wrapOutboundOut(.head(head)), promise: nil)
                context.write(self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
                context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }

    private final class StreamHandler: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame.FramePayload
        typealias OutboundOut = HTTP2Frame.FramePayload

        let state: ObservedBox<State>
        let script: @Sendable (Int, String) -> Action
        let atHead: (@Sendable (String) -> Action?)?
        /// Which connection (0-based) the stream came on.
        let connection: Int
        private var path = ""
        private var counted = false
        private var bodyLength = 0
        private var fields: [(String, String)] = []
        private var body: [UInt8] = []
        private var headersEndedStream = false
        private var dataFrames = 0
        /// Whether `atHead` answered the stream already.
        private var answeredAtHead = false

        init(
            state: ObservedBox<State>, connection: Int, atHead: (@Sendable (String) -> Action?)? = nil,
            script: @escaping @Sendable (Int, String) -> Action
        ) {
            self.state = state
            self.connection = connection
            self.atHead = atHead
            self.script = script
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch self.unwrapInboundIn(data) {
            case .headers(let headers):
                self.path = headers.headers.first(name: ":path") ?? ""
                if self.fields.isEmpty {
                    self.fields = headers.headers.map { ($0.name, $0.value) }
                    self.headersEndedStream = headers.endStream
                }
                if !self.counted {
                    self.counted = true
                    self.state.withLockedValue { state in
                        state.openStreams += 1
                        state.mostOpenStreams = max(state.mostOpenStreams, state.openStreams)
                    }
                }
                if headers.endStream {
                    self.requestEnded(context: context)
                } else if !self.answeredAtHead, let atHead = self.atHead, let action = atHead(self.path) {
                    if case .sendSettings = action {} else { self.answeredAtHead = true }
                    self.perform(action, context: context)
                }
            case .data(let data):
                self.bodyLength += data.data.readableBytes
                self.dataFrames += 1
                if case .byteBuffer(let buffer) = data.data { self.body += buffer.readableBytesView }
                let length = data.data.readableBytes
                self.state.withLockedValue { $0.requestBodyBytes += length }
                if data.endStream { self.requestEnded(context: context) }
            case .rstStream(let code):
                self.state.withLockedValue { $0.resetsReceived.append(code) }
            default:
                break
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            if self.counted { self.state.withLockedValue { $0.openStreams -= 1 } }
            context.fireChannelInactive()
        }

        private func requestEnded(context: ChannelHandlerContext) {
            let index = self.state.withLockedValue { state -> Int in
                defer { state.streams += 1 }
                state.paths.append(self.path)
                state.requestBodyLengths.append(self.bodyLength)
                state.requests.append(
                    RecordedRequest(
                        fields: self.fields, body: self.body, headersEndedStream: self.headersEndedStream, dataFrames: self.dataFrames,
                        connection: self.connection))
                return state.streams
            }
            let channel = context.channel
            let connection = self.connection
            let (onConnection, perConnection) = self.state.withLockedValue { state -> (Int, Int?) in
                defer { state.streamsByConnection[connection, default: 0] += 1 }
                return (state.streamsByConnection[connection, default: 0], state.requestsPerConnection)
            }
            if let perConnection {
                if onConnection < perConnection - 1 {
                    Self.answer("answer \(index)", on: channel)
                } else if onConnection == perConnection - 1, let parent = channel.parent,
                    let streamID = try? channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
                {
                    // nginx's order: the GOAWAY as the last request arrives, then its answer, then
                    // the close; streams opened after it are never processed.
                    parent.eventLoop.execute {
                        let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: streamID, errorCode: .noError, opaqueData: nil))
                        parent.writeAndFlush(frame, promise: nil)
                        let body = "answer \(index)"
                        let headers = HPACKHeaders([(":status", "200"), ("content-length", String(body.utf8.count))])
                        channel.write(HTTP2Frame.FramePayload.headers(.init(headers: headers)), promise: nil)
                        channel.writeAndFlush(
                            HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: body)), endStream: true))
                        ).whenComplete { _ in parent.close(promise: nil) }
                    }
                }
                return
            }
            guard !self.answeredAtHead else { return }
            self.perform(self.script(index, self.path), context: context)
        }

        /// Does what `action` says on the stream.
        private func perform(_ action: Action, context: ChannelHandlerContext) {
            let channel = context.channel
            switch action {
            case .respond(let body):
                Self.answer(body, on: channel)
            case .hold(let body):
                let now = self.state.withLockedValue { state -> Bool in
                    if !state.holdsNoMore { state.held.append { Self.answer(body, on: channel) } }
                    return state.holdsNoMore
                }
                if now { Self.answer(body, on: channel) }
            case .reset(let code):
                context.writeAndFlush(self.wrapOutboundOut(.rstStream(code)), promise: nil)
            case .close:
                channel.parent?.close(promise: nil)
            case .goAway, .goAwayAfterProcessing:
                guard let parent = channel.parent, let streamID = try? channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
                else { return }
                let previous = HTTP2StreamID(Int32(streamID) - 2 > 0 ? Int32(streamID) - 2 : 0)
                let last = action.isGoAwayAfterProcessing ? streamID : previous
                parent.eventLoop.execute {
                    let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: last, errorCode: .noError, opaqueData: nil))
                    parent.writeAndFlush(frame).whenComplete { _ in parent.close(promise: nil) }
                }
            case .goAwayWithError(let code, let debug), .goAwayWithErrorAfterProcessing(let code, let debug):
                guard let parent = channel.parent, let streamID = try? channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
                else { return }
                let previous = HTTP2StreamID(Int32(streamID) - 2 > 0 ? Int32(streamID) - 2 : 0)
                let last = action.isGoAwayAfterProcessing ? streamID : previous
                parent.eventLoop.execute {
                    let frame = HTTP2Frame(
                        streamID: .rootStream, payload: .goAway(lastStreamID: last, errorCode: code, opaqueData: ByteBuffer(string: debug)))
                    parent.writeAndFlush(frame).whenComplete { _ in parent.close(promise: nil) }
                }
            case .goAwayWithErrorThenReset(let code, let debug, let reset):
                guard let parent = channel.parent, let streamID = try? channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
                else { return }
                parent.eventLoop.execute {
                    let frame = HTTP2Frame(
                        streamID: .rootStream, payload: .goAway(lastStreamID: streamID, errorCode: code, opaqueData: ByteBuffer(string: debug)))
                    parent.writeAndFlush(frame, promise: nil)
                    channel.writeAndFlush(HTTP2Frame.FramePayload.rstStream(reset)).whenComplete { _ in parent.close(promise: nil) }
                }
            case .respondPartlyThenGoAwayExcludingIt(let part):
                guard let parent = channel.parent, let gate = try? parent.pipeline.syncOperations.handler(type: FlushGate.self) else { return }
                let loopBound = NIOLoopBound(gate, eventLoop: parent.eventLoop)
                parent.eventLoop.execute {
                    loopBound.value.isHolding = true
                    channel.write(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders([(":status", "200")]))), promise: nil)
                    channel.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: part)))), promise: nil)
                    parent.write(HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .rootStream, errorCode: .noError, opaqueData: nil)), promise: nil)
                    loopBound.value.isHolding = false
                    parent.flush()
                }
            case .respondThenGoAway(let body):
                guard let parent = channel.parent, let streamID = try? channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID),
                    let gate = try? parent.pipeline.syncOperations.handler(type: FlushGate.self)
                else { return }
                // Out of the read (where swift-nio-http2 defers a stream's flush, and would let the
                // GOAWAY go first): the answer's frames, then the GOAWAY, flushed together.
                let loopBound = NIOLoopBound(gate, eventLoop: parent.eventLoop)
                parent.eventLoop.execute {
                    loopBound.value.isHolding = true
                    Self.write(body, on: channel)
                    let frame = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: streamID, errorCode: .noError, opaqueData: nil))
                    parent.write(frame, promise: nil)
                    loopBound.value.isHolding = false
                    parent.flush()
                }
            case .stream(let chunkSize, let count):
                channel.eventLoop.execute {
                    channel.write(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders([(":status", "200")]))), promise: nil)
                    let chunk = channel.allocator.buffer(repeating: UInt8(ascii: "x"), count: chunkSize)
                    for index in 0..<count {
                        channel.write(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(chunk), endStream: index == count - 1)), promise: nil)
                    }
                    channel.flush()
                }
            case .respondLongerThanDeclared(let body):
                Self.answer(body, on: channel, declaredLength: body.utf8.count - 1)
            case .respondWithStatus(let status):
                channel.eventLoop.execute {
                    let headers = HPACKHeaders([(":status", status)])
                    channel.writeAndFlush(HTTP2Frame.FramePayload.headers(.init(headers: headers, endStream: true)), promise: nil)
                }
            case .respondWithEmptyFrames(let count):
                channel.eventLoop.execute {
                    channel.write(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders([(":status", "200")]))), promise: nil)
                    for index in 0...count {
                        if index < count {
                            channel.write(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: "x")))), promise: nil)
                        }
                        channel.write(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer()), endStream: index == count)), promise: nil)
                    }
                    channel.flush()
                }
            case .respondWithContent(let status, let body):
                channel.eventLoop.execute {
                    channel.write(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders([(":status", status)]))), promise: nil)
                    let data = HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: body)), endStream: true))
                    channel.writeAndFlush(data, promise: nil)
                }
            case .respondWithBlock(let block, let trailers, let endStream):
                channel.eventLoop.execute {
                    let head = HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders(block), endStream: trailers == nil && endStream))
                    guard let trailers else {
                        channel.writeAndFlush(head, promise: nil)
                        return
                    }
                    channel.write(head, promise: nil)
                    channel.write(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: "body")))), promise: nil)
                    channel.writeAndFlush(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders(trailers), endStream: true)), promise: nil)
                }
            case .respondWithLargeField(let length):
                guard let parent = channel.parent, let streamID = try? channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
                else { return }
                parent.eventLoop.execute {
                    guard let gate = try? parent.pipeline.syncOperations.context(name: ScriptedHTTP2Server.framesGate) else { return }
                    gate.writeAndFlush(NIOAny(Self.largeFieldFrames(streamID: Int32(streamID), length: length, allocator: parent.allocator)), promise: nil)
                }
            case .respondWithLargeFieldThenBodyAfterGoAway(let length):
                guard let parent = channel.parent, let streamID = try? channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
                else { return }
                let id = Int32(streamID)
                let loopBound = NIOLoopBound(parent, eventLoop: parent.eventLoop)
                self.state.withLockedValue { state in
                    state.bodiesAfterGoAway.append {
                        let parent = loopBound.value
                        guard let gate = try? parent.pipeline.syncOperations.context(name: ScriptedHTTP2Server.framesGate) else { return }
                        // DATA, END_STREAM, "ok".
                        var data = parent.allocator.buffer(capacity: 11)
                        data.writeInteger(UInt32(2) << 8 | 0x0, as: UInt32.self)
                        data.writeInteger(UInt8(0x1))
                        data.writeInteger(UInt32(id))
                        data.writeString("ok")
                        gate.writeAndFlush(NIOAny(data), promise: nil)
                    }
                }
                parent.eventLoop.execute {
                    guard let gate = try? parent.pipeline.syncOperations.context(name: ScriptedHTTP2Server.framesGate) else { return }
                    gate.writeAndFlush(
                        NIOAny(Self.largeFieldFrames(streamID: id, length: length, endStream: false, allocator: parent.allocator)), promise: nil)
                }
            case .respondAfterInterim(let interim, let body):
                channel.eventLoop.execute {
                    for block in interim {
                        channel.write(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders(block))), promise: nil)
                    }
                    Self.write(body, on: channel)
                }
            case .respondWithDataBeforeHeaders:
                guard let parent = channel.parent, let streamID = try? channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
                else { return }
                let id = UInt32(Int(streamID))
                parent.eventLoop.execute {
                    guard let gate = try? parent.pipeline.syncOperations.context(name: ScriptedHTTP2Server.framesGate) else { return }
                    var frames = parent.allocator.buffer(capacity: 21)
                    // DATA, no flags, "hi"; then HEADERS, END_STREAM and END_HEADERS, `:status: 200`
                    // (static table entry 8).
                    frames.writeInteger(UInt32(2) << 8 | 0x0, as: UInt32.self)
                    frames.writeInteger(UInt8(0))
                    frames.writeInteger(id)
                    frames.writeString("hi")
                    frames.writeInteger(UInt32(1) << 8 | 0x1, as: UInt32.self)
                    frames.writeInteger(UInt8(0x5))
                    frames.writeInteger(id)
                    frames.writeInteger(UInt8(0x88))
                    gate.writeAndFlush(NIOAny(frames), promise: nil)
                }
            case .answer(let status, let fields, let body):
                channel.eventLoop.execute {
                    let head = HPACKHeaders([(":status", String(status))] + fields)
                    guard !body.isEmpty else {
                        channel.writeAndFlush(HTTP2Frame.FramePayload.headers(.init(headers: head, endStream: true)), promise: nil)
                        return
                    }
                    channel.write(HTTP2Frame.FramePayload.headers(.init(headers: head)), promise: nil)
                    let data = HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(channel.allocator.buffer(bytes: body)), endStream: true))
                    channel.writeAndFlush(data, promise: nil)
                }
            case .respondPartlyThenHold(let part, let rest):
                let now = self.state.withLockedValue { state -> Bool in
                    if !state.holdsNoMore {
                        state.held.append {
                            channel.eventLoop.execute {
                                let data = HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: rest)), endStream: true))
                                channel.writeAndFlush(data, promise: nil)
                            }
                        }
                    }
                    return state.holdsNoMore
                }
                channel.eventLoop.execute {
                    channel.write(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders([(":status", "200")]))), promise: nil)
                    if !part.isEmpty {
                        channel.write(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: part)))), promise: nil)
                    }
                    if now {
                        channel.write(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: rest)), endStream: true)), promise: nil)
                    }
                    channel.flush()
                }
            case .respondPartlyThenReset(let part, let code):
                channel.eventLoop.execute {
                    channel.write(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders([(":status", "200")]))), promise: nil)
                    channel.write(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: part)))), promise: nil)
                    channel.writeAndFlush(HTTP2Frame.FramePayload.rstStream(code), promise: nil)
                }
            case .respondThenReset(let body, let code):
                channel.eventLoop.execute {
                    Self.write(body, on: channel)
                    channel.writeAndFlush(HTTP2Frame.FramePayload.rstStream(code), promise: nil)
                }
            case .respondThenStopReading(let body):
                try? channel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
                Self.answer(body, on: channel)
            case .respondCounted(let bytes):
                let state = self.state
                channel.eventLoop.execute {
                    let head = HPACKHeaders([(":status", "200"), ("content-length", String(bytes))])
                    channel.write(HTTP2Frame.FramePayload.headers(.init(headers: head, endStream: bytes == 0)), promise: nil)
                    var offset = 0
                    while offset < bytes {
                        let size = min(16384, bytes - offset)
                        offset += size
                        let data = HTTP2Frame.FramePayload.data(
                            .init(data: .byteBuffer(channel.allocator.buffer(repeating: 0, count: size)), endStream: offset == bytes))
                        channel.write(data).whenSuccess { state.withLockedValue { $0.responseBodyBytesSent += size } }
                    }
                    channel.flush()
                }
            case .respondSlowly(let chunk, let count, let interval):
                channel.eventLoop.execute {
                    channel.writeAndFlush(HTTP2Frame.FramePayload.headers(.init(headers: HPACKHeaders([(":status", "200")]))), promise: nil)
                    for index in 0..<count {
                        channel.eventLoop.scheduleTask(in: .nanoseconds(interval.nanoseconds * Int64(index))) {
                            let last = index == count - 1
                            let data = HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: chunk)), endStream: last))
                            channel.writeAndFlush(data, promise: nil)
                        }
                    }
                }
            case .respondAfterSettings(let settings, let body):
                guard let parent = channel.parent else { return }
                parent.eventLoop.execute {
                    parent.writeAndFlush(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings(settings))), promise: nil)
                    Self.write(body, on: channel)
                }
            case .sendSettings(let settings):
                guard let parent = channel.parent else { return }
                parent.eventLoop.execute {
                    parent.writeAndFlush(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings(settings))), promise: nil)
                }
            case .pushThenRespond(let path, let body):
                guard let parent = channel.parent, let streamID = try? channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
                else { return }
                let id = UInt32(Int(streamID))
                parent.eventLoop.execute {
                    guard let gate = try? parent.pipeline.syncOperations.context(name: ScriptedHTTP2Server.framesGate) else { return }
                    gate.writeAndFlush(NIOAny(ScriptedHTTP2Server.pushPromise(on: id, path: path)), promise: nil)
                    Self.write(body, on: channel)
                }
            case .protocolError:
                guard let parent = channel.parent else { return }
                parent.eventLoop.execute {
                    // Below swift-nio-http2, so that it goes out as written: length 5, type
                    // SETTINGS, no flags, stream 0, five bytes.
                    guard let gate = try? parent.pipeline.syncOperations.context(name: ScriptedHTTP2Server.framesGate) else { return }
                    let bytes: [UInt8] = [0, 0, 5, 0x4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
                    gate.writeAndFlush(NIOAny(parent.allocator.buffer(bytes: bytes)), promise: nil)
                }
            }
        }

        /// HEADERS (END_STREAM) and CONTINUATION frames (the last with END_HEADERS) of 16 KiB at
        /// most, carrying `:status: 200` (static table entry 8) and `x-large` with `length` bytes of
        /// `a`, a literal field without indexing (RFC 7541 6.2.2), lengths unencoded by Huffman.
        private static func largeFieldFrames(streamID: Int32, length: Int, endStream: Bool = true, allocator: ByteBufferAllocator) -> ByteBuffer {
            func integer(_ value: Int, prefixBits: Int, into bytes: inout [UInt8]) {
                let limit = (1 << prefixBits) - 1
                guard value >= limit else {
                    bytes.append(UInt8(value))
                    return
                }
                bytes.append(UInt8(limit))
                var rest = value - limit
                while rest >= 128 {
                    bytes.append(UInt8(rest % 128 + 128))
                    rest /= 128
                }
                bytes.append(UInt8(rest))
            }
            var block: [UInt8] = [0x88, 0x00]
            integer(7, prefixBits: 7, into: &block)
            block += Array("x-large".utf8)
            integer(length, prefixBits: 7, into: &block)
            block += [UInt8](repeating: UInt8(ascii: "a"), count: length)
            var frames = allocator.buffer(capacity: block.count + 9 * (block.count / 16384 + 1))
            var offset = 0
            var first = true
            repeat {
                let size = min(16384, block.count - offset)
                let last = offset + size == block.count
                frames.writeInteger(UInt32(size) << 8 | UInt32(first ? 0x1 : 0x9), as: UInt32.self)
                // Flags: END_STREAM on HEADERS, END_HEADERS on the last frame.
                frames.writeInteger(UInt8((first && endStream ? 0x1 : 0) | (last ? 0x4 : 0)))
                frames.writeInteger(UInt32(streamID))
                frames.writeBytes(block[offset..<offset + size])
                offset += size
                first = false
            } while offset < block.count
            return frames
        }

        private static func answer(_ body: String, on channel: any Channel, declaredLength: Int? = nil) {
            channel.eventLoop.execute { Self.write(body, on: channel, declaredLength: declaredLength) }
        }

        /// Writes a 200 with `body` on the stream and flushes it. On the stream's loop.
        private static func write(_ body: String, on channel: any Channel, declaredLength: Int? = nil) {
            let headers = HPACKHeaders([(":status", "200"), ("content-length", String(declaredLength ?? body.utf8.count))])
            channel.write(HTTP2Frame.FramePayload.headers(.init(headers: headers)), promise: nil)
            var buffer = channel.allocator.buffer(capacity: body.utf8.count)
            buffer.writeString(body)
            channel.writeAndFlush(HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(buffer), endStream: true)), promise: nil)
        }
    }
}

extension ScriptedHTTP2Server.Action {
    fileprivate var isGoAwayAfterProcessing: Bool {
        switch self {
        case .goAwayAfterProcessing, .goAwayWithErrorAfterProcessing: true
        default: false
        }
    }
}

extension ScriptedHTTP2Server {
    /// A PUSH_PROMISE frame on `stream` promising stream 2 for `GET https://localhost` + `path`, as
    /// bytes to write below swift-nio-http2 (which sends none to a client that disabled push): the
    /// header block is `:method: GET` and `:scheme: https` (static entries 2 and 7), then
    /// `:authority` and `:path` as literals without indexing of the static names 1 and 4 (RFC 7541
    /// 6.2.2), lengths unencoded by Huffman. It leaves the HPACK table as it was.
    static func pushPromise(on stream: UInt32, path: String) -> ByteBuffer {
        var block: [UInt8] = [0, 0, 0, 2, 0x82, 0x87, 0x01, UInt8("localhost".utf8.count)]
        block += Array("localhost".utf8)
        block += [0x04, UInt8(path.utf8.count)] + Array(path.utf8)
        var frame = ByteBuffer()
        // Length, type PUSH_PROMISE (5), flags END_HEADERS (4), the stream.
        frame.writeInteger(UInt32(block.count) << 8 | 0x5, as: UInt32.self)
        frame.writeInteger(UInt8(0x4))
        frame.writeInteger(stream)
        frame.writeBytes(block)
        return frame
    }
}
