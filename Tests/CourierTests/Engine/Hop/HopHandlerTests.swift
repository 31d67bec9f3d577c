@testable import Courier
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

/// ``HopHandler`` on an `EmbeddedChannel`, behind the pool's own pipeline (read watcher,
/// NIO's request encoder and response decoder): request bytes come out, response bytes go in, time
/// is the embedded loop's (`advanceTime(by:)`), and the exchange's delegate records what arrives.
/// Everything runs on the test's thread, so every event has happened when a call returns.
@Suite("Hop handler on an HTTP/1.1 EmbeddedChannel")
struct HopHandlerTests {
    /// What the exchange's delegate heard.
    final class Recorder: ExchangeDelegate {
        struct Events {
            var status: Int?
            var networkProtocol: String?
            var body = ""
            var bytesSent: Int64 = 0
            var completions = 0
            var error: CourierError?
        }

        let events = NIOLockedValueBox(Events())

        func exchange(didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
            self.events.withLockedValue { $0.bytesSent = totalBytesSent }
        }
        func exchange(willPerformRedirection response: HTTPResponse, newRequest: Request) -> Request? { nil }
        func exchange(willReceiveResponseOver networkProtocolName: String) {
            self.events.withLockedValue { $0.networkProtocol = networkProtocolName }
        }
        func exchange(didReceive response: HTTPResponse, url: URL) -> ResponseDisposition {
            self.events.withLockedValue { $0.status = response.status.code }
            return .allow
        }
        func exchange(didReceive chunk: ByteBuffer) {
            self.events.withLockedValue { $0.body += String(buffer: chunk) }
        }
        func exchange(didCompleteWith error: CourierError?) {
            self.events.withLockedValue {
                $0.completions += 1
                $0.error = error
            }
        }

        var snapshot: Events { self.events.withLockedValue { $0 } }
    }

    /// A connected channel with the pool's HTTP/1.1 pipeline and a connection of an engine's pool.
    struct Setup {
        let engine: NIOEngine
        let loop = EmbeddedEventLoop()
        let channel: EmbeddedChannel
        let handler: HopHandler
        let connection: HTTP1Connection
        let key = ConnectionPool.Key(host: "127.0.0.1", port: 8080)

