import Foundation

extension ProxyConfiguration {
    /// The hosts a request reaches without a proxy: curl's `no_proxy` list.
    ///
    /// The list is separated by commas (blanks around entries are ignored). Each entry is one of:
    /// - `*`: every host.
    /// - A domain: `example.com` and `.example.com` both match `example.com` and any name ending
    ///   in `.example.com` (not `myexample.com`), without regard to case or a trailing dot, and
    ///   in their ASCII (IDNA) form: `bücher.example` and `xn--bcher-kva.example` are one entry,
    ///   and match a URL's host written either way.
    ///   `*.example.com` is read as `.example.com`, as Go reads it (curl would never match it).
    /// - An IP address, `192.168.1.7` or `::1` (`[::1]` too), matching that address only, or a
    ///   network in CIDR notation, `10.0.0.0/8` or `fd00::/8`. Addresses match hosts written as
    ///   addresses; a domain entry never matches an address, nor an address entry a name
    ///   (`localhost` does not cover `127.0.0.1`, as in curl).
    /// - Any of these followed by a port, `example.com:8080`, `10.1.2.3:443`, `[::1]:8443`, to
    ///   match requests to that port only (the URL's port, else 80 for `http` and 443 for
    ///   `https`). curl does not read ports in `no_proxy`; Go and others do.
    public struct BypassList: Sendable, Hashable, CustomStringConvertible {
        enum Entry: Sendable, Hashable {
            /// `*`.
            case everything
            /// A domain and the names under it: lowercased, no leading or trailing dot.
            case domain(String, port: Int?)
            /// An address block: the first `prefixLength` bits of `address`.
            case network(IPAddress, prefixLength: Int, port: Int?)
        }

        let entries: [Entry]
        /// The list as it was given.
        public let description: String

        /// No host bypasses the proxies.
        public static let none = BypassList(entries: [], description: "")

        private init(entries: [Entry], description: String) {
            self.entries = entries
            self.description = description
        }

        /// Reads a `no_proxy` list.
        /// - Parameter list: Entries separated by commas; the empty string lists nothing.
        /// - Throws: ``CourierError/Code/invalidProxyConfiguration`` for an entry with a port that
        ///   is not a number from 1 to 65535, a CIDR block whose address does not parse or whose
        ///   prefix length is too long for its family, a bracketed or colon-separated entry that is
        ///   not an IP address.
        public init(_ list: String) throws(CourierError) {
            var entries: [Entry] = []
            let tokens = list.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" })
            for token in tokens {
                if let entry = try Self.entry(String(token), list: list) {
                    entries.append(entry)
                }
            }
            self.init(entries: entries, description: list)
        }

        /// Reads a `no_proxy` list as curl and Go read the environment's: an entry that cannot be
        /// read matches nothing, and the others stand (AWS's documented
        /// `NO_PROXY=169.254.169.254,169.254.170.2,/var/run/docker.sock` lists a path).
        init(readingWhatCanBeRead list: String) {
            var entries: [Entry] = []
            for token in list.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) {
                if let entry = try? Self.entry(String(token), list: list) { entries.append(entry) }
            }
            self.init(entries: entries, description: list)
        }

        /// Whether the list names no host.
        public var isEmpty: Bool { self.entries.isEmpty }

        /// Whether a request to `host` on `port` bypasses the proxies.
        /// - Parameters:
        ///   - host: A host name or an IP address (an IPv6 address with or without brackets).
        ///   - port: The port the request goes to.
        /// - Returns: Whether an entry matches.
        public func contains(host: String, port: Int) -> Bool {
            guard !self.entries.isEmpty else { return false }
            var name = host
            if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
            let address = IPAddress(name)
            if address == nil {
                // Names compare in their ASCII (IDNA) form, as Go's and curl's lists do: an entry
                // `xn--bcher-kva.example` or `bücher.example` covers `http://bücher.example/`.
                name = Punycode.comparableHost(name)
                if name.hasSuffix(".") { name.removeLast() }
            }
            for entry in self.entries {
                switch entry {
                case .everything:
                    return true
                case .domain(let domain, let entryPort):
                    guard address == nil, entryPort == nil || entryPort == port else { continue }
                    if name == domain || name.hasSuffix("." + domain) { return true }
                case .network(let network, let prefixLength, let entryPort):
                    guard let address, entryPort == nil || entryPort == port else { continue }
                    if network.contains(address, prefixLength: prefixLength) { return true }
                }
            }
            return false
        }

