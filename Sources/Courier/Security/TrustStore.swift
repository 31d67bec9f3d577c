import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The certificates a chain is evaluated against when ``SecurityPolicy`` asks whether it is valid
/// "against the system's roots" (what Apple's `SecTrust` does with its default anchors): the
/// system's bundle, then ``SecurityPolicy/additionalTrustedCertificates``.
///
/// Any certificate in the store is a trust anchor, self-signed or not, as with
/// `SecTrustSetAnchorCertificates`. Tests make one of their own roots to stand for the system's.
struct TrustStore: Sendable {
    /// The anchors, parsed.
    let certificates: [X509.Certificate]
    /// The certificates of the system's bundle that could not be parsed (skipped, not fatal).
    let skippedCount: Int
    /// The anchors as swift-certificates' verifier takes them, built once per store: every
    /// engine's evaluators share the system store's instead of indexing its 150 roots again.
    let certificateStore: CertificateStore

    /// A store of exactly `certificates`.
    init(_ certificates: [X509.Certificate], skippedCount: Int = 0) {
        self.init(certificates, skippedCount: skippedCount, certificateStore: CertificateStore(certificates))
    }

    private init(_ certificates: [X509.Certificate], skippedCount: Int, certificateStore: CertificateStore) {
        self.certificates = certificates
        self.skippedCount = skippedCount
        self.certificateStore = certificateStore
    }

    /// A store of `certificates`; those swift-certificates cannot parse are skipped and counted.
    init(_ certificates: [Certificate]) {
        let parsed = certificates.compactMap(\.x509)
        self.init(parsed, skippedCount: certificates.count - parsed.count)
    }

    /// The system's roots: the first bundle of ``systemBundlePaths`` that exists (the file
    /// swift-nio-ssl's default trust roots come from), read once per process on first use; empty
    /// when there is none.
    ///
    /// Reading and parsing the bundle (about 150 certificates) takes a few milliseconds: make the
    /// first use off the event loops (``TLSConnector`` does, when it is made).
    static let system: TrustStore = {
        for path in Self.systemBundlePaths where FileManager.default.fileExists(atPath: path) {
            if let store = Self.load(bundleAt: path) { return store }
        }
        return TrustStore([])
    }()

    /// Where Linux distributions keep their bundle of trusted roots (Debian and Ubuntu, Alpine and
    /// Arch, then Fedora), as swift-nio-ssl looks for it.
    static let systemBundlePaths = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"]

    /// Every certificate of a PEM bundle; certificates this parser refuses are skipped and
    /// counted. Nil when the file cannot be read as PEM certificates at all.
    static func load(bundleAt path: String) -> TrustStore? {
        guard let parsed = try? NIOSSLCertificate.fromPEMFile(path) else { return nil }
        var certificates: [X509.Certificate] = []
        certificates.reserveCapacity(parsed.count)
        var skipped = 0
        for certificate in parsed {
            if let der = try? certificate.toDERBytes(), let x509 = try? X509.Certificate(derEncoded: der) {
                certificates.append(x509)
            } else {
                skipped += 1
            }
        }
        return TrustStore(certificates, skippedCount: skipped)
    }

    /// This store and `additional` after it (``SecurityPolicy/additionalTrustedCertificates``).
    func adding(_ additional: [Certificate]) -> TrustStore {
        let parsed = additional.compactMap(\.x509)
        guard !parsed.isEmpty else { return self }
        return TrustStore(
            self.certificates + parsed, skippedCount: self.skippedCount,
            certificateStore: self.certificateStore.appending(contentsOf: parsed))
    }
}

extension Certificate {
    /// The certificate parsed by swift-certificates, or nil when its stricter parser refuses it.
    var x509: X509.Certificate? {
        try? X509.Certificate(derEncoded: Array(self.derBytes))
    }
}
