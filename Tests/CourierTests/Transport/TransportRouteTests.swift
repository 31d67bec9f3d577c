import Courier
import CourierTesting
import Foundation
import Testing

/// The proxied transports of ``Transport/allCases``: each proxy's routes are in the suite only
/// when `.ci/run` started the proxy and set its variable; these tests say so when it did not (as
/// skipped tests, with the reason), and otherwise send a request over each of the proxy's routes
/// and expect it to have gone through the proxy.
@Suite("Transport: proxied routes")
struct TransportRouteTests {
    static let noHTTPProxy = RealProxyTests.noHTTPProxy + "; the Transport suites leave out their routes via CONNECT and absolute-form"
    static let noSOCKSProxy = RealProxyTests.noSOCKSProxy + "; the Transport suites leave out their routes via SOCKS5"
    static let noHTTPSProxy = RealProxyTests.noHTTPSProxy + "; the Transport suites leave out their routes via CONNECT inside TLS"

    /// A GET over each of `route`'s transports, which must have gone through the proxy.
    private static func getOverEach(_ route: Transport.Route) async throws {
        let transports = Transport.allCases.filter { $0.route == route }
        #expect(transports.count == Transport.proxied.filter { $0.route == route }.count, "every route of the proxy is in allCases")
        for transport in transports {
            try await transport.run { server, manager in
                let response = try await manager.get("get")
                let transactions = response.metrics?.transactions ?? []
                #expect(transactions.count == 1, "\(transport)")
                transport.expectRouted(transactions)
                #expect(transactions.first?.remotePort == transport.proxy?.port, "\(transport) connected to the proxy")
                #expect(server.requestCount == 1)
            }
        }
    }

    @Test(.enabled(if: RealProxies.http != nil, Comment(rawValue: Self.noHTTPProxy)))
    func theHTTPProxyCarriesItsRoutes() async throws {
        try await Self.getOverEach(.httpProxy)
    }

    @Test(.enabled(if: RealProxies.https != nil, Comment(rawValue: Self.noHTTPSProxy)))
    func theHTTPSProxyCarriesItsRoutes() async throws {
        try await Self.getOverEach(.httpsProxy)
    }

    @Test(.enabled(if: RealProxies.socks != nil, Comment(rawValue: Self.noSOCKSProxy)))
    func theSOCKS5ProxyCarriesItsRoutes() async throws {
        try await Self.getOverEach(.socks5)
    }
}
