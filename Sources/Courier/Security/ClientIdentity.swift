import CCourierPKCS12
import Foundation
import NIOSSL
import SwiftASN1

/// A certificate chain and its private key, presented when a server asks for a client certificate
/// (mutual TLS). Set it as ``SecurityPolicy/clientIdentity``.
public struct ClientIdentity: Sendable, Hashable {
    /// The client's certificate first, then any intermediates.
    public let certificateChain: [Certificate]
    /// The private key (DER).
    let privateKeyDER: Data

    /// An identity from PEM texts.
    /// - Parameters:
    ///   - certificatePEM: The certificate (and intermediates) as PEM.
    ///   - privateKeyPEM: The private key as PEM (PKCS#8, PKCS#1 or SEC1; RSA, EC or Ed25519),
    ///     encrypted or not: PKCS#8 with PBES2 (PBKDF2 with HMAC-SHA-1 or -SHA-2, or scrypt, and
    ///     AES-CBC; 3DES under PBKDF2 with HMAC-SHA-1 or -SHA-256), PKCS#5 v1.5 or PKCS#12 schemes,
    ///     or a traditional `Proc-Type: 4,ENCRYPTED` key.
    ///   - passphrase: The passphrase of an encrypted key.
    /// - Throws: ``CourierError/Code/invalidRequest`` when either does not parse, when the key is
    ///   encrypted and no passphrase (or another one) was given, when it is encrypted with a scheme
    ///   Courier cannot open (the message names it), or when the key is not the certificate's:
    ///   checked here, not at the first handshake.
    public init(certificatePEM: String, privateKeyPEM: String, passphrase: String? = nil) throws(CourierError) {
        self.certificateChain = try Certificate.certificates(pemEncoded: certificatePEM)
        let encrypted = privateKeyPEM.contains("ENCRYPTED")
        if encrypted && passphrase == nil {
            throw CourierError(.invalidRequest, "the private key is encrypted, and no passphrase was given for it")
        }
        do {
            let key: NIOSSLPrivateKey
            if let passphrase {
                key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem) { setter in setter(Array(passphrase.utf8)) }
            } else {
                key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
            }
            // An Ed25519 key (RFC 8410) has no DER BoringSSL writes: the PEM's own PKCS#8 is kept.
            self.privateKeyDER = try Self.der(of: key) { PEMDocument.derBytes(ofFirst: "PRIVATE KEY", in: privateKeyPEM) }
        } catch {
            guard encrypted, let passphrase else {
                throw CourierError(.invalidRequest, "the PEM text holds no usable private key", underlyingError: error)
            }
            self.privateKeyDER = try Self.openedByCourier(privateKeyPEM, passphrase: passphrase, boringSSLError: error)
        }
        try self.checkPair()
    }

    /// The key's DER as BoringSSL writes it (RSA and EC keys only), else `pkcs8()` when BoringSSL
    /// reads that back.
    private static func der(of key: NIOSSLPrivateKey, pkcs8: () -> [UInt8]?) throws -> Data {
        do {
            return Data(try key.derBytes)
        } catch {
            guard let der = pkcs8(), (try? NIOSSLPrivateKey(bytes: der, format: .der)) != nil else { throw error }
            return Data(der)
        }
    }

    /// The DER of an encrypted PKCS#8 key BoringSSL did not open, opened by
    /// ``EncryptedPrivateKey`` (PBKDF2 with an HMAC-SHA-2 PRF BoringSSL lacks, or scrypt), or the
    /// error that says why not: a scheme neither can use is named, not called a wrong passphrase.
    private static func openedByCourier(_ pem: String, passphrase: String, boringSSLError: any Error) throws(CourierError) -> Data {
        let wrongPassphrase = "the passphrase does not open the encrypted private key"
        let plaintext: [UInt8]
        do {
            plaintext = try EncryptedPrivateKey.decrypt(pem: pem, passphrase: passphrase)
        } catch {
            switch error {
            case .notRead, .wrongPassphrase:
                throw CourierError(.invalidRequest, wrongPassphrase, underlyingError: boringSSLError)
            case .unsupported(let scheme):
                throw CourierError(
                    .invalidRequest,
                    "the private key is encrypted with \(scheme), which Courier cannot open (re-encrypt it with AES-CBC, or store it unencrypted)",
                    underlyingError: boringSSLError)
            }
        }
        // The padding can come out right by chance under another passphrase: the key inside must parse.
        do {
            return try Self.der(of: try NIOSSLPrivateKey(bytes: plaintext, format: .der)) { plaintext }
        } catch {
            throw CourierError(.invalidRequest, wrongPassphrase, underlyingError: boringSSLError)
        }
    }

    /// An identity from PEM files.
    /// - Parameters:
    ///   - certificateFile: The certificate (and intermediates) as PEM.
    ///   - privateKeyFile: The private key as PEM (PKCS#8, PKCS#1 or SEC1), encrypted or not.
    ///   - passphrase: The passphrase of an encrypted key.
    /// - Throws: ``CourierError/Code/fileSystemFailure`` when a file cannot be read,
    ///   ``CourierError/Code/invalidRequest`` when it does not parse or the key is not the
    ///   certificate's.
    public init(certificateFile: URL, privateKeyFile: URL, passphrase: String? = nil) throws(CourierError) {
        try self.init(
            certificatePEM: try Self.text(of: certificateFile), privateKeyPEM: try Self.text(of: privateKeyFile), passphrase: passphrase)
    }

    /// Throws unless the key is the private key of the chain's first certificate: BoringSSL, as
    /// it would at the first handshake, refuses the pair (the chain is never empty: parsing
    /// refuses a PEM text without a certificate).
    private func checkPair() throws(CourierError) {
        do {
            let (chain, key) = try self.nioChainAndKey()
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateChain = chain
            configuration.privateKey = key
            configuration.trustRoots = .certificates([])
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw CourierError(.invalidRequest, "the private key is not the certificate's (its public key is another)", underlyingError: error)
        }
    }

    /// An identity from a PKCS#12 (`.p12`, `.pfx`) file.
    /// - Parameters:
    ///   - pkcs12File: The file.
    ///   - passphrase: Its passphrase, if it has one.
    /// - Throws: ``CourierError/Code/fileSystemFailure`` when the file cannot be read;
    ///   ``CourierError/Code/invalidRequest`` when it is not a bundle the passphrase opens, or holds
    ///   no private key, or no certificate of its key.
    public init(pkcs12File: URL, passphrase: String? = nil) throws(CourierError) {
        let bytes: Data
        do {
            bytes = try Certificate.contents(of: pkcs12File)
        } catch {
            throw CourierError(.fileSystemFailure, "cannot read \(pkcs12File.path)", underlyingError: error)
        }
        // Asked first: swift-nio-ssl ends the process on a bundle that opens without a key or
        // without the key's certificate (`-nokeys`, `-nocerts`, a key with another's certificate).
        let check = bytes.withUnsafeBytes { raw in
            passphrase.withOptionalCString { courier_pkcs12_check(raw.bindMemory(to: UInt8.self).baseAddress, raw.count, $0) }
        }
        switch check {
        case COURIER_PKCS12_NO_KEY:
            throw CourierError(.invalidRequest, "\(pkcs12File.path) holds no private key")
        case COURIER_PKCS12_NO_CERTIFICATE:
            throw CourierError(.invalidRequest, "\(pkcs12File.path) holds no certificate of its private key")
        default:
            break  // Usable, or unreadable: swift-nio-ssl says why below.
        }
        let bundle: NIOSSLPKCS12Bundle
        do {
            bundle = try NIOSSLPKCS12Bundle(buffer: Array(bytes), passphrase: passphrase.map { Array($0.utf8) })
            self.certificateChain = try bundle.certificateChain.map { Certificate(trustedDER: Data(try $0.toDERBytes())) }
            self.privateKeyDER = Data(try bundle.privateKey.derBytes)
        } catch {
            throw CourierError(.invalidRequest, "\(pkcs12File.path) is not a PKCS#12 bundle this passphrase opens", underlyingError: error)
        }
    }

    private static func text(of url: URL) throws(CourierError) -> String {
        do {
            return String(decoding: try Certificate.contents(of: url), as: UTF8.self)
        } catch {
            throw CourierError(.fileSystemFailure, "cannot read \(url.path)", underlyingError: error)
        }
    }

    func nioChainAndKey() throws -> ([NIOSSLCertificateSource], NIOSSLPrivateKeySource) {
        let chain = try self.certificateChain.map { NIOSSLCertificateSource.certificate(try $0.nioCertificate()) }
        let key = try NIOSSLPrivateKey(bytes: Array(self.privateKeyDER), format: .der)
        return (chain, .privateKey(key))
    }
}

extension Optional<String> {
    /// The string as a C string, or a null pointer, for the duration of `body`.
    fileprivate func withOptionalCString<Result>(_ body: (UnsafePointer<CChar>?) -> Result) -> Result {
        switch self {
        case .some(let text): text.withCString { body($0) }
        case .none: body(nil)
        }
    }
}

extension ClientIdentity: CustomReflectable {
    /// The certificate chain alone: the private key is left out of what `dump`, a debugger or a
    /// crash reporter that reflects shows (Foundation's `Data` mirrors the bytes of a small one,
    /// and an EC or Ed25519 key is small; the identity is reachable from every TLS error's
    /// ``ServerTrustFailure/policy``).
    public var customMirror: Mirror {
        Mirror(self, children: ["certificateChain": self.certificateChain, "privateKey": "(hidden)"], displayStyle: .struct)
    }
}
