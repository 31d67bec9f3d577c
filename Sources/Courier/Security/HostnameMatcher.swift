import Foundation
import NIOSSL
import SwiftASN1
import X509

/// Whether a certificate names a host (RFC 6125), as the SSL policy of ``SecTrustPolicy`` checks
/// it.
///
/// Only subject alternative names count; a certificate without such a name names no host (no fallback
/// to the common name). A DNS name matches byte for byte but for the case of ASCII letters (RFC
/// 6125 6.4.1: not Unicode's, where U+212A KELVIN SIGN is a `k`, nor Swift's string equality,
/// where canonically equivalent strings are equal), its labels split at every dot, a trailing
/// dot on the host ignored (a name that ends in a dot names no host, as in `SecTrust`'s
/// `SecDNSMatch`); a `*` is allowed only as the whole left-most label, matches exactly one
/// non-empty label, needs at least two labels after it, and never matches an IP address. An IP
/// address (v4 or v6, with or without brackets, an IPv6 zone left out) matches only an iPAddress
/// name with the same bytes.
enum HostnameMatcher {
    /// A subject alternative name that can name a host.
    enum Name: Equatable, Sendable, CustomStringConvertible {
        case dns(String)
        case ip([UInt8])

        /// The name as a reader writes it: `*.example.com`, `127.0.0.1`, `::1`.
        var description: String {
            switch self {
            case .dns(let name): name
            case .ip(let bytes): IPAddress(bytes: bytes)?.description ?? bytes.map(String.init).joined(separator: ".")
            }
        }
    }

    /// The DNS and IP subject alternative names of a certificate.
    static func names(of certificate: NIOSSLCertificate) -> [Name] {
        certificate._subjectAlternativeNames().compactMap { name in
            switch name.nameType {
            case .dnsName: String(bytes: Array(name.contents), encoding: .utf8).map(Name.dns)
            case .ipAddress: .ip(Array(name.contents))
            default: nil
            }
        }
    }

    /// The DNS and IP subject alternative names of a certificate parsed by swift-certificates;
    /// none when the extension is absent or malformed.
    static func names(of certificate: X509.Certificate) -> [Name] {
        guard let names = try? certificate.extensions.subjectAlternativeNames else { return [] }
        return names.compactMap { name in
            switch name {
            case .dnsName(let text): .dns(text)
            case .ipAddress(let octets): .ip(Array(octets.bytes))
            default: nil
            }
        }
    }

    /// `host` as certificates name it: a Unicode host name with its labels in their ASCII form
    /// (`bücher.example` is `xn--bcher-kva.example`: RFC 6125 6.4.2 and RFC 9525 6.3 have a
    /// client convert a reference identifier's U-labels to A-labels before checking it); an
    /// ASCII host, or an IP address, as it is.
    static func referenceName(_ host: String) -> String {
        guard !host.utf8.allSatisfy({ $0 < 0x80 }), IPAddress(host: host) == nil else { return host }
        return Punycode.asciiHost(host) ?? host
    }

    /// Whether one of `names` names `host`.
    static func matches(host: String, names: [Name]) -> Bool {
        var host = Substring(host)
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        // An IP address with a trailing dot is still an address, never a name to match a `*` with.
        // An IPv6 address's zone (`fe80::1%eth0`) says which interface reaches it and is no part
        // of the address: it matches the address's iPAddress name, as SNI and the policy's lookup
        // already treat it (it was matched as a DNS name, and no iPAddress name matched it).
        if let address = IPAddress(host: host.hasSuffix(".") ? host.dropLast() : host) {
            return names.contains { $0 == .ip(address.bytes) }
        }
        guard let hostLabels = Self.labels(String(host), ignoringTrailingDot: true) else { return false }
        return names.contains { name in
            guard case .dns(let pattern) = name, let patternLabels = Self.labels(pattern, ignoringTrailingDot: false) else { return false }
            return Self.matches(hostLabels, pattern: patternLabels)
        }
    }

    private static func matches(_ host: [ArraySlice<UInt8>], pattern: [ArraySlice<UInt8>]) -> Bool {
        let star = UInt8(ascii: "*")
        guard host.count == pattern.count else { return false }
        // A `*` anywhere but as the whole first label matches nothing.
        guard !pattern.dropFirst().contains(where: { $0.contains(star) }) else { return false }
        if pattern[0].elementsEqual([star]) {
            return pattern.count >= 3 && host.dropFirst() == pattern.dropFirst()
        }
        return !pattern[0].contains(star) && host == pattern
    }

    /// A name's labels, as UTF-8 with ASCII letters lowercased, split at each dot; nil when empty
    /// or with an empty label (one after a trailing dot too, unless `ignoringTrailingDot`).
    private static func labels(_ name: String, ignoringTrailingDot: Bool) -> [ArraySlice<UInt8>]? {
        var bytes = name.utf8.map(\.lowercasedASCII)[...]
        if ignoringTrailingDot, bytes.last == UInt8(ascii: ".") { bytes = bytes.dropLast() }
        let labels = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard !bytes.isEmpty, !labels.contains(where: \.isEmpty) else { return nil }
        return labels
    }
}
