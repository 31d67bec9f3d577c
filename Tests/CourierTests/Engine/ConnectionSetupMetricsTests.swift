@testable import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Which transaction a new connection's setup (name lookup, connect, TLS) goes to, over sockets:
/// the one it was opened for, handed the connection as it opened. Any other request it carries
/// is on a reused connection (``TransactionMetrics/isReusedConnection``), with no lookup or
/// connect times, as URLSession's metrics leave them nil for a persistent connection. Before,
/// the first request a connection carried got them, whenever it came.
@Suite("Engine: a connection's setup goes to the request it was opened for")
struct ConnectionSetupMetricsTests {
    /// Answers every name with 127.0.0.1: the first `free` lookups at once, the others once
    /// ``gate`` opens; ``asked`` records each name asked.
    struct GatedResolver: HostNameResolver {
        let free: Int
        let gate = OneShotGate()
        let asked = Recorder<String>()

        init(free: Int = 0) {
            self.free = free
        }

        func addresses(of host: String) async throws -> [String] {
            self.asked.append(host)
            if self.asked.count > self.free {
                guard await self.gate.wait() else { throw CancellationError() }
            }
            return ["127.0.0.1"]
        }
    }

    /// Finds no address for any name.
    struct NoAddressResolver: HostNameResolver {
        struct NoAddress: Error {}

        func addresses(of host: String) async throws -> [String] { throw NoAddress() }
    }

    /// Requests `url` on a manager whose names go to `resolver` and that trusts only the system's
    /// roots: its error, and the last transaction of its metrics.
    private static func failedTransaction(_ url: URL, resolver: any HostNameResolver) async throws -> (CourierError?, TransactionMetrics?) {
        var configuration = SessionConfiguration.default
        configuration.hostNameResolver = resolver
        return try await withManager(baseURL: nil, configuration: configuration) { manager in
            let made = NIOLockedValueBox<SessionTask?>(nil)
            let error: CourierError? = await awaitCallback { finish in
                let task = manager.dataTask(with: Request(url: url)) { finish($2) }
                made.withLockedValue { $0 = task }
                task.resume()
            }
            return (error, made.withLockedValue { $0 }?.metrics?.transactions.last)
        }
    }

