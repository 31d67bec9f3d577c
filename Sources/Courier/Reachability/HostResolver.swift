import NIOCore

/// Resolves a domain to addresses. Called on the monitor's own thread, never on the caller's.
struct HostResolver: Sendable {
    /// The addresses, or a reason why there are none.
    let resolve: @Sendable (String) -> Result<[IPAddress], ReachabilityFailure>

    /// The system resolver (`getaddrinfo`): `/etc/hosts`, DNS, whatever the system is set up for.
    static let system = HostResolver { name in
        let found: [SocketAddress]
        do throws(NameLookupFailure) {
            found = try systemAddresses(of: name, port: 0)
        } catch {
            return .failure(.resolutionFailed(name, error.reason))
        }
        var addresses: [IPAddress] = []
        for address in found {
            if let text = address.ipAddress, let ip = IPAddress(text), !addresses.contains(ip) { addresses.append(ip) }
        }
        return addresses.isEmpty ? .failure(.resolutionFailed(name, "no addresses")) : .success(addresses)
    }

    /// Fixed answers, for tests: a name it does not know fails to resolve.
    static func fixed(_ table: [String: [IPAddress]]) -> HostResolver {
        HostResolver { name in
            if let addresses = table[name], !addresses.isEmpty { return .success(addresses) }
            return .failure(.resolutionFailed(name, "not in the fixed table"))
        }
    }
}
