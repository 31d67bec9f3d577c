#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The name lookup of one new connection, for NIO's happy-eyeballs connector, timed for the
/// task metrics (``TransactionMetrics/domainLookupStart``).
///
/// A name goes to the configuration's ``HostNameResolver`` (on a task of its own, cancelled by
/// ``cancelQueries()``) or else to the system's `getaddrinfo` once, on NIO's blocking-I/O thread
/// pool; its IPv6 and IPv4 answers feed the connector's AAAA and A queries. An IP address needs no
/// lookup: it is answered at once, with no thread hop and no lookup time; so is a name the
/// configuration's ``HostAddressTable`` names, and a name under `localhost`
/// (``loopbackAddresses(of:port:)``).
final class TimedResolver: Resolver, Sendable {
    /// When the lookup began and ended; nil for an address, or before it ran.
    struct Times: Sendable {
        var start: ContinuousClock.Instant?
        var end: ContinuousClock.Instant?
        /// The lookup found no address: no connect began.
        var failed = false
    }

    private struct State {
        var started = false
        /// Whether the queries' promises were fulfilled (by the answer, or by ``cancelQueries()``).
        var completed = false
        var times = Times()
        /// The configuration's resolver at work, until it answers or the queries are cancelled.
        var resolving: Task<Void, Never>?
    }

    private let loop: any EventLoop
    private let lookup: HostLookup
    private let v4: EventLoopPromise<[SocketAddress]>
    private let v6: EventLoopPromise<[SocketAddress]>
    private let state = NIOLockedValueBox(State())

    /// A resolver for one connect on `loop`, that looks names up as `lookup` says.
    init(loop: any EventLoop, lookup: HostLookup = .system) {
        self.loop = loop
        self.lookup = lookup
        self.v4 = loop.makePromise()
        self.v6 = loop.makePromise()
    }

    /// When the lookup ran, once the connect has finished.
    var times: Times { self.state.withLockedValue { $0.times } }

    func initiateAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        self.start(host: host, port: port)
        return self.v4.futureResult
    }

    func initiateAAAAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        self.start(host: host, port: port)
        return self.v6.futureResult
    }

    /// The connector gave up (its timeout) or has its connection: a resolver still at work is
    /// cancelled and the queries fail at once. (`getaddrinfo` cannot be stopped: it blocks until it
    /// answers, and its answer is then dropped.)
    func cancelQueries() {
        let resolving = self.state.withLockedValue { $0.resolving.take() }
        guard let resolving else { return }
        resolving.cancel()
        self.complete(.failure(CancellationError()))
    }

    /// The first query starts the one lookup for both families.
    private func start(host: String, port: Int) {
        let first = self.state.withLockedValue { state -> Bool in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        // An address, a name the table names, or a name under `localhost`: answered at once.
        if let literal = Self.literalAddress(host, port: port) {
            self.complete(.success(Self.Answer([literal])))
            return
        }
        if let known = self.lookup.knownAddresses(of: host, port: port) {
            if case .failure = known { self.state.withLockedValue { $0.times.failed = true } }
            self.complete(known.map(Self.Answer.init).mapError { $0 as any Error })
            return
        }
        self.state.withLockedValue { $0.times.start = .now }
        // Started on the connection's loop, whose callbacks run after this returns: `resolving`
        // is stored before its answer can clear it.
        let (addresses, resolving) = self.lookup.lookUp(host, port: port, on: self.loop)
        if let resolving { self.state.withLockedValue { $0.resolving = resolving } }
        addresses.whenComplete { result in
            self.state.withLockedValue {
                $0.times.end = .now
                if case .failure = result { $0.times.failed = true }
                $0.resolving = nil
            }
            self.complete(result.map(Self.Answer.init))
        }
    }

    /// Fulfils both queries, once: a resolver's late answer after ``cancelQueries()`` is dropped.
    private func complete(_ result: Result<Answer, any Error>) {
        let first = self.state.withLockedValue { state -> Bool in
            defer { state.completed = true }
            return !state.completed
        }
        guard first else { return }
        switch result {
        case .success(let answer):
            self.v6.succeed(answer.v6)
            self.v4.succeed(answer.v4)
        case .failure(let error):
            self.v6.fail(error)
            self.v4.fail(error)
        }
    }

    /// A lookup's addresses by family, in the order `getaddrinfo` gave them (RFC 6724's).
    struct Answer: Sendable {
        var v4: [SocketAddress] = []
        var v6: [SocketAddress] = []

        init(_ addresses: [SocketAddress]) {
            for address in addresses {
                if case .v6 = address { self.v6.append(address) } else { self.v4.append(address) }
            }
        }
    }

    /// `host` as an address when it is one (`127.0.0.1`, `::1`, `[::1]`).
    static func literalAddress(_ host: String, port: Int) -> SocketAddress? {
        var host = Substring(host)
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        // SwiftNIO traps on a port no socket address holds (`try?` does not catch it).
        guard ConnectionPool.portRange.contains(port) else { return nil }
        return try? SocketAddress(ipAddress: String(host), port: port)
    }
}

