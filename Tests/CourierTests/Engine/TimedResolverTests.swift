import CourierTesting
import Foundation
import NIOCore
import NIOPosix
import Synchronization
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
        let resolver = TimedResolver(loop: loop, lookup: HostLookup(table: table, resolver: nil))
        let v4 = try await resolver.initiateAQuery(host: "API.localhost", port: 8443).get()
        let v6 = try await resolver.initiateAAAAQuery(host: "API.localhost", port: 8443).get()
        #expect(v4.map(\.ipAddress) == ["10.1.2.3"] && v6.map(\.ipAddress) == ["fd00::5"])
        #expect((v4 + v6).allSatisfy { $0.port == 8443 })
        #expect(resolver.times.start == nil, "no lookup time")
        let bad = TimedResolver(loop: loop, lookup: HostLookup(table: table, resolver: nil))
        await #expect(throws: NameLookupFailure.self) { try await bad.initiateAQuery(host: "bad.example", port: 80).get() }
        await #expect(throws: NameLookupFailure.self) { try await bad.initiateAAAAQuery(host: "bad.example", port: 80).get() }
        let other = TimedResolver(loop: loop, lookup: HostLookup(table: table, resolver: nil))
        #expect(try await other.initiateAQuery(host: "other.localhost", port: 80).get().map(\.ipAddress) == ["127.0.0.1"])
    }

    /// Answers from a closure, counting the calls; records whether a call was cancelled.
    final class ClosureResolver: HostNameResolver {
        let calls = Atomic<Int>(0)
        let cancelled = Atomic<Bool>(false)
        let answer: @Sendable (String) async throws -> [String]

        init(_ answer: @escaping @Sendable (String) async throws -> [String]) {
            self.answer = answer
        }

        func addresses(of host: String) async throws -> [String] {
            self.calls.add(1, ordering: .relaxed)
            do {
                return try await self.answer(host)
            } catch is CancellationError {
                self.cancelled.store(true, ordering: .relaxed)
                throw CancellationError()
            }
        }
    }

    /// The configuration's resolver answers a name the table does not, on a task, timed; its
    /// failures (an error, no address, a bad one) fail both queries naming the host; cancelling the
    /// queries cancels a resolver that has not answered and fails them at once.
    @Test func theConfiguredResolverAnswersNamesTheTableDoesNot() async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let resolver = ClosureResolver { host in
            switch host {
            case "api.example": return ["fd00::7", "10.0.0.7", "[fd00::8]"]
            case "empty.example": return []
            case "bad.example": return ["ten"]
            case "slow.example": try await untilCancelled()
            default: throw NameLookupFailure(host: host, reason: "unknown here")
            }
        }
        let lookup = HostLookup(table: HostAddressTable(["table.example": ["192.0.2.1"]]), resolver: resolver)
        let answered = TimedResolver(loop: loop, lookup: lookup)
        let v6 = try await answered.initiateAAAAQuery(host: "api.example", port: 443).get()
        let v4 = try await answered.initiateAQuery(host: "api.example", port: 443).get()
        #expect(v6.map(\.ipAddress) == ["fd00::7", "fd00::8"] && v4.map(\.ipAddress) == ["10.0.0.7"])
        #expect(answered.times.start != nil && answered.times.end != nil, "a lookup, timed")
        let table = TimedResolver(loop: loop, lookup: lookup)
        #expect(try await table.initiateAQuery(host: "table.example", port: 80).get().map(\.ipAddress) == ["192.0.2.1"])
        #expect(resolver.calls.load(ordering: .relaxed) == 1, "asked once for both families; never for the table's name")
        for (host, reason) in [
            ("empty.example", "the host name resolver gave no address"), ("bad.example", "the host name resolver gave 'ten', which is not an IP address"),
            ("other.example", "the host name resolver failed: "),
        ] {
            let failing = TimedResolver(loop: loop, lookup: lookup)
            let error = await #expect(throws: NameLookupFailure.self) { try await failing.initiateAQuery(host: host, port: 80).get() }
            #expect(error?.reason.hasPrefix(reason) == true, "\(host): \(error.map { "\($0)" } ?? "")")
            await #expect(throws: NameLookupFailure.self) { try await failing.initiateAAAAQuery(host: host, port: 80).get() }
        }
        let slow = TimedResolver(loop: loop, lookup: lookup)
        let pending = slow.initiateAQuery(host: "slow.example", port: 80)
        slow.cancelQueries()
        await #expect(throws: CancellationError.self) { try await pending.get() }
        #expect(await eventually { resolver.cancelled.load(ordering: .relaxed) }, "the resolver's task was cancelled")
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
            try systemAddresses(of: host, port: 80)
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
