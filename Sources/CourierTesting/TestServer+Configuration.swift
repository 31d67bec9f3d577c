import NIOSSL

extension TestServer {
    /// How a ``TestServer`` listens. Every property has a default: `TestServer.Configuration()` is a
    /// plain-HTTP server on `127.0.0.1` and a free port.
    public struct Configuration: Sendable {
        /// The address to bind, `127.0.0.1` by default.
        public var host: String
        /// The port to bind; 0 (the default) lets the system choose a free one. Set it to restart
        /// a server on the port of one that was shut down (a server whose certificate changes).
        public var port: Int
        /// Whether to speak TLS (https). Off by default.
        public var tls: Bool
        /// Which certificate the server presents when ``tls`` is on.
        public var identity: Identity
        /// Whether HTTP/2 is offered next to HTTP/1.1 through ALPN when ``tls`` is on (on by
        /// default). Plain-HTTP servers speak HTTP/1.1 only.
        public var http2: Bool
        /// Whether a TLS server demands a client certificate issued by ``TestCertificates/rootCA``
        /// (mutual TLS; ``TestCertificates/clientCertificate`` is one). Off by default.
        public var requiresClientCertificate: Bool
        /// The newest TLS version a TLS server speaks; nil (the default) for swift-nio-ssl's newest.
        /// Set `.tlsv12` to test a client's minimum version.
        public var maximumTLSVersion: TLSVersion?
        /// Whether every request is kept for ``TestServer/receivedRequests``. Off by default;
        /// ``TestServer/requestCount`` is counted either way.
        public var recordsRequests: Bool
        /// A Unix-domain socket to listen on instead of ``host`` and ``port`` (a file there is
        /// replaced, and removed at shutdown); nil (the default) for TCP. Such a server's
        /// ``TestServer/baseURL`` names `localhost` without a port: a client maps that host to
        /// the socket.
        public var unixSocketPath: String?

        /// A plain-HTTP/1.1 server on `127.0.0.1` that does not record requests.
        public init() {
            self.host = "127.0.0.1"
            self.port = 0
            self.tls = false
            self.identity = .localhost
            self.http2 = true
            self.requiresClientCertificate = false
            self.maximumTLSVersion = nil
            self.recordsRequests = false
            self.unixSocketPath = nil
        }

        /// An HTTPS server presenting `identity`, offering HTTP/2 and HTTP/1.1.
        /// - Parameter identity: The certificate to present (``Identity/localhost`` by default).
        public static func https(_ identity: Identity = .localhost) -> Configuration {
            var configuration = Configuration()
            configuration.tls = true
            configuration.identity = identity
            return configuration
        }
    }

    /// The certificate a TLS ``TestServer`` presents (see ``TestCertificates``).
    public struct Identity: Sendable, Hashable, CustomStringConvertible {
        enum Base: Sendable, Hashable {
            case localhost, wrongHost, selfSigned, expired
            case custom(name: String, chain: [String], key: String)
        }

        let base: Base

        /// ``TestCertificates/localhostLeaf`` and the intermediate: trusted through ``TestCertificates/rootCA``.
        public static let localhost = Identity(base: .localhost)
        /// ``TestCertificates/wrongHostLeaf`` and the intermediate: a trusted chain for the wrong name.
        public static let wrongHost = Identity(base: .wrongHost)
        /// Any chain and key, as PEM: the leaf first, then the intermediates to send.
        /// - Parameters:
        ///   - name: What ``description`` says (for test names).
        ///   - chainPEM: The certificates to present, leaf first.
        ///   - keyPEM: The leaf's private key.
        public static func custom(_ name: String, chainPEM: [String], keyPEM: String) -> Identity {
            Identity(base: .custom(name: name, chain: chainPEM, key: keyPEM))
        }

        /// ``TestCertificates/selfSignedLeaf`` alone: right name, untrusted issuer.
        public static let selfSigned = Identity(base: .selfSigned)
        /// ``TestCertificates/expiredLeaf`` and the intermediate: right name and issuer, expired.
        public static let expired = Identity(base: .expired)

        /// The identity's name: `localhost`, `wrongHost`, `selfSigned` or `expired`.
        public var description: String {
            if case .custom(let name, _, _) = self.base { return name }
            return "\(self.base)"
        }

        /// The chain presented, leaf first, and the leaf's key, as PEM.
        var pem: (chain: [String], key: String) {
            switch self.base {
            case .localhost: ([TestCertificates.localhostLeaf, TestCertificates.intermediateCA], TestCertificates.localhostKey)
            case .wrongHost: ([TestCertificates.wrongHostLeaf, TestCertificates.intermediateCA], TestCertificates.wrongHostKey)
            case .selfSigned: ([TestCertificates.selfSignedLeaf], TestCertificates.selfSignedKey)
            case .expired: ([TestCertificates.expiredLeaf, TestCertificates.intermediateCA], TestCertificates.expiredKey)
            case .custom(_, let chain, let key): (chain, key)
            }
        }

        func makeTLSConfiguration(http2: Bool, requiresClientCertificate: Bool) throws -> TLSConfiguration {
            let (chain, key) = self.pem
            let certificates = try chain.map { try NIOSSLCertificate(bytes: Array($0.utf8), format: .pem) }
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: certificates.map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(key.utf8), format: .pem))
            )
            configuration.applicationProtocols = http2 ? ["h2", "http/1.1"] : ["http/1.1"]
            if requiresClientCertificate {
                // Client certificates carry no host name to check: verify the chain only.
                configuration.certificateVerification = .noHostnameVerification
                configuration.trustRoots = .certificates([try NIOSSLCertificate(bytes: Array(TestCertificates.rootCA.utf8), format: .pem)])
                // ECDSA, RSA-PSS, RSA and Ed25519, which BoringSSL verifies only when asked (Go's
                // and OpenSSL's servers take Ed25519 client certificates).
                configuration.verifySignatureAlgorithms = [
                    .ecdsaSecp256R1Sha256, .rsaPssRsaeSha256, .rsaPkcs1Sha256, .ecdsaSecp384R1Sha384, .rsaPssRsaeSha384,
                    .rsaPkcs1Sha384, .rsaPssRsaeSha512, .rsaPkcs1Sha512, .ed25519,
                ]
            }
            return configuration
        }
    }
}