/// The loopback addresses (`::1`, then `127.0.0.1`, each with `port`) for a name under
/// `localhost` (`api.localhost`, `a.b.localhost.`, any case), which RFC 6761 (6.3) reserves for
/// the loopback and asks resolvers to answer so, never asking DNS, as curl and browsers do; nil
/// for any other host. `localhost` itself is left to the system (its hosts file names it).
func loopbackAddresses(of host: String, port: Int) -> [SocketAddress]? {
    let name = host.hasSuffix(".") ? host.dropLast().lowercased() : host.lowercased()
    guard name.hasSuffix(".localhost"), name.count > ".localhost".count, ConnectionPool.portRange.contains(port) else { return nil }
    return [try? SocketAddress(ipAddress: "::1", port: port), try? SocketAddress(ipAddress: "127.0.0.1", port: port)].compactMap { $0 }
}

/// The system resolver (`getaddrinfo`: `/etc/hosts`, DNS, whatever the system is set up for),
/// blocking: the IPv4 and IPv6 stream addresses of `host`, in the order it gave them (RFC 6724's),
/// each with `port`. The engine's ``TimedResolver`` and reachability's ``HostResolver/system``
/// both ask through it. A name under `localhost` is the loopback's without asking
/// (``loopbackAddresses(of:port:)``).
/// - Throws: ``NameLookupFailure`` when there is none.
func systemAddresses(of host: String, port: Int) throws(NameLookupFailure) -> [SocketAddress] {
    if let loopback = loopbackAddresses(of: host, port: port) { return loopback }
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    #if canImport(Darwin)
    hints.ai_socktype = SOCK_STREAM
    #else
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    #endif
    hints.ai_protocol = Int32(IPPROTO_TCP)
    var list: UnsafeMutablePointer<addrinfo>?
    let code = getaddrinfo(host, String(port), &hints, &list)
    guard code == 0 else {
        throw NameLookupFailure(host: host, reason: String(cString: gai_strerror(code)))
    }
    defer { freeaddrinfo(list) }
    var addresses: [SocketAddress] = []
    var entry = list
    while let info = entry?.pointee {
        if let raw = info.ai_addr {
            switch info.ai_family {
            case AF_INET:
                addresses.append(raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { SocketAddress($0.pointee, host: host) })
            case AF_INET6:
                addresses.append(raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { SocketAddress($0.pointee, host: host) })
            default:
                break
            }
        }
        entry = info.ai_next
    }
    guard !addresses.isEmpty else {
        throw NameLookupFailure(host: host, reason: "no IPv4 or IPv6 address")
    }
    return addresses
}

/// A host name that has no address.
struct NameLookupFailure: Error, Hashable, CustomStringConvertible {
    let host: String
    let reason: String

    var description: String { "the host name \(self.host) could not be resolved (\(self.reason))" }
}
