import NIOCore

/// The addresses a configuration gives host names instead of the system's lookup
/// (``NIOEngine/Configuration/hostAddresses``): curl's `--resolve`, a fixed table in OkHttp's
/// `Dns`. Read by every lookup the engine makes itself: an origin's, a proxy's, and a `socks5://`
/// proxy's target.
struct HostAddressTable: Sendable {
    /// The entries by name, lower-case and without a final dot: `host` or `host:port`.
    private let entries: [String: [String]]

    init(_ table: [String: [String]]) {
        var entries: [String: [String]] = [:]
        for (name, addresses) in table {
            // The first of two spellings of one name wins, as in the Unix-socket map.
            let key = Self.normalized(name)
            if entries[key] == nil { entries[key] = addresses }
        }
        self.entries = entries
    }

    /// No entries: every name is looked up as usual.
    static let empty = HostAddressTable([:])

    var isEmpty: Bool { self.entries.isEmpty }

    /// The addresses the table gives `host` for a connection to `port` (its `host:port` entry,
    /// else its `host` entry), each with `port`; a failure naming the entry when one of them is
    /// not an IP address or there are none; nil when the table does not name the host.
    func addresses(of host: String, port: Int) -> Result<[SocketAddress], NameLookupFailure>? {
        guard !self.entries.isEmpty else { return nil }
        let name = Self.normalized(host)
        guard let texts = self.entries[name + ":" + String(port)] ?? self.entries[name] else { return nil }
        return Self.socketAddresses(texts, port: port, of: host, from: "hostAddresses gives it")
    }

    /// `texts` as addresses with `port` when every one is an IPv4 or IPv6 literal (an IPv6 one
    /// with or without brackets), the first one that is not, or an empty list, as the failure to
    /// find `host`; `source` says where the texts came from, in the failure's reason.
    static func socketAddresses(_ texts: [String], port: Int, of host: String, from source: String) -> Result<[SocketAddress], NameLookupFailure> {
        guard !texts.isEmpty else { return .failure(NameLookupFailure(host: host, reason: "\(source) no address")) }
        var addresses: [SocketAddress] = []
        for text in texts {
            guard let address = TimedResolver.literalAddress(text, port: port) else {
                return .failure(NameLookupFailure(host: host, reason: "\(source) '\(text)', which is not an IP address"))
            }
            addresses.append(address)
        }
        return .success(addresses)
    }

    /// `name` as entries compare: lower-case, Unicode labels in their ASCII (IDNA) form, no final
    /// dot. An entry `bücher.example` answers the name the engine looks up,
    /// `xn--bcher-kva.example` (a request's host, a proxy's), and an entry in that form the
    /// Unicode name.
    private static func normalized(_ name: String) -> String {
        let lower = Punycode.comparableHost(name)
        return lower.hasSuffix(".") ? String(lower.dropLast()) : lower
    }
}
