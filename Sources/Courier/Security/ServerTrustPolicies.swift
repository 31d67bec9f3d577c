import Foundation

/// A security policy per host, with a default for the rest (Alamofire's `ServerTrustManager`,
/// beyond AFNetworking's one policy per manager).
///
/// Keys are host names, exact (`api.example.com`) or wildcard (`*.example.com`, which matches one
/// more label: `a.example.com`, not `example.com` nor `a.b.example.com`). An exact key wins over a
/// wildcard. Hosts compare as DNS names: without regard to case, a trailing dot (the root's
/// label: `api.example.com.` is `api.example.com`) or the brackets of an IPv6 address, Unicode
/// names in their ASCII form (`bücher.example` is `xn--bcher-kva.example`), keys and hosts alike.
/// (A pinned host reached by its name with a trailing dot got the default policy before: a
/// redirect to `https://api.example.com./` passed by the pins.)
///
/// ```swift
/// var trust = ServerTrustPolicies(default: .default)
/// trust["api.example.com"] = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: pins)
/// let engine = NIOEngine(serverTrust: trust)
/// let manager = HTTPSessionManager(baseURL: URL(string: "https://api.example.com/")!, engine: engine)
/// ```
///
/// ``NIOEngine`` picks the policy for each connection by its host, in the TLS handshake.
public struct ServerTrustPolicies: Sendable, Hashable {
    /// The policy for hosts with no entry.
    public var defaultPolicy: SecurityPolicy
    /// The policies by host name or wildcard, in the form hosts are compared in (lowercased,
    /// without a trailing dot, Unicode labels in their ASCII form).
    public private(set) var policies: [String: SecurityPolicy] = [:]

    /// Policies with `defaultPolicy` for every host.
    public init(default defaultPolicy: SecurityPolicy = .default) {
        self.defaultPolicy = defaultPolicy
    }

    /// The policy set for `host` (exact or wildcard key), or nil.
    public subscript(host: String) -> SecurityPolicy? {
        get { self.policies[Self.normalized(host)] }
        set { self.policies[Self.normalized(host)] = newValue }
    }

    /// The policy that applies to `host`: its exact entry, else the wildcard one, else the default.
    public func policy(forHost host: String?) -> SecurityPolicy {
        guard !self.policies.isEmpty, let host = host.map(Self.normalized) else { return self.defaultPolicy }
        if let exact = self.policies[host] { return exact }
        if let dot = host.firstIndex(of: "."), let wildcard = self.policies["*" + host[dot...]] {
            return wildcard
        }
        return self.defaultPolicy
    }

    /// `host` as hosts are compared: lowercased, without the brackets of an IPv6 address or one
    /// trailing dot, Unicode labels in their ASCII (IDNA) form; an IP address in its one written
    /// form, without a zone (`0:0:0:0:0:0:0:1`, `[0::1]` and `::1%lo` are `::1`: each spelling of a
    /// pinned address is the pinned address, as the certificate check compares addresses by bytes).
    static func normalized(_ host: String) -> String {
        if host.contains(":"), let address = IPAddress(host: host) { return address.description }
        var name = Substring(host)
        if name.hasPrefix("["), name.hasSuffix("]") { name = name.dropFirst().dropLast() }
        if name.count > 1, name.hasSuffix(".") { name = name.dropLast() }
        return Punycode.comparableHost(name)
    }

    /// Every distinct policy: the default first.
    var distinctPolicies: [SecurityPolicy] {
        var result = [self.defaultPolicy]
        for policy in self.policies.values where !result.contains(policy) { result.append(policy) }
        return result
    }
}
