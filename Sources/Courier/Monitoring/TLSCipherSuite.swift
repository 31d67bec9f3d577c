/// A TLS cipher suite by its IANA number (URLSession's `tls_ciphersuite_t`), as the server chose
/// it in its `ServerHello`: ``TransactionMetrics/tlsCipherSuite``.
public struct TLSCipherSuite: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The suite's two-byte number from the IANA TLS Cipher Suites registry.
    public let rawValue: UInt16

    /// The suite numbered `rawValue`.
    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// The IANA name (`TLS_AES_128_GCM_SHA256`) of a suite Courier knows, nil for others.
    public var name: String? { Self.names[self.rawValue] }

    /// The IANA name, or the number in hex (`0xC0AF`) for a suite Courier has no name for.
    public var description: String {
        self.name ?? "0x" + String(self.rawValue, radix: 16, uppercase: true).leftPadded(to: 4)
    }

    // TLS 1.3 (RFC 8446).
    public static let TLS_AES_128_GCM_SHA256 = TLSCipherSuite(rawValue: 0x1301)
    public static let TLS_AES_256_GCM_SHA384 = TLSCipherSuite(rawValue: 0x1302)
    public static let TLS_CHACHA20_POLY1305_SHA256 = TLSCipherSuite(rawValue: 0x1303)
    // TLS 1.2 with forward secrecy.
    public static let TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 = TLSCipherSuite(rawValue: 0xC02B)
    public static let TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 = TLSCipherSuite(rawValue: 0xC02C)
    public static let TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 = TLSCipherSuite(rawValue: 0xC02F)
    public static let TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 = TLSCipherSuite(rawValue: 0xC030)
    public static let TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 = TLSCipherSuite(rawValue: 0xCCA8)
    public static let TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 = TLSCipherSuite(rawValue: 0xCCA9)

    private static let names: [UInt16: String] = [
        0x002F: "TLS_RSA_WITH_AES_128_CBC_SHA",
        0x0035: "TLS_RSA_WITH_AES_256_CBC_SHA",
        0x009C: "TLS_RSA_WITH_AES_128_GCM_SHA256",
        0x009D: "TLS_RSA_WITH_AES_256_GCM_SHA384",
        0x1301: "TLS_AES_128_GCM_SHA256",
        0x1302: "TLS_AES_256_GCM_SHA384",
        0x1303: "TLS_CHACHA20_POLY1305_SHA256",
        0xC009: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        0xC00A: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        0xC013: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        0xC014: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        0xC02B: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        0xC02C: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        0xC02F: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        0xC030: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        0xCCA8: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        0xCCA9: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    ]
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        self.count >= width ? self : String(repeating: "0", count: width - self.count) + self
    }
}