    /// A connection that could not be opened leaves its setup's times, as far as it went, in the
    /// transaction that failed with it, as URLSession's metrics of a failed load do: the lookup,
    /// the connect's start and the TLS handshake's start for a certificate the policy refuses; the
    /// lookup alone for a name with no address. (The transaction kept its start only.) A refused
    /// connect is not among the cases: one to `closedPort()` through the resolver timed out once
    /// in a full parallel run here, which no run of the test alone repeated.
    @Test func aConnectionThatCouldNotOpenKeepsItsSetupTimes() async throws {
        try await withTestServer(.https(.localhost)) { server in
            // The test root is not trusted: the handshake fails.
            let (untrustedError, untrusted) = try await Self.failedTransaction(
                try #require(URL(string: "https://localhost:\(server.port)/get")), resolver: GatedResolver(free: .max))
            #expect(
                untrustedError?.code == .serverTrustEvaluationFailed || untrustedError?.code == .tlsFailure, "\(String(describing: untrustedError))")
            let handshake = try #require(untrusted)
            #expect(handshake.domainLookupStart != nil && handshake.domainLookupEnd != nil && handshake.connectStart != nil)
            #expect(handshake.secureConnectionStart != nil, "the handshake began")
            #expect(handshake.secureConnectionEnd == nil && handshake.connectEnd == nil, "and never ended")
            Self.expectOrdered([
                ("fetchStart", handshake.fetchStart), ("domainLookupStart", handshake.domainLookupStart),
                ("domainLookupEnd", handshake.domainLookupEnd), ("connectStart", handshake.connectStart),
                ("secureConnectionStart", handshake.secureConnectionStart),
            ])
        }

        let (unknownError, unknown) = try await Self.failedTransaction(
            try #require(URL(string: "http://localhost:\(closedPort())/get")), resolver: NoAddressResolver())
        #expect(unknownError?.code == .connectionFailed, "\(String(describing: unknownError))")
        let lookup = try #require(unknown)
        #expect(lookup.domainLookupStart != nil && lookup.domainLookupEnd != nil, "the lookup began and ended")
        #expect(lookup.connectStart == nil, "no connect began without an address")
        #expect(lookup.connectEnd == nil && lookup.secureConnectionStart == nil)
    }

    /// Expects the instants given to be in the order given.
    private static func expectOrdered(_ instants: [(String, ContinuousClock.Instant?)], sourceLocation: SourceLocation = #_sourceLocation) {
        let present = instants.compactMap { name, instant in instant.map { (name, $0) } }
        for (earlier, later) in zip(present, present.dropFirst()) {
            #expect(earlier.1 <= later.1, "\(earlier.0) after \(later.0)", sourceLocation: sourceLocation)
        }
    }

    /// A connection whose request was cancelled while its name was looked up opens all the same
    /// and idles; the next request takes it, but it was not opened for that request: its
    /// transaction says it was reused and has no setup times (they came before it began).
    @Test(arguments: Transport.direct)
    func aNewConnectionThatIdledIsReusedByItsFirstRequest(_ transport: Transport) async throws {
        let resolver = GatedResolver()
        try await transport.run(configure: { configuration in
            configuration.hostNameResolver = resolver
            // Only the cancel ends the first request: its lookup waits for the gate.
            configuration.timeoutIntervalForConnect = 600
        }) { server, manager in
            let pool = try #require((manager.engine as? NIOEngine)?.pool)
            // `localhost` goes to the resolver (only names under it are answered without one),
            // and the TLS server's certificate names it.
            let url = try #require(URL(string: "\(transport.scheme)://localhost:\(server.port)/get"))
            let cancelled = manager.dataTask(with: Request(url: url), completionHandler: nil)
            cancelled.resume()
            #expect(await resolver.asked.wait { !$0.isEmpty }, "the connection's lookup began")
            cancelled.cancel()
            #expect(await eventually { pool.waitingHopCount == 0 }, "the cancelled request left the queue")
            resolver.gate.open()
            #expect(await eventually { pool.idleConnectionCount == 1 }, "the connection opened for nobody and idles")

            let response = try await manager.data(for: Request(url: url))
            #expect(response.response.status == .ok)
            let transaction = try #require(response.metrics?.transactions.last)
            #expect(transaction.isReusedConnection)
            #expect(transaction.domainLookupStart == nil && transaction.domainLookupEnd == nil)
            #expect(transaction.connectStart == nil && transaction.connectEnd == nil)
            #expect(transaction.secureConnectionStart == nil && transaction.secureConnectionEnd == nil)
            #expect((transaction.tlsProtocolVersion != nil) == transport.isSecure, "the connection's TLS version stays known")
            #expect(resolver.asked.count == 1, "one connection")
            #expect(await eventually { pool.idleConnectionCount == 1 }, "the connection idles again")
        }
    }

    /// A burst: a connection begins opening for a request, which then takes a connection freed
    /// first; a request that came after the opening began takes the new connection as it opens.
    /// It waited for part of the setup only, and the setup was not its own: its transaction says
    /// the connection was reused and has no setup times, none before its own start.
    @Test func aConnectionOpenedForARequestThatTookAnotherIsReusedByTheNextOne() async throws {
        try await withTestServer { server in
            let held = ReleaseGate(server)
            let heldNext = ReleaseGate(server)
            // The first connection's lookup is answered at once, the second's once the gate opens.
            let resolver = GatedResolver(free: 1)
            var configuration = SessionConfiguration.default
            configuration.hostNameResolver = resolver
            configuration.timeoutIntervalForConnect = 600
            configuration.httpMaximumConnectionsPerHost = 2
            // By name, through the resolver.
            func viaName(_ url: URL) -> URL { URL(string: "http://localhost:\(server.port)\(url.path)")! }
            let (firstURL, secondURL, thirdURL) = (viaName(held.url), viaName(heldNext.url), viaName(server.url("/get")))
            try await withManager(baseURL: nil, configuration: configuration) { manager in
                let pool = try #require((manager.engine as? NIOEngine)?.pool)
                // The first request holds the first connection. (The requests are `async let`s: a
                // failed expectation ends the scope, which cancels and awaits them.)
                async let first = manager.data(for: Request(url: firstURL))
                await held.waitForArrival()
                // The second waits; a second connection begins opening for it.
                async let second = manager.data(for: Request(url: secondURL))
                #expect(await resolver.asked.wait { $0.count == 2 }, "the second connection's lookup began")
                // The first answer frees the first connection: the second request takes it.
                held.releaseAll()
                await heldNext.waitForArrival()
                // The third comes after the second connection began opening, and waits for it.
                async let third = manager.data(for: Request(url: thirdURL))
                #expect(await eventually { pool.waitingHopCount == 1 }, "the third request waits for the opening connection")
                resolver.gate.open()
                let response = try await third
                #expect(response.response.status == .ok)
                let transaction = try #require(response.metrics?.transactions.last)
                #expect(transaction.isReusedConnection, "the connection was opened for another request")
                #expect(transaction.domainLookupStart == nil && transaction.connectStart == nil && transaction.connectEnd == nil)
                heldNext.releaseAll()
                let firstResponse = try await first
                let firstTransaction = try #require(firstResponse.metrics?.transactions.last)
                #expect(!firstTransaction.isReusedConnection, "the first connection was opened for the first request")
                #expect(firstTransaction.domainLookupStart != nil && firstTransaction.connectStart != nil)
                let secondResponse = try await second
                #expect(secondResponse.metrics?.transactions.last?.isReusedConnection == true)
                #expect(server.connectionCount == 2)
            }
        }
    }
}
