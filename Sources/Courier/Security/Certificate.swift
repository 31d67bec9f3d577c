import Foundation
import NIOSSL

/// An X.509 certificate, kept as its DER bytes and checked when made.
public struct Certificate: Sendable, Hashable {
    /// The certificate's DER encoding.
    public let derBytes: Data

    /// A certificate from DER bytes.
    ///
    /// ``derBytes`` is the certificate's own encoding: bytes after it (a `.cer` file's final line
    /// break) are not kept. BoringSSL reads past them, the chain's evaluation does not: kept, they
    /// made a pin that matched nothing.
    /// - Throws: ``CourierError/Code/invalidRequest`` when the bytes are not a certificate.
    public init(derEncoded bytes: Data) throws(CourierError) {
        do {
            self.derBytes = Data(try NIOSSLCertificate(bytes: Array(bytes), format: .der).toDERBytes())
        } catch {
            throw CourierError(.invalidRequest, "the \(bytes.count) bytes given are not a DER certificate", underlyingError: error)
        }
    }

    /// Every certificate in a PEM text (one or more `BEGIN CERTIFICATE` blocks).
    /// - Throws: ``CourierError/Code/invalidRequest`` when the text holds no certificate or a bad one.
    public static func certificates(pemEncoded text: String) throws(CourierError) -> [Certificate] {
        let parsed: [NIOSSLCertificate]
        do {
            parsed = try NIOSSLCertificate.fromPEMBytes(Array(text.utf8))
        } catch {
            throw CourierError(.invalidRequest, "the PEM text holds an invalid certificate", underlyingError: error)
        }
        guard !parsed.isEmpty else { throw CourierError(.invalidRequest, "the PEM text holds no certificate") }
        var result: [Certificate] = []
        for certificate in parsed {
            do {
                result.append(Certificate(trustedDER: Data(try certificate.toDERBytes())))
            } catch {
                throw CourierError(.invalidRequest, "a PEM certificate could not be re-encoded", underlyingError: error)
            }
        }
        return result
    }

    /// Certificates from a file: PEM (one or more) or a single DER certificate.
    public static func certificates(contentsOf url: URL) throws(CourierError) -> [Certificate] {
        let data: Data
        do {
            data = try Self.contents(of: url)
        } catch {
            throw CourierError(.fileSystemFailure, "cannot read certificate file \(url.path)", underlyingError: error)
        }
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN") {
            return try certificates(pemEncoded: text)
        }
        return [try Certificate(derEncoded: data)]
    }

    init(trustedDER bytes: Data) { self.derBytes = bytes }

    /// A file's bytes, read to its end: a pipe or a FIFO too (a shell's `<(…)`), which
    /// `Data(contentsOf:)` opens and leaves unread.
    static func contents(of url: URL) throws -> Data {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        return try handle.readToEnd() ?? Data()
    }

    func nioCertificate() throws -> NIOSSLCertificate {
        try NIOSSLCertificate(bytes: Array(self.derBytes), format: .der)
    }
}
