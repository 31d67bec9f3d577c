import Foundation

/// Tells WiFi, WWAN and Ethernet apart for a link, from sysfs and the link's hardware type.
///
/// What the Linux kernel shows in `/sys/class/net/<name>/` (the root is ``ReachabilityEnvironment/sysfsRoot``,
/// so that tests can point it at a directory of their own):
/// - `ifindex`: the link's index, in decimal.
/// - `type`: the `ARPHRD_*` hardware type, in decimal (the same number netlink reports as
///   `ifi_type`): 1 Ethernet (also what most WiFi and USB modems show), 512 PPP, 519 raw IP
///   (`rmnet`, `mhi_net`, `qmi_wwan` in raw-IP mode), 801–803 raw 802.11 (monitor mode), 772
///   loopback, 65534 none (`tun`, some modems; not decisive).
/// - `wireless/`: a directory that wireless extensions add to every 802.11 interface.
/// - `phy80211`: a symbolic link to the radio (`/sys/class/ieee80211/phyN`) that cfg80211 adds
///   to every interface it drives, with or without wireless extensions.
/// - `uevent`: `KEY=value` lines; `DEVTYPE=wlan` for a cfg80211 interface, `DEVTYPE=wwan` for a
///   mobile broadband modem (usbnet drivers flagged WWAN, such as `qmi_wwan` and `cdc_mbim`, and
///   the kernel's WWAN framework). Plain Ethernet has no `DEVTYPE`; `bridge`, `vlan`, `bond`
///   and others name virtual links.
///
/// The rule: 802.11 (the `wireless/` directory, the `phy80211` link, `DEVTYPE=wlan`, or a raw
/// 802.11 type) is WiFi; `DEVTYPE=wwan`, PPP, raw IP, or a modem's name (`wwan0`, `wwp0s20u4`,
/// `rmnet_data0`, `ppp0`, `ccmni0`) is WWAN; anything else is Ethernet.
///
/// `/sys` shows the interfaces of the namespace it was mounted in, so a sysfs entry counts only
/// when its `ifindex` is the link's own; otherwise (a link in another namespace) only the name and
/// the hardware type decide.
enum InterfaceKind {
    static let pppHardwareType: UInt32 = 512  // ARPHRD_PPP
    static let rawIPHardwareType: UInt32 = 519  // ARPHRD_RAWIP
    static let ieee80211HardwareTypes: ClosedRange<UInt32> = 801...803  // ARPHRD_IEEE80211(_PRISM, _RADIOTAP)
    static let wwanNamePrefixes = ["wwan", "wwp", "rmnet", "ppp", "ccmni", "usb_wwan"]
    static let defaultSysfsRoot = "/sys/class/net"

    static func status(of link: RoutingSnapshot.Link, sysfs: String = defaultSysfsRoot) -> NetworkReachabilityStatus {
        let entry = SysfsEntry(root: sysfs, link: link)
        let hardwareType = entry?.hardwareType ?? link.hardwareType
        if entry?.isWireless == true || Self.ieee80211HardwareTypes.contains(hardwareType) {
            return .reachableViaWiFi
        }
        if entry?.deviceType == "wwan" || [Self.pppHardwareType, Self.rawIPHardwareType].contains(hardwareType)
            || Self.wwanNamePrefixes.contains(where: link.name.hasPrefix)
        {
            return .reachableViaWWAN
        }
        return .reachableViaEthernet
    }

    /// A link's directory under the sysfs root, when it is this link's (same `ifindex`).
    struct SysfsEntry {
        let directory: String

        init?(root: String, link: RoutingSnapshot.Link) {
            self.directory = "\(root)/\(link.name)"
            guard Self.read("\(self.directory)/ifindex").flatMap({ Int32($0) }) == link.index else { return nil }
        }

        /// `DEVTYPE` from `uevent`, if any.
        var deviceType: String? {
            guard let uevent = Self.read("\(self.directory)/uevent") else { return nil }
            return uevent.split(separator: "\n").first { $0.hasPrefix("DEVTYPE=") }.map { String($0.dropFirst("DEVTYPE=".count)) }
        }

        /// `type`, the `ARPHRD_*` number (the same as netlink's).
        var hardwareType: UInt32? { Self.read("\(self.directory)/type").flatMap { UInt32($0) } }

        var isWireless: Bool {
            let files = FileManager.default
            return files.fileExists(atPath: "\(self.directory)/wireless")
                || (try? files.destinationOfSymbolicLink(atPath: "\(self.directory)/phy80211")) != nil
                || files.fileExists(atPath: "\(self.directory)/phy80211")
                || self.deviceType == "wlan"
        }

        private static func read(_ path: String) -> String? {
            guard let data = FileManager.default.contents(atPath: path) else { return nil }
            return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }
}
