/// Why a manager cannot give a reachable status; logged, and kept as the manager's
/// ``NetworkReachabilityManager/lastFailure`` reason.
enum ReachabilityFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The address given to `init(address:)` is not an IPv4 or IPv6 literal: status `.unknown`.
    case invalidAddress(String)
    /// The domain did not resolve: status `.notReachable` until it does.
    case resolutionFailed(String, String)
    /// The routing socket could not be opened or read: status `.unknown`.
    case socketFailed(String, errno: Int32)
    /// The monitor could not enter the network namespace it was told to watch: status `.unknown`.
    case namespaceFailed(String, errno: Int32)

    var description: String {
        switch self {
        case .invalidAddress(let text): "'\(text)' is not an IPv4 or IPv6 address"
        case .resolutionFailed(let name, let reason): "\(name) did not resolve: \(reason)"
        case .socketFailed(let what, let code): "routing netlink socket: \(what) failed (errno \(code))"
        case .namespaceFailed(let path, let code): "could not enter the network namespace \(path) (errno \(code))"
        }
    }
}
