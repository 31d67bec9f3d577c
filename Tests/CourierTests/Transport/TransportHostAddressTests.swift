import Courier
import CourierTesting
import Foundation
import Testing

/// ``SessionConfiguration/hostAddresses`` (curl's `--resolve`) over every transport: the table
/// answers the names the engine looks up itself (the server's directly, the proxy's through a
/// proxy, and the server's through a `socks5://` proxy that leaves the lookup to the client),
/// the URL keeps its name, and a wrong or bad entry is where the connection goes or why it fails.
@Suite("Transport: host addresses from the configuration")
struct TransportHostAddressTests {
    /// A name no resolver knows, for the proxy.
    static let proxyName = "courier-proxy.invalid"

    @Test(arguments: Transport.allCases)
    func theTableAnswersTheNamesTheEngineLooksUp(_ transport: Transport) async throws {
        try await transport.run(configure: { configuration in
            if var proxy = transport.proxy, !transport.proxyHasAName {
                // A proxy addressed by its address under `.ci/run` gets a name only the table knows.
                configuration.hostAddresses = [Self.proxyName: [proxy.host]]
                proxy.host = Self.proxyName
                configuration.proxy = ProxyConfiguration(proxy: proxy)
            } else {
                // The server's name directly, the `https://` proxy's (its certificate names
                // `localhost`) through it: in any case, with a final dot.
                configuration.hostAddresses = ["LocalHost.": ["127.0.0.1"]]
            }
        }) { server, manager in
            // Directly, the server by the name `localhost` (it listens on 127.0.0.1; its
            // certificate names `localhost`); through a proxy, by its address, which the proxy
            // connects to.
            let host = transport.isProxied ? "127.0.0.1" : "localhost"
            let response = try await manager.get("\(transport.scheme)://\(host):\(server.port)/get")
            #expect(response.response.status == .ok)
            let transaction = try #require(response.metrics?.transactions.last)
            // `localhost` goes to the system's resolver without the table, and the proxy's name
            // is known nowhere else.
            #expect(transaction.domainLookupStart == nil, "the table answered, not a lookup")
            let request = try #require(server.receivedRequests.last)
            #expect((request.value(forHTTPHeaderField: "Host") ?? request.value(forHTTPHeaderField: ":authority")) == "\(host):\(server.port)")
        }
    }

    /// Directly: the connection goes where the table says (127.0.0.2, where nothing listens: the
    /// server listens on 127.0.0.1 only); a `host:port` entry wins over a `host` one and applies
    /// to its port only; an entry that is no address fails naming it.
    @Test(arguments: Transport.direct)
    func theConnectionGoesWhereTheTableSays(_ transport: Transport) async throws {
        try await transport.run { server, _ in
            let url = "\(transport.scheme)://localhost:\(server.port)/get"
            var configuration = transport.sessionConfiguration()
            configuration.timeoutIntervalForConnect = 600
            let policy = try Transport.trustingTestRoot()
            for (table, failure) in [
                (["localhost": ["127.0.0.2"]], "could not connect to localhost:\(server.port)"),
                (["localhost:\(server.port)": ["127.0.0.2"], "localhost": ["127.0.0.1"]], "could not connect to localhost:\(server.port)"),
                (["localhost": ["[::1"]], "hostAddresses gives it '[::1', which is not an IP address"),
                (["localhost": []], "hostAddresses gives it no address"),
                (["localhost:1": ["127.0.0.2"], "localhost": ["127.0.0.1"]], nil),
            ] as [([String: [String]], String?)] {
                configuration.hostAddresses = table
                try await withManager(baseURL: nil, configuration: configuration, securityPolicy: policy) { manager in
                    manager.responseSerializer = HTTPResponseSerializer()
                    if let failure {
                        let error = await #expect(throws: CourierError.self, "\(table)") { try await manager.get(url) }
                        #expect(error?.code == .connectionFailed, "\(table): not a timeout")
                        #expect(error?.description.contains(failure) == true, "\(table): \(error.map { "\($0)" } ?? "")")
                    } else {
                        let response = try await manager.get(url)
                        #expect(response.response.status == .ok, "\(table)")
                    }
                }
            }
        }
    }

    /// A `socks5://` proxy (not `socks5h://`) leaves the server's name to the client: the table
    /// answers it, and the proxy is sent the address.
    @Test(.enabled(if: RealProxies.socks != nil, Comment(rawValue: TransportRouteTests.noSOCKSProxy)))
    func aSOCKS5ProxyThatLeavesTheLookupToTheClientIsSentTheTablesAddress() async throws {
        try await withTestServer(Transport.http1.serverConfiguration()) { server in
            var proxy = try #require(RealProxies.socks)
            proxy.resolvesHostNamesLocally = true
            var configuration = Transport.http1.sessionConfiguration()
            configuration.proxy = ProxyConfiguration(proxy: proxy)
            configuration.hostAddresses = ["api.courier.invalid": ["127.0.0.1"]]
            try await withManager(baseURL: nil, configuration: configuration) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                let response = try await manager.get("http://api.courier.invalid:\(server.port)/get")
                #expect(response.response.status == .ok)
                #expect(response.metrics?.transactions.last?.isProxyConnection == true)
                #expect(server.receivedRequests.last?.value(forHTTPHeaderField: "Host") == "api.courier.invalid:\(server.port)")
            }
        }
    }
}