        init(_ configure: (inout NIOEngine.Configuration) -> Void = { _ in }) throws {
            var configuration = NIOEngine.Configuration()
            configuration.connectionIdleTimeout = 60
            configure(&configuration)
            _ = LiveObjectCheck.installed
            self.engine = NIOEngine(configuration: configuration)
            let watcher = HTTP1ReadWatcher()
            self.handler = HopHandler(readWatcher: watcher)
            self.channel = EmbeddedChannel(loop: self.loop)
            try self.channel.pipeline.syncOperations.addHandlers([
                watcher,
                HTTPRequestEncoder(),
                ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .forward)),
                self.handler,
            ])
            try self.channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 8080)).wait()
            self.connection = HTTP1Connection(
                channel: self.channel, key: self.key, pool: self.engine.pool, handler: self.handler,
                establishment: ConnectionEstablishment(connectStart: .now, isProxyConnection: false))
            self.handler.connection = self.connection
        }

        /// Starts `request` on the connection, as the pool would hand it over.
        func run(_ request: Request) throws -> (NIOExchange, Recorder) {
            let recorder = Recorder()
            let exchange = NIOExchange(engine: self.engine, request: request, delegate: recorder)
            let hop = try EngineHop(exchange: exchange, request: request, pool: self.engine.pool, key: self.key)
            hop.startsRunning(on: self.connection)
            self.handler.run(hop)
            return (exchange, recorder)
        }

        /// The bytes the handler wrote since last asked, as text.
        func written() throws -> String {
            var text = ""
            while let data = try self.channel.readOutbound(as: IOData.self) {
                if case .byteBuffer(let buffer) = data { text += String(buffer: buffer) }
            }
            return text
        }

        func receive(_ text: String) throws {
            try self.channel.writeInbound(ByteBuffer(string: text))
        }
    }

    static let url = URL(string: "http://127.0.0.1:8080/a?b=1")!

    /// A new connection nobody waited for is idle like one given back after a response: a byte
    /// before any request closes it. It was not watched, and a stray answer in part (a `408`
    /// split by TCP) waited in the decoder to be read as the next request's answer.
    @Test func aNewConnectionNobodyWaitedForIsClosedByABytePrecedingAnyRequest() throws {
        let setup = try Setup()
        setup.connection.startIdleClock()
        #expect(setup.channel.isActive)
        try setup.receive("HTTP/1.1 408 Request Ti")
        #expect(!setup.channel.isActive)
    }

    /// A hop handed over before the new connection's idle clock started keeps its answer.
    @Test func aHopHandedOverBeforeTheIdleClockKeepsTheConnectionWatchedForItsAnswer() throws {
        let setup = try Setup()
        let (_, recorder) = try setup.run(Request(url: Self.url))
        setup.connection.startIdleClock()
        try setup.receive("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        #expect(recorder.snapshot.status == 200 && recorder.snapshot.body == "ok" && recorder.snapshot.completions == 1)
    }

    @Test func aRequestAndItsResponseGoThroughAndTheConnectionIdlesOutInThePool() throws {
        let setup = try Setup()
        let (_, recorder) = try setup.run(Request(url: Self.url, headerFields: [.accept: "*/*"]))
        let request = try setup.written()
        #expect(request.hasPrefix("GET /a?b=1 HTTP/1.1\r\n"))
        #expect(request.contains("Host: 127.0.0.1:8080\r\n"))
        #expect(request.hasSuffix("\r\n\r\n"))
        #expect(recorder.snapshot.completions == 0)

        // The promise is dated by the real clock as the response ends: between these two instants,
        // however long a loaded machine takes in between.
        let beforeResponse = NIODeadline.now()
        try setup.receive("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nKeep-Alive: timeout=30\r\n\r\nhel")
        #expect(recorder.snapshot.status == 200)
        #expect(recorder.snapshot.networkProtocol == "http/1.1")
        #expect(recorder.snapshot.completions == 0)
        try setup.receive("lo")
        let afterResponse = NIODeadline.now()
        #expect(recorder.snapshot.body == "hello")
        #expect(recorder.snapshot.completions == 1)
        #expect(recorder.snapshot.error == nil)
        // Kept alive, back in the pool, with the server's promise (30 s, less a second).
        #expect(setup.channel.isActive)
        let promised = try #require(setup.connection.reusableUntil)
        #expect(promised >= beforeResponse + .seconds(29) && promised <= afterResponse + .seconds(29), "\(promised) not 29 s after the response")

        // Idle in the pool for the idle timeout (embedded time): it closes.
        setup.loop.advanceTime(by: .seconds(59))
        #expect(setup.channel.isActive)
        setup.loop.advanceTime(by: .seconds(1))
        #expect(!setup.channel.isActive)
    }

    /// A timeout that was set as the rest of the response came, before the hop heard it (the
    /// watchdog runs on another thread): the rest is dropped, so the hop's success that follows is
    /// no whole response, and the exchange ends with the timeout. (A timeout that meets a response
    /// already whole, its upload stalled, ends with the response instead.)
    @Test func aResponseEndingAsATimeoutComesIsNotDeliveredCutShort() throws {
        let setup = try Setup()
        let (exchange, recorder) = try setup.run(Request(url: Self.url))
        _ = try setup.written()
        try setup.receive("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel")
        // The watchdog's cancel, up to where it tells the hop.
        exchange.state.withLockedValue { $0.pendingCancellation = CourierError(.timedOut, "no data for 1 s") }
        try setup.receive("lo")
        #expect(recorder.snapshot.body == "hel")
        #expect(recorder.snapshot.completions == 1)
        #expect(recorder.snapshot.error?.code == .timedOut, "\(String(describing: recorder.snapshot.error))")
    }

    @Test func aResponseSayingCloseClosesTheChannel() throws {
        let setup = try Setup()
        let (_, recorder) = try setup.run(Request(url: Self.url))
        _ = try setup.written()
        try setup.receive("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
        #expect(recorder.snapshot.status == 204)
        #expect(recorder.snapshot.completions == 1 && recorder.snapshot.error == nil)
        #expect(!setup.channel.isActive)
    }

    @Test func aLargeBodyWaitsForContinueThenGoes() throws {
        let setup = try Setup { $0.expectContinueThreshold = 1000 }
        let body = Data(repeating: UInt8(ascii: "x"), count: 2000)
        let (_, recorder) = try setup.run(Request(method: .put, url: Self.url, body: .data(body)))
        let head = try setup.written()
        #expect(head.contains("Expect: 100-continue\r\n"))
        #expect(head.hasSuffix("\r\n\r\n"), "the head only")
        try setup.receive("HTTP/1.1 100 Continue\r\n\r\n")
        #expect(try setup.written().isEmpty, "not inside the read that carried the 100")
        setup.loop.run()
        #expect(try setup.written() == String(repeating: "x", count: 2000))
        #expect(recorder.snapshot.bytesSent == 2000)
        try setup.receive("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        #expect(recorder.snapshot.status == 201)
        #expect(recorder.snapshot.completions == 1 && recorder.snapshot.error == nil)
        #expect(setup.channel.isActive)
    }

    /// Node's and gunicorn's servers send `100 Continue` themselves, then a refusal, and close:
    /// the refusal behind the `100`, in the same read, is taken before any of the body goes
    /// (which the closed connection would reset), and the body never goes.
    @Test func anAnswerInTheReadThatCarriedContinueComesBeforeTheBody() throws {
        let setup = try Setup { $0.expectContinueThreshold = 1000 }
        let (_, recorder) = try setup.run(Request(method: .put, url: Self.url, body: .data(Data(count: 2000))))
        #expect(try setup.written().contains("Expect: 100-continue\r\n"))
        try setup.receive("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 413 Payload Too Large\r\nContent-Length: 3\r\nConnection: close\r\n\r\nno!")
        #expect(recorder.snapshot.status == 413)
        #expect(recorder.snapshot.body == "no!")
        #expect(recorder.snapshot.completions == 1 && recorder.snapshot.error == nil)
        setup.loop.run()
        #expect(try setup.written().isEmpty, "the body never went")
        #expect(recorder.snapshot.bytesSent == 0)
        #expect(!setup.channel.isActive)
    }

    @Test func aBodyWaitingForContinueGoesWhenTheWaitEnds() throws {
        let setup = try Setup {
            $0.expectContinueThreshold = 1000
            $0.expectContinueTimeout = 2
        }
        let (_, recorder) = try setup.run(Request(method: .put, url: Self.url, body: .data(Data(count: 1500))))
        #expect(try setup.written().contains("Expect: 100-continue\r\n"))
        setup.loop.advanceTime(by: .milliseconds(1999))
        #expect(try setup.written().isEmpty)
        setup.loop.advanceTime(by: .milliseconds(1))
        #expect(try setup.written().utf8.count == 1500)
        #expect(recorder.snapshot.completions == 0)
        // The server goes away before it answers: the exchange ends, once, and lets go of the engine.
        try setup.channel.close().wait()
        #expect(recorder.snapshot.completions == 1)
        #expect(recorder.snapshot.error != nil)
    }

    @Test func bodyBytesHeldForASuspendedExchangeArriveBeforeTheCloseFailsIt() throws {
        let setup = try Setup()
        let (exchange, recorder) = try setup.run(Request(url: Self.url))
        _ = try setup.written()
        exchange.suspendReceiving()
        try setup.receive("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc")
        #expect(recorder.snapshot.body == "abc", "delivered, then the exchange asked to wait")
        try setup.receive("def")
        #expect(recorder.snapshot.body == "abc", "held")
        // The server closes with 3 bytes of the body missing.
        try setup.channel.close().wait()
        #expect(recorder.snapshot.completions == 0, "the held bytes come first")
        exchange.resumeReceiving()
        #expect(recorder.snapshot.body == "abcdef")
        #expect(recorder.snapshot.completions == 1)
        #expect(recorder.snapshot.error != nil)
    }
}
