import Foundation

/// A security policy per host, with a default for the rest (Alamofire's `ServerTrustManager`,
/// beyond AFNetworking's one policy per manager).
///
/// Keys are host names, exact (`api.example.com`) or wildcard (`*.example.com`, which matches one
/// more label: `a.example.com`, not `example.com` nor `a.b.example.com`). An exact key wins over a
/// wildcard. Hosts compare case-insensitively.
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
    /// The policies by host name or wildcard, lowercased.
    public private(set) var policies: [String: SecurityPolicy] = [:]

    /// Policies with `defaultPolicy` for every host.
    public init(default defaultPolicy: SecurityPolicy = .default) {
        self.defaultPolicy = defaultPolicy
    }

    /// The policy set for `host` (exact or wildcard key), or nil.
    public subscript(host: String) -> SecurityPolicy? {
        get { self.policies[host.lowercased()] }
        set { self.policies[host.lowercased()] = newValue }
    }

    /// The policy that applies to `host`: its exact entry, else the wildcard one, else the default.
    public func policy(forHost host: String?) -> SecurityPolicy {
        guard let host = host?.lowercased(), !self.policies.isEmpty else { return self.defaultPolicy }
        if let exact = self.policies[host] { return exact }
        if let dot = host.firstIndex(of: "."), let wildcard = self.policies["*" + host[dot...]] {
            return wildcard
        }
        return self.defaultPolicy
    }

    /// Every distinct policy: the default first.
    var distinctPolicies: [SecurityPolicy] {
        var result = [self.defaultPolicy]
        for policy in self.policies.values where !result.contains(policy) { result.append(policy) }
        return result
    }
}
