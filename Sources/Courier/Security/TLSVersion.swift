import NIOSSL

extension SecurityPolicy {
    /// A TLS protocol version, for ``SecurityPolicy/minimumTLSVersion``.
    public struct TLSVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
        let rank: Int

        /// TLS 1.0 (RFC 2246). Deprecated by RFC 8996.
        public static let v1_0 = TLSVersion(rank: 10)
        /// TLS 1.1 (RFC 4346). Deprecated by RFC 8996.
        public static let v1_1 = TLSVersion(rank: 11)
        /// TLS 1.2 (RFC 5246).
        public static let v1_2 = TLSVersion(rank: 12)
        /// TLS 1.3 (RFC 8446).
        public static let v1_3 = TLSVersion(rank: 13)

        public static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool { lhs.rank < rhs.rank }

        public var description: String { "TLS \(self.rank / 10).\(self.rank % 10)" }

        var nio: NIOSSL.TLSVersion {
            switch self.rank {
            case 10: .tlsv1
            case 11: .tlsv11
            case 13: .tlsv13
            default: .tlsv12
            }
        }
    }
}
