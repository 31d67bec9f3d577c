@testable import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
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

    /// Answers names from a table of its own, counting the calls (OkHttp's `Dns` in a test).
    struct CountingResolver: HostNameResolver {
        let answers: [String: [String]]
        let calls = NIOLockedValueBox<[String]>([])

        func addresses(of host: String) async throws -> [String] {
            self.calls.withLockedValue { $0.append(host) }
            guard let addresses = self.answers[host] else { throw NameLookupFailure(host: host, reason: "not in the test's table") }
            return addresses
        }
    }

    /// The configuration's ``HostNameResolver`` is asked for the names the engine looks up (the
    /// server's directly, the proxy's through one), once a connection, and the URL keeps its name.
    @Test(arguments: Transport.allCases)
    func theConfiguredResolverIsAskedForTheNamesTheEngineLooksUp(_ transport: Transport) async throws {
        let resolver: CountingResolver
        let asked: String
        if let proxy = transport.proxy, !transport.proxyHasAName {
            resolver = CountingResolver(answers: [Self.proxyName: [proxy.host]])
            asked = Self.proxyName
        } else {
            // `localhost` (the server's name directly, the `https://` proxy's through it) goes to
            // the resolver: only names under `localhost` are answered without one.
            resolver = CountingResolver(answers: ["localhost": ["127.0.0.1"]])
            asked = "localhost"
        }
        try await transport.run(configure: { configuration in
            configuration.hostNameResolver = resolver
            // The resolver is asked on a task of the cooperative pool: a full run on one core
            // once held it past the default 10 s, and the connection timed out.
            configuration.timeoutIntervalForConnect = 120
            if var proxy = transport.proxy, !transport.proxyHasAName {
                proxy.host = Self.proxyName
                configuration.proxy = ProxyConfiguration(proxy: proxy)
            }
        }) { server, manager in
            let host = transport.isProxied ? "127.0.0.1" : "localhost"
            for _ in 0..<3 {
                let response = try await manager.get("\(transport.scheme)://\(host):\(server.port)/get")
                #expect(response.response.status == .ok)
            }
            let transaction = try #require(server.receivedRequests.last)
            #expect((transaction.value(forHTTPHeaderField: "Host") ?? transaction.value(forHTTPHeaderField: ":authority")) == "\(host):\(server.port)")
            // One connection for the three requests (a proxy that closes each one: three).
            let connections = transport.proxyClosesEachConnection ? 3 : 1
            #expect(resolver.calls.withLockedValue { $0 } == Array(repeating: asked, count: connections))
        }
    }

    /// A resolver that fails fails the request, naming the host and the error; one that does not
    /// answer is cancelled when the connect timeout ends the connection.
    @Test func aResolverThatFailsOrHangsEndsTheRequest() async throws {
        try await withTestServer(Transport.http1.serverConfiguration()) { server in
            var configuration = Transport.http1.sessionConfiguration()
            configuration.hostNameResolver = CountingResolver(answers: [:])
            // As above: the failing resolver's answer waits for a thread of the pool.
            configuration.timeoutIntervalForConnect = 120
            try await withManager(baseURL: nil, configuration: configuration) { manager in
                let error = await #expect(throws: CourierError.self) { try await manager.get("http://api.courier.invalid:\(server.port)/get") }
                #expect(error?.code == .connectionFailed)
                #expect(error?.description.contains("api.courier.invalid could not be resolved (the host name resolver failed:") == true, "\(error.map { "\($0)" } ?? "")")
            }
            let cancelled = NIOLockedValueBox(false)
            configuration.hostNameResolver = TimedResolverTests.ClosureResolver { _ in
                do {
                    try await untilCancelled()
                } catch {
                    cancelled.withLockedValue { $0 = true }
                    throw error
                }
            }
            configuration.timeoutIntervalForConnect = 0.2
            try await withManager(baseURL: nil, configuration: configuration) { manager in
                let error = await #expect(throws: CourierError.self) { try await manager.get("http://api.courier.invalid:\(server.port)/get") }
                #expect(error?.code == .timedOut, "\(error.map { "\($0)" } ?? "")")
                #expect(await eventually { cancelled.withLockedValue { $0 } }, "the resolver's task was cancelled")
            }
            #expect(server.requestCount == 0)
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

    /// A `socks5://` proxy (not `socks5h://`) leaves the server's name to the client: the table,
    /// or the configured resolver, answers it, and the proxy is sent the address.
    @Test(.enabled(if: RealProxies.socks != nil, Comment(rawValue: TransportRouteTests.noSOCKSProxy)))
    func aSOCKS5ProxyThatLeavesTheLookupToTheClientIsSentTheTablesAddress() async throws {
        try await withTestServer(Transport.http1.serverConfiguration()) { server in
            var proxy = try #require(RealProxies.socks)
            proxy.resolvesHostNamesLocally = true
            var configuration = Transport.http1.sessionConfiguration()
            configuration.proxy = ProxyConfiguration(proxy: proxy)
            configuration.hostAddresses = ["api.courier.invalid": ["127.0.0.1"]]
            // The table, then the configured resolver, answers the name.
            let resolver = CountingResolver(answers: ["api.courier.invalid": ["127.0.0.1"]])
            var resolving = configuration
            resolving.hostAddresses = [:]
            resolving.hostNameResolver = resolver
            for configuration in [configuration, resolving] {
                try await withManager(baseURL: nil, configuration: configuration) { manager in
                    manager.responseSerializer = HTTPResponseSerializer()
                    let response = try await manager.get("http://api.courier.invalid:\(server.port)/get")
                    #expect(response.response.status == .ok)
                    #expect(response.metrics?.transactions.last?.isProxyConnection == true)
                    #expect(server.receivedRequests.last?.value(forHTTPHeaderField: "Host") == "api.courier.invalid:\(server.port)")
                }
            }
            #expect(resolver.calls.withLockedValue { $0 } == ["api.courier.invalid"])
        }
    }
}
