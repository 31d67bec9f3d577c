import CourierTesting
import NIOCore
import NIOPosix
import Synchronization

/// A loopback server that answers a TLS client badly: with bytes that are not TLS, with nothing
/// at all, or by closing the connection once the client hello arrives.
final class BadTLSPeer: Sendable {
    enum Behaviour: Sendable {
        /// Answers the client hello with an HTTP/1.1 response (plain HTTP on a TLS port).
        case garbage
        /// Reads and never answers.
        case silent
        /// Closes the connection when the client hello arrives.
        case close
        /// Holds each connection (once its client hello arrived) until `gate` opens, then closes
        /// it; one that arrives after closes at once.
        case closeWhenOpen(CloseGate)
    }

    /// Holds connections for ``Behaviour/closeWhenOpen(_:)`` until ``open()``.
    final class CloseGate: Sendable {
        private let state = Mutex<(isOpen: Bool, held: [any Channel])>((false, []))

        init() {}

        /// Closes the held connections, and every later one at once.
        func open() {
            let held = self.state.withLock { state -> [any Channel] in
                state.isOpen = true
                defer { state.held = [] }
                return state.held
            }
            for channel in held { channel.close(promise: nil) }
        }

        /// Holds `channel` until ``open()``; false when it is open already.
        fileprivate func hold(_ channel: any Channel) -> Bool {
            self.state.withLock { state in
                guard !state.isOpen else { return false }
                state.held.append(channel)
                return true
            }
        }
    }

    let channel: any Channel
    var port: Int { self.channel.localAddress!.port! }
    private let counter: Counter
    /// How many connections the peer accepted.
    var acceptedCount: Int { self.counter.value.load(ordering: .relaxed) }

    private init(channel: any Channel, counter: Counter) {
        self.channel = channel
        self.counter = counter
    }

    static func start(_ behaviour: Behaviour) async throws -> BadTLSPeer {
        let counter = Counter()
        let channel = try await ServerBootstrap(group: TestServer.eventLoopGroup)
            .childChannelInitializer { channel in
                counter.value.add(1, ordering: .relaxed)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Responder(behaviour: behaviour))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        return BadTLSPeer(channel: channel, counter: counter)
    }

    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    func shutdown() async throws {
        try await self.channel.close()
    }

    private final class Responder: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let behaviour: Behaviour

        init(behaviour: Behaviour) {
            self.behaviour = behaviour
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch self.behaviour {
            case .garbage:
                var reply = context.channel.allocator.buffer(capacity: 64)
                reply.writeString("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                context.writeAndFlush(self.wrapOutboundOut(reply), promise: nil)
            case .silent:
                break
            case .close:
                context.close(promise: nil)
            case .closeWhenOpen(let gate):
                if !gate.hold(context.channel) { context.close(promise: nil) }
            }
        }
    }
}
