import NIOSSL
import X509

/// What a TLS handshake on one of Courier's connections agreed, once the server was trusted.
struct TLSHandshakeResult: Sendable {
    /// The protocol ALPN chose; HTTP/1.1 when the server chose none.
    let applicationProtocol: TLSConnector.ApplicationProtocol
    /// The TLS version agreed, when swift-nio-ssl names it.
    let tlsVersion: SecurityPolicy.TLSVersion?
    /// The cipher suite the server chose in its `ServerHello`; nil when it could not be read.
    let cipherSuite: TLSCipherSuite?
    /// The chain the policy validated, leaf first; nil when it trusted the server without
    /// validating a chain (invalid certificates allowed).
    let validatedChain: [X509.Certificate]?
}

extension SecurityPolicy.TLSVersion {
    /// swift-nio-ssl's version as Courier's.
    init(_ version: NIOSSL.TLSVersion) {
        switch version {
        case .tlsv1: self = .v1_0
        case .tlsv11: self = .v1_1
        case .tlsv12: self = .v1_2
        case .tlsv13: self = .v1_3
        }
    }
}