        /// One entry, or nil for one that names nothing (a lone dot).
        private static func entry(_ token: String, list: String) throws(CourierError) -> Entry? {
            func invalid(_ why: String) -> CourierError {
                CourierError(.invalidProxyConfiguration, "no_proxy entry '\(token)' in '\(list)': \(why)")
            }
            if token == "*" { return .everything }
            var hostPart = token
            var port: Int?
            if token.hasPrefix("[") {
                guard let close = token.firstIndex(of: "]") else { throw invalid("an opening bracket without a closing one") }
                hostPart = String(token[token.index(after: token.startIndex)..<close])
                let rest = token[token.index(after: close)...]
                if !rest.isEmpty {
                    guard rest.hasPrefix(":") else { throw invalid("only a port may follow the brackets") }
                    port = try Self.port(String(rest.dropFirst()), invalid: invalid)
                }
                guard hostPart.contains(":") else { throw invalid("brackets hold an IPv6 address") }
            } else if token.filter({ $0 == ":" }).count == 1 {
                let colon = token.firstIndex(of: ":")!
                hostPart = String(token[..<colon])
                port = try Self.port(String(token[token.index(after: colon)...]), invalid: invalid)
            }
            if let slash = hostPart.firstIndex(of: "/") {
                guard let address = IPAddress(String(hostPart[..<slash])) else {
                    throw invalid("a CIDR block starts with an IP address")
                }
                let bits = hostPart[hostPart.index(after: slash)...]
                let maximum = address.isIPv6 ? 128 : 32
                guard let prefixLength = Int(bits), bits.allSatisfy({ $0.isASCII && $0.isNumber }), (0...maximum).contains(prefixLength) else {
                    throw invalid("the prefix length must be a number from 0 to \(maximum)")
                }
                return .network(address, prefixLength: prefixLength, port: port)
            }
            if let address = IPAddress(hostPart) {
                return .network(address, prefixLength: address.bytes.count * 8, port: port)
            }
            if hostPart.contains(":") { throw invalid("not an IP address") }
            var domain = Punycode.comparableHost(hostPart)
            if domain.hasPrefix("*.") { domain.removeFirst() }
            while domain.hasPrefix(".") { domain.removeFirst() }
            while domain.hasSuffix(".") { domain.removeLast() }
            guard !domain.isEmpty else { return nil }
            return .domain(domain, port: port)
        }

        private static func port(_ text: String, invalid: (String) -> CourierError) throws(CourierError) -> Int {
            guard let port = Int(text), text.allSatisfy({ $0.isASCII && $0.isNumber }), (1...65535).contains(port) else {
                throw invalid("the port must be a number from 1 to 65535")
            }
            return port
        }
    }
}

extension IPAddress {
    /// Whether `other` is in the block of addresses that share this address's first
    /// `prefixLength` bits (false across families).
    func contains(_ other: IPAddress, prefixLength: Int) -> Bool {
        guard self.bytes.count == other.bytes.count else { return false }
        var remaining = min(prefixLength, self.bytes.count * 8)
        var index = 0
        while remaining >= 8 {
            if self.bytes[index] != other.bytes[index] { return false }
            remaining -= 8
            index += 1
        }
        if remaining > 0 {
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - remaining))
            if self.bytes[index] & mask != other.bytes[index] & mask { return false }
        }
        return true
    }
}
