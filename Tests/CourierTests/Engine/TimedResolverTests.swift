import CourierTesting
import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import Courier

/// The engine's name lookup (``TimedResolver``): addresses need none, names go to `getaddrinfo`
/// once for both families, and the times are kept for the task metrics.
@Suite("Timed resolver")
struct TimedResolverTests {
    @Test func anAddressNeedsNoLookup() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        for (host, isV6) in [("127.0.0.1", false), ("::1", true), ("[::1]", true)] {
            let resolver = TimedResolver(loop: loop)
            let v4 = try await resolver.initiateAQuery(host: host, port: 8080).get()
            let v6 = try await resolver.initiateAAAAQuery(host: host, port: 8080).get()
            #expect((isV6 ? v6 : v4).map(\.port) == [8080], "\(host)")
            #expect((isV6 ? v4 : v6).isEmpty, "\(host)")
            #expect(resolver.times.start == nil && resolver.times.end == nil, "\(host): no lookup time")
        }
        #expect(TimedResolver.literalAddress("example.com", port: 80) == nil)
    }

    @Test func aNameIsLookedUpOnceForBothFamiliesAndTimed() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let resolver = TimedResolver(loop: loop)
        let before = ContinuousClock.now
        let v6 = resolver.initiateAAAAQuery(host: "localhost", port: 443)
        let v4 = resolver.initiateAQuery(host: "localhost", port: 443)
        let addresses = try await v4.get() + v6.get()
        #expect(!addresses.isEmpty)
        #expect(addresses.allSatisfy { $0.port == 443 })
        #expect(addresses.contains { $0.ipAddress == "127.0.0.1" || $0.ipAddress == "::1" })
        let times = resolver.times
        let start = try #require(times.start)
        let end = try #require(times.end)
        #expect(before <= start && start <= end)
    }

    /// The configuration's table (``HostAddressTable``) answers a name it names at once, by
    /// family, before the `localhost` rule; a bad entry fails both queries; a name it does not
    /// name is looked up as usual.
    @Test func theTableAnswersANameItNamesWithoutALookup() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let table = HostAddressTable(["api.localhost": ["10.1.2.3", "fd00::5"], "bad.example": ["nope"]])
        let resolver = TimedResolver(loop: loop, table: table)
        let v4 = try await resolver.initiateAQuery(host: "API.localhost", port: 8443).get()
        let v6 = try await resolver.initiateAAAAQuery(host: "API.localhost", port: 8443).get()
        #expect(v4.map(\.ipAddress) == ["10.1.2.3"] && v6.map(\.ipAddress) == ["fd00::5"])
        #expect((v4 + v6).allSatisfy { $0.port == 8443 })
        #expect(resolver.times.start == nil, "no lookup time")
        let bad = TimedResolver(loop: loop, table: table)
        await #expect(throws: NameLookupFailure.self) { try await bad.initiateAQuery(host: "bad.example", port: 80).get() }
        await #expect(throws: NameLookupFailure.self) { try await bad.initiateAAAAQuery(host: "bad.example", port: 80).get() }
        let other = TimedResolver(loop: loop, table: table)
        #expect(try await other.initiateAQuery(host: "other.localhost", port: 80).get().map(\.ipAddress) == ["127.0.0.1"])
    }

    /// RFC 6761 (6.3): a name under `localhost` is the loopback, answered without a lookup (none
    /// of these names is in this machine's hosts file or DNS); other names, `localhost` itself
    /// included, are the system's.
    @Test func aNameUnderLocalhostIsTheLoopbackWithoutALookup() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        for host in ["api.localhost", "A.B.LOCALHOST.", "courier-test.localhost"] {
            let resolver = TimedResolver(loop: loop)
            let v4 = try await resolver.initiateAQuery(host: host, port: 8080).get()
            let v6 = try await resolver.initiateAAAAQuery(host: host, port: 8080).get()
            #expect(v4.map(\.ipAddress) == ["127.0.0.1"] && v6.map(\.ipAddress) == ["::1"], "\(host)")
            #expect((v4 + v6).allSatisfy { $0.port == 8080 })
            #expect(resolver.times.start == nil, "\(host): no lookup time")
            #expect(try systemAddresses(of: host, port: 80).map(\.ipAddress) == ["::1", "127.0.0.1"], "\(host)")
        }
        for host in ["localhost", "localhost.", ".localhost", "notlocalhost", "localhost.example.com", "localhost.localdomain"] {
            #expect(loopbackAddresses(of: host, port: 80) == nil, "\(host)")
        }
    }

    /// Over a socket: a session reaches a server on the loopback by a name under `localhost`, and
    /// the server is told that name.
    @Test func aSessionReachesTheLoopbackByANameUnderLocalhost() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: URL(string: "http://api.localhost:\(server.port)/")) { manager in
                let response = try await manager.get("get")
                #expect(response.response.status.code == 200)
                let headers = response.value.json?["headers"] as? [String: any Sendable]
                #expect(headers?["Host"] as? String == "api.localhost:\(server.port)")
                #expect(response.metrics?.transactions.last?.remoteSocketAddress?.ipAddress == "127.0.0.1")
            }
        }
    }

    @Test func aLookupFailureIsTypedAndNamesTheHost() async throws {
        // A name no resolver knows: host names have no spaces.
        let host = "bad host name"
        #expect {
            try TimedResolver.lookUp(host, port: 80)
        } throws: { error in
            (error as? NameLookupFailure)?.host == host
        }
        // Through NIO's connector, as the pool connects: the error names the host.
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let connect = ClientBootstrap(group: loop).resolver(TimedResolver(loop: loop)).connect(host: host, port: 80)
        let failure = await #expect(throws: (any Error).self) { try await connect.get() }
        let error = NIOEngine.courierError(from: try #require(failure), request: Request(url: URL(string: "http://example.test/")!))
        #expect(error.code == .connectionFailed)
        #expect(error.message.contains("the host name \(host) could not be resolved"), "\(error.message)")
    }
}
