import CourierTesting
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// A loopback HTTP/2 server over TLS (Courier's test chain, `h2` only) that records the DATA
/// frames of the uploads it receives, and returns the flow-control window as Tomcat does: each
/// DATA frame's bytes at once, in a WINDOW_UPDATE for its stream and one for the connection,
/// from windows of 65,535 bytes (the defaults; `lib/h2sink.py` of the probe that found Tomcat's
/// ENHANCE_YOUR_CALM did the same). A server that returns exactly what it read is what turns a
/// client's small frames into more small frames.
///
/// Each request is answered, once its body ended, with 200 and the number of bytes it carried.
/// With `returnsWindow` false the server returns nothing: an upload stops at the windows' end.
/// swift-nio-http2's server handler in its frame mode, so that nothing returns windows but this.
final class DataFrameRecordingServer: Sendable {
    /// One DATA frame the server received.
    struct DataFrame: Equatable, Sendable {
        var streamID: Int
        var size: Int
        var endStream: Bool
    }

    private struct State {
        var frames: [DataFrame] = []
        var connections = 0
    }

    let channel: any Channel
    private let state: NIOLockedValueBox<State>
    var port: Int { self.channel.localAddress!.port! }

    private init(channel: any Channel, state: NIOLockedValueBox<State>) {
        self.channel = channel
        self.state = state
    }

    /// The DATA frames received so far, all connections together, in order.
    var frames: [DataFrame] { self.state.withLockedValue { $0.frames } }
    /// The bytes of DATA received so far.
    var bytesReceived: Int { self.state.withLockedValue { $0.frames.reduce(0) { $0 + $1.size } } }
    var connectionCount: Int { self.state.withLockedValue { $0.connections } }

    static func start(returnsWindow: Bool = true) async throws -> DataFrameRecordingServer {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array((TestCertificates.localhostLeaf + "\n" + TestCertificates.intermediateCA).utf8))
                .map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(TestCertificates.localhostKey.utf8), format: .pem))
        )
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let state = NIOLockedValueBox(State())
        let channel = try await ServerBootstrap(group: TestServer.eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                state.withLockedValue { $0.connections += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(NIOSSLServerHandler(context: context))
                    var connection = NIOHTTP2Handler.ConnectionConfiguration()
                    connection.initialSettings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: 100)]
                    try pipeline.addHandler(
                        NIOHTTP2Handler(mode: .server, connectionConfiguration: connection, streamConfiguration: .init()))
                    try pipeline.addHandler(Recorder(state: state, returnsWindow: returnsWindow))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return DataFrameRecordingServer(channel: channel, state: state)
    }

    func shutdown() async throws {
        try await self.channel.close()
    }

    /// Records DATA, returns its bytes, answers each ended request.
    private final class Recorder: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        typealias OutboundOut = HTTP2Frame

        let state: NIOLockedValueBox<State>
        let returnsWindow: Bool
        /// The bytes each stream's body carried so far.
        var received: [HTTP2StreamID: Int] = [:]

        init(state: NIOLockedValueBox<State>, returnsWindow: Bool) {
            self.state = state
            self.returnsWindow = returnsWindow
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = self.unwrapInboundIn(data)
            switch frame.payload {
            case .headers(let headers):
                if headers.endStream { self.answer(frame.streamID, context: context) }
            case .data(let payload):
                let size = payload.data.readableBytes
                self.state.withLockedValue {
                    $0.frames.append(DataFrame(streamID: Int(frame.streamID), size: size, endStream: payload.endStream))
                }
                self.received[frame.streamID, default: 0] += size
                if self.returnsWindow, size > 0 {
                    if !payload.endStream {
                        context.write(self.wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .windowUpdate(windowSizeIncrement: size))), promise: nil)
                    }
                    context.write(self.wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: size))), promise: nil)
                    context.flush()
                }
                if payload.endStream { self.answer(frame.streamID, context: context) }
            default:
                break
            }
        }

        private func answer(_ streamID: HTTP2StreamID, context: ChannelHandlerContext) {
            let body = String(self.received.removeValue(forKey: streamID) ?? 0)
            let headers = HPACKHeaders([(":status", "200"), ("content-length", String(body.utf8.count))])
            context.write(self.wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers)))), promise: nil)
            let data = HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(string: body)), endStream: true))
            context.writeAndFlush(self.wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: data)), promise: nil)
        }
    }
}
