#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a manager watches: any route out, a domain's addresses, or one address.
enum ReachabilityTarget: Sendable, Hashable, CustomStringConvertible {
    /// A default route (the general manager).
    case defaultRoute
    /// The addresses `name` resolves to, resolved again after every change of the network (and,
    /// while it does not resolve, after a back-off).
    case domain(String)
    /// One address.
    case address(IPAddress)
    /// An address literal that did not parse; the status stays ``NetworkReachabilityStatus/unknown``.
    case invalidAddress(String)

    /// Whether the target is this host itself: a loopback address, or `localhost` (RFC 6761 keeps
    /// `localhost` and names under it for loopback). Such a target is always reachable.
    var isLoopback: Bool {
        switch self {
        case .address(let address): return address.isLoopback
        case .domain(let name):
            let lowered = name.lowercased()
            if lowered == "localhost" || lowered == "localhost." || lowered.hasSuffix(".localhost") { return true }
            return IPAddress(name)?.isLoopback ?? false
        case .defaultRoute, .invalidAddress: return false
        }
    }

    var description: String {
        switch self {
        case .defaultRoute: "any route"
        case .domain(let name): "domain \(name)"
        case .address(let address): "address \(address)"
        case .invalidAddress(let text): "invalid address \(text)"
        }
    }
}
