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
    /// A manager on a `NIOEngine` reporting to `metrics`, for `transport` (its HTTP versions and
    /// proxy, no cache), trusting the test root.
    private static func manager(
        for server: TestServer, metrics: TestMetrics, transport: Transport = .http1,
        configure: (inout SessionConfiguration) -> Void = { _ in }
    ) throws -> HTTPSessionManager {
        var configuration = transport.sessionConfiguration()
        configure(&configuration)
        var engineConfiguration = NIOEngine.Configuration(configuration)
        engineConfiguration.metricsFactory = metrics
        let engine = NIOEngine(configuration: engineConfiguration, securityPolicy: try Transport.trustingTestRoot())
        let manager = HTTPSessionManager(baseURL: server.baseURL, engine: engine, configuration: configuration)
        manager.responseSerializer = HTTPResponseSerializer()
        manager.completionQueue = TestQueues.completion
        return manager
    }

    /// Over every transport, proxies included (a tunnel or a forwarding connection to the proxy is
    /// one open connection).
    @Test("Counted while open, by protocol; zero after the manager is invalidated", arguments: Transport.allCases)
    func countsConnectionsUntilTheyClose(_ transport: Transport) async throws {
        let metrics = TestMetrics()
        try await withTestServer(transport.serverConfiguration()) { server in
            let manager = try Self.manager(for: server, metrics: metrics, transport: transport)
            // Two requests the server holds until both arrived: two HTTP/1.1 connections, or two
            // streams of one HTTP/2 connection.
            let arrived = Recorder<Void>()
            let gate = OneShotGate()
            server.route("/held") { _ in
                arrived.append(())
                await withCheckedContinuation { continuation in gate.whenOpen { continuation.resume() } }
                return TestServer.Response(body: Data("held".utf8))
            }
            let expected: Double = transport.isHTTP2 ? 1 : 2
            async let first = manager.get("held")
            async let second = manager.get("held")
            let bothArrived = await arrived.wait { $0.count == 2 }
            let meter = try metrics.expectMeter("courier_open_connections", [("protocol", transport.protocolName)])
            let whileHeld = meter.lastValue
            gate.open()
            #expect(bothArrived)
            #expect(whileHeld == expected, "\(meter.values)")
            _ = try await (first, second)
            if transport.proxyClosesEachConnection {
                // The proxy closes each connection after its answer.
                #expect(await eventually { meter.lastValue == 0 }, "\(meter.values)")
            } else {
                #expect(meter.lastValue == expected, "idle connections stay open and counted: \(meter.values)")
            }
            await manager.invalidate(cancelingTasks: true)
            #expect(meter.lastValue == 0, "\(meter.values)")
            #expect(meter.values.max() == expected)
            let other = try metrics.expectMeter("courier_open_connections", [("protocol", transport.isHTTP2 ? "http/1.1" : "h2")])
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

    @Test("Connections that fail to open (refused, untrusted certificate, a proxy refusing the tunnel) are never counted")
    func failedConnectionsAreNeverCounted() async throws {
        let metrics = TestMetrics()
        try await withTestServer(.https(.selfSigned)) { server in
            let manager = try Self.manager(for: server, metrics: metrics)
            await #expect(throws: CourierError.self) { try await manager.get("get") }
            await #expect(throws: CourierError.self) { try await manager.get("http://127.0.0.1:\(closedPort())/get") }
            await manager.invalidate(cancelingTasks: true)
            // A proxy that refuses the tunnel: connected to, never established.
            let proxy = try await TestProxy.start(upstreamPort: server.port, behaviour: .refuse(status: 403))
            let proxied = try Self.manager(for: server, metrics: metrics) {
                $0.proxy = ProxyConfiguration.http(host: "127.0.0.1", port: proxy.port)
            }
            let refused = await #expect(throws: CourierError.self) { try await proxied.get("get") }
            #expect(refused?.code == .proxyRefused)
            await proxied.invalidate(cancelingTasks: true)
            try await proxy.shutdown()
            for meter in metrics.meters(label: "courier_open_connections") {
                #expect(meter.values.isEmpty, "\(meter.dimensions): \(meter.values)")
            }
        }
    }
}
