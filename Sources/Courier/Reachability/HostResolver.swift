#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Resolves a domain to addresses. Called on the monitor's own thread, never on the caller's.
struct HostResolver: Sendable {
    /// The addresses, or a reason why there are none.
    let resolve: @Sendable (String) -> Result<[IPAddress], ReachabilityFailure>

    /// The system resolver (`getaddrinfo`): `/etc/hosts`, DNS, whatever the system is set up for.
    static let system = HostResolver { name in
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Darwin)
        hints.ai_socktype = SOCK_STREAM
        #else
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(name, nil, &hints, &list)
        guard code == 0 else {
            return .failure(.resolutionFailed(name, String(cString: gai_strerror(code))))
        }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var entry = list
        while let info = entry?.pointee {
            if let raw = info.ai_addr {
                switch info.ai_family {
                case AF_INET:
                    let bytes = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin_addr) { Array($0) }
                    }
                    if let address = IPAddress(bytes: bytes), !addresses.contains(address) { addresses.append(address) }
                case AF_INET6:
                    let bytes = raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                    }
                    if let address = IPAddress(bytes: bytes), !addresses.contains(address) { addresses.append(address) }
                default:
                    break
                }
            }
            entry = info.ai_next
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
