import Foundation

/// Tells WiFi, WWAN and Ethernet apart for a link, from `/sys/class/net` and the link's hardware
/// type.
///
/// `/sys` shows the interfaces of the namespace it was mounted in, so a sysfs entry counts only
/// when its `ifindex` is the link's own; otherwise (a link in another namespace) the name and the
/// hardware type decide.
enum InterfaceKind {
    static let pppHardwareType: UInt32 = 512  // ARPHRD_PPP
    static let wwanNamePrefixes = ["wwan", "wwp", "rmnet", "ppp", "ccmni", "usb_wwan"]

    static func status(of link: RoutingSnapshot.Link, sysfs: String = "/sys/class/net") -> NetworkReachabilityStatus {
        let directory = "\(sysfs)/\(link.name)"
        let sysfsIsOurs = Self.read("\(directory)/ifindex").flatMap { Int32($0) } == link.index
        let files = FileManager.default
        if sysfsIsOurs, files.fileExists(atPath: "\(directory)/wireless") || files.fileExists(atPath: "\(directory)/phy80211") {
            return .reachableViaWiFi
        }
        if sysfsIsOurs, let uevent = Self.read("\(directory)/uevent"),
            uevent.split(separator: "\n").contains("DEVTYPE=wwan")
        {
            return .reachableViaWWAN
        }
        if link.hardwareType == Self.pppHardwareType || Self.wwanNamePrefixes.contains(where: link.name.hasPrefix) {
            return .reachableViaWWAN
        }
        return .reachableViaEthernet
    }

    private static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
