import Foundation
import NIOSSL

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
    ///   - privateKeyPEM: The private key as PEM (PKCS#8, PKCS#1 or SEC1), unencrypted.
    /// - Throws: ``CourierError/Code/invalidRequest`` when either does not parse.
    public init(certificatePEM: String, privateKeyPEM: String) throws(CourierError) {
        self.certificateChain = try Certificate.certificates(pemEncoded: certificatePEM)
        do {
            self.privateKeyDER = Data(try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem).derBytes)
        } catch {
            throw CourierError(.invalidRequest, "the PEM text holds no usable private key", underlyingError: error)
        }
    }

    /// An identity from PEM files.
    /// - Throws: ``CourierError/Code/fileSystemFailure`` when a file cannot be read,
    ///   ``CourierError/Code/invalidRequest`` when it does not parse.
    public init(certificateFile: URL, privateKeyFile: URL) throws(CourierError) {
        try self.init(certificatePEM: try Self.text(of: certificateFile), privateKeyPEM: try Self.text(of: privateKeyFile))
    }

    /// An identity from a PKCS#12 (`.p12`, `.pfx`) file.
    /// - Parameters:
    ///   - pkcs12File: The file.
    ///   - passphrase: Its passphrase, if it has one.
    /// - Throws: ``CourierError/Code/fileSystemFailure`` or ``CourierError/Code/invalidRequest``.
    public init(pkcs12File: URL, passphrase: String? = nil) throws(CourierError) {
        let bytes: Data
        do {
            bytes = try Data(contentsOf: pkcs12File)
        } catch {
            throw CourierError(.fileSystemFailure, "cannot read \(pkcs12File.path)", underlyingError: error)
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
            return try String(contentsOf: url, encoding: .utf8)
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
