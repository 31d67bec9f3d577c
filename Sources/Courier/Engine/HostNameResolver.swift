import NIOCore
import NIOPosix

/// Looks host names up for the connections the engine opens, in place of the system's resolver
/// (OkHttp's `Dns`): a DNS-over-HTTPS client, a service registry, a test's own answers.
///
/// ```swift
/// struct Registry: HostNameResolver {
///     func addresses(of host: String) async throws -> [String] {
///         try await registry.instances(of: host).map(\.address)
///     }
/// }
/// configuration.hostNameResolver = Registry()
/// ```
///
/// It is asked for every name a new connection needs, once a connection: the server's, a proxy's
/// own host, and the server's through a `socks5://` proxy (``NIOEngine/Proxy/resolvesHostNamesLocally``).
/// It is not asked for an IP address, for a name ``SessionConfiguration/hostAddresses`` gives
/// addresses, or for a name under `localhost` (RFC 6761's loopback). The URL keeps its name
/// everywhere a name goes (`Host`, TLS, cookies, the cache), as with the table.
public protocol HostNameResolver: Sendable {
    /// The IP addresses of `host` (IPv4 or IPv6 literals, an IPv6 one with or without brackets),
    /// the preferred first; the connection tries them as it tries a lookup's answer, IPv6 and
    /// IPv4 raced. Called once for both families, on a task of its own, which is cancelled when
    /// the connection gives up before the answer (its connect timeout). An empty list, or an
    /// address that is not one, fails the connection as an error does.
    /// - Throws: Any error: the connection fails with ``CourierError/Code/connectionFailed``
    ///   naming the host and the error.
    func addresses(of host: String) async throws -> [String]
}

/// How the engine's connections find a name's addresses, past IP literals: the configuration's
/// ``HostAddressTable`` first, then the names under `localhost`, then the configuration's
/// ``HostNameResolver`` if it has one, else the system's `getaddrinfo`.
struct HostLookup: Sendable {
    var table: HostAddressTable
    var resolver: (any HostNameResolver)?

    /// No table, the system's resolver.
    static let system = HostLookup(table: .empty, resolver: nil)

    /// The addresses of `name` known without a lookup, each with `port`: the table's (or why
    /// its entry gives none), else the loopback's for a name under `localhost`; nil when `name`
    /// needs a lookup (``lookUp(_:port:on:)``).
    func knownAddresses(of name: String, port: Int) -> Result<[SocketAddress], NameLookupFailure>? {
        if let given = self.table.addresses(of: name, port: port) { return given }
        return loopbackAddresses(of: name, port: port).map { .success($0) }
    }

    /// Looks `name` up, its addresses each with `port`, the preferred first (never none): with the
    /// configuration's resolver, on a task returned so that the caller can cancel it when it
    /// gives up; else with the system's `getaddrinfo`, blocking, on NIO's thread pool.
    func lookUp(_ name: String, port: Int, on loop: any EventLoop) -> (addresses: EventLoopFuture<[SocketAddress]>, resolving: Task<Void, Never>?) {
        guard let resolver = self.resolver else {
            return (NIOThreadPool.singleton.runIfActive(eventLoop: loop) { try systemAddresses(of: name, port: port) }, nil)
        }
        let promise = loop.makePromise(of: [SocketAddress].self)
        // The resolver is `async`, NIO's lookups are futures: a task bridges them. It ends with
        // the resolver's answer, which fulfils the promise (a cancelled resolver's too: it
        // answers or throws); the caller cancels it when it no longer waits.
        let resolving = Task {
            promise.completeWith(await Self.ask(resolver, name: name, port: port).mapError { $0 as any Error })
        }
        return (promise.futureResult, resolving)
    }

    /// The first address a `socks5://` proxy is sent for `name`, over `channel` (connected to the
    /// proxy), in the engine's one order (``knownAddresses(of:port:)``, then
    /// ``lookUp(_:port:on:)``); a resolver still at work when the channel closes is cancelled.
    func firstAddress(of name: String, port: Int, over channel: any Channel) -> EventLoopFuture<SocketAddress> {
        if let known = self.knownAddresses(of: name, port: port) {
            return channel.eventLoop.makeCompletedFuture(known.map { $0[0] }.mapError { $0 as any Error })
        }
        let (addresses, resolving) = self.lookUp(name, port: port, on: channel.eventLoop)
        if let resolving { channel.closeFuture.whenComplete { _ in resolving.cancel() } }
        return addresses.map { $0[0] }
    }

    /// `resolver`'s addresses for `name`, each with `port`, or why there are none.
    static func ask(_ resolver: any HostNameResolver, name: String, port: Int) async -> Result<[SocketAddress], NameLookupFailure> {
        let texts: [String]
        do {
            texts = try await resolver.addresses(of: name)
        } catch {
            return .failure(NameLookupFailure(host: name, reason: "the host name resolver failed: \(error)"))
        }
        return HostAddressTable.socketAddresses(texts, port: port, of: name, from: "the host name resolver gave")
    }
}
