import Foundation

/// Whether the network, or a host, can be reached, and through what kind of interface
/// (AFNetworking's `AFNetworkReachabilityStatus`, plus Ethernet).
public enum NetworkReachabilityStatus: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Not known yet: monitoring has not produced an answer, or cannot (an invalid address, a
    /// routing socket that could not be opened; the manager logs why).
    case unknown = -1
    /// No route leaves through an interface that is up and running (or a domain did not resolve).
    case notReachable = 0
    /// Reachable through a cellular modem (wwan, ppp and kin).
    case reachableViaWWAN = 1
    /// Reachable through a wireless LAN interface.
    case reachableViaWiFi = 2
    /// Reachable through a wired or virtual interface (Ethernet, veth, bridges, tunnels).
    case reachableViaEthernet = 3

    /// Whether the status is one of the reachable ones.
    public var isReachable: Bool {
        switch self {
        case .reachableViaWWAN, .reachableViaWiFi, .reachableViaEthernet: true
        case .unknown, .notReachable: false
        }
    }

    /// The status in words, localized through the main bundle's `Localizable.strings` when it has
    /// them (AFNetworking's `AFStringFromNetworkReachabilityStatus`): "Unknown", "Not Reachable",
    /// "Reachable via WWAN", "Reachable via WiFi", "Reachable via Ethernet".
    public var localizedDescription: String {
        switch self {
        case .unknown: NSLocalizedString("Unknown", comment: "network reachability status")
        case .notReachable: NSLocalizedString("Not Reachable", comment: "network reachability status")
        case .reachableViaWWAN: NSLocalizedString("Reachable via WWAN", comment: "network reachability status")
        case .reachableViaWiFi: NSLocalizedString("Reachable via WiFi", comment: "network reachability status")
        case .reachableViaEthernet: NSLocalizedString("Reachable via Ethernet", comment: "network reachability status")
        }
    }

    /// The same as ``localizedDescription``.
    public var description: String { self.localizedDescription }
}

extension Notification.Name {
    /// A ``NetworkReachabilityManager``'s status changed. The object is the manager; the user
    /// info's ``ReachabilityNotificationKey/status`` key holds the new ``NetworkReachabilityStatus``.
    /// Posted on the manager's ``NetworkReachabilityManager/callbackQueue``.
    public static let reachabilityDidChange = Notification.Name("com.courier.networking.reachability.change")
}

/// The user-info keys of ``Foundation/NSNotification/Name/reachabilityDidChange``
/// (AFNetworking's `AFNetworkingReachabilityNotificationStatusItem`).
public enum ReachabilityNotificationKey {
    /// The new ``NetworkReachabilityStatus``.
    public static let status = "com.courier.networking.reachability.status"
}
