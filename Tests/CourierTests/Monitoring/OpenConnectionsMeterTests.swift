import Courier
import CourierTesting
import Foundation
import MetricsTestKit
import Testing

/// The engine's `courier_open_connections` meter (issue 19's "open connections"), over real
/// sockets on loopback: up when a connection is established, down when it closes, back to zero
/// once the manager is invalidated; connections that never open are never counted.
@Suite("Monitoring: open connections")
struct OpenConnectionsMeterTests {
    /// A manager on a `NIOEngine` reporting to `metrics`, trusting the test root, with no cache.
    private static func manager(for server: TestServer, metrics: TestMetrics, http1Only: Bool = false) throws -> HTTPSessionManager {
        var configuration = SessionConfiguration.default
        configuration.responseCache = nil
        if http1Only { configuration.httpVersion = .http1Only }
        var engineConfiguration = NIOEngine.Configuration(configuration)
        engineConfiguration.metricsFactory = metrics
        let engine = NIOEngine(configuration: engineConfiguration, securityPolicy: try Transport.trustingTestRoot())
        let manager = HTTPSessionManager(baseURL: server.baseURL, engine: engine, configuration: configuration)
        manager.responseSerializer = HTTPResponseSerializer()
        manager.completionQueue = TestQueues.completion
        return manager
    }

    /// HTTP/1.1 cleartext, HTTP/1.1 over TLS, HTTP/2: the server configuration, whether the
    /// session keeps to HTTP/1.1, and the meter's `protocol`.
    static let cases: [(name: String, tls: Bool, http1Only: Bool, protocolName: String)] = [
        ("HTTP/1.1", false, false, "http/1.1"), ("HTTP/1.1 over TLS", true, true, "http/1.1"), ("HTTP/2", true, false, "h2"),
    ]

    @Test("Counted while open, by protocol; zero after the manager is invalidated", arguments: 0..<3)
    func countsConnectionsUntilTheyClose(_ index: Int) async throws {
        let transport = Self.cases[index]
        let metrics = TestMetrics()
        let serverConfiguration = transport.tls ? TestServer.Configuration.https() : TestServer.Configuration()
        try await withTestServer(serverConfiguration) { server in
            let manager = try Self.manager(for: server, metrics: metrics, http1Only: transport.http1Only)
            // Two requests the server holds until both arrived: two HTTP/1.1 connections, or two
            // streams of one HTTP/2 connection.
            let arrived = Recorder<Void>()
            let gate = OneShotGate()
            server.route("/held") { _ in
                arrived.append(())
                await withCheckedContinuation { continuation in gate.whenOpen { continuation.resume() } }
                return TestServer.Response(body: Data("held".utf8))
            }
            let expected: Double = transport.protocolName == "h2" ? 1 : 2
            async let first = manager.get("held")
            async let second = manager.get("held")
            let bothArrived = await eventually { arrived.count == 2 }
            gate.open()
            #expect(bothArrived)
            let meter = try metrics.expectMeter("courier_open_connections", [("protocol", transport.protocolName)])
            #expect(meter.lastValue == expected, "\(meter.values)")
            _ = try await (first, second)
            #expect(meter.lastValue == expected, "idle connections stay open and counted: \(meter.values)")
            await manager.invalidate(cancelingTasks: true)
            #expect(meter.lastValue == 0, "\(meter.values)")
            #expect(meter.values.max() == expected)
            let other = try metrics.expectMeter("courier_open_connections", [("protocol", transport.protocolName == "h2" ? "http/1.1" : "h2")])
            #expect(other.values.isEmpty, "no connection of the other protocol: \(other.values)")
        }
    }

    @Test("A connection the server closes is uncounted without the manager's help")
    func aConnectionTheServerClosesLeavesTheCount() async throws {
        let metrics = TestMetrics()
        try await withTestServer { server in
            let manager = try Self.manager(for: server, metrics: metrics)
            await #expect(throws: CourierError.self) { try await manager.get("courier/truncated/1000") }
            let meter = try metrics.expectMeter("courier_open_connections", [("protocol", "http/1.1")])
            #expect(await eventually { meter.lastValue == 0 }, "\(meter.values)")
            #expect(meter.values == [1, 0])
            await manager.invalidate(cancelingTasks: true)
        }
    }

    @Test("Connections that fail to open (refused, untrusted certificate) are never counted")
    func failedConnectionsAreNeverCounted() async throws {
        let metrics = TestMetrics()
        try await withTestServer(.https(.selfSigned)) { server in
            let manager = try Self.manager(for: server, metrics: metrics)
            await #expect(throws: CourierError.self) { try await manager.get("get") }
            await #expect(throws: CourierError.self) { try await manager.get("http://127.0.0.1:\(closedPort())/get") }
            await manager.invalidate(cancelingTasks: true)
            for meter in metrics.meters(label: "courier_open_connections") {
                #expect(meter.values.isEmpty, "\(meter.dimensions): \(meter.values)")
            }
        }
    }
}
