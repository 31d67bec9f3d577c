import Foundation
import NIOSSL

extension Certificate {
    /// The certificate's SubjectPublicKeyInfo (DER): what public-key pinning compares.
    public var publicKeyBytes: Data {
        // `Certificate` checked its bytes when it was made, so parsing cannot fail here.
        guard let certificate = try? self.nioCertificate(),
            let spki = try? certificate.extractPublicKey().toSPKIBytes()
        else { return Data() }
        return Data(spki)
    }

    /// Whether the issuer's name is the subject's (a root authority or a self-signed leaf): such a
    /// certificate is a trust anchor for BoringSSL as it is; an intermediate needs its
    /// ``AnchorTwin``.
    var isSelfIssued: Bool {
        guard let names = DERReader.issuerAndSubject(of: Array(self.derBytes)) else { return false }
        return names.issuer == names.subject
    }

    /// Whether the certificate's basic constraints say it is a certificate authority.
    var isCertificateAuthority: Bool {
        DERReader.basicConstraintsCA(of: Array(self.derBytes))
    }

}

/// Just enough DER to find a certificate's issuer and subject names.
enum DERReader {
    /// The issuer and subject Name elements of a certificate, as raw DER.
    static func issuerAndSubject(of der: [UInt8]) -> (issuer: ArraySlice<UInt8>, subject: ArraySlice<UInt8>)? {
        // Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL, serial,
        //   signature, issuer, validity, subject, … } … }
        guard let certificate = element(in: der[...]), certificate.tag == 0x30,
            let tbs = element(in: certificate.content), tbs.tag == 0x30
        else { return nil }
        var rest = tbs.content
        var fields: [ArraySlice<UInt8>] = []
        while fields.count < 6, let field = element(in: rest) {
            if fields.isEmpty, field.tag == 0xA0 {
                rest = field.remainder
                continue
            }
            fields.append(field.whole)
            rest = field.remainder
        }
        // serial, signature, issuer, validity, subject
        guard fields.count >= 5 else { return nil }
        return (fields[2], fields[4])
    }

    /// Whether the basicConstraints extension (OID 2.5.29.19) sets cA to TRUE.
    static func basicConstraintsCA(of der: [UInt8]) -> Bool {
        let oid: [UInt8] = [0x06, 0x03, 0x55, 0x1D, 0x13]
        guard der.count > oid.count else { return false }
        for start in 0...(der.count - oid.count) where Array(der[start..<start + oid.count]) == oid {
            var rest = der[(start + oid.count)...]
            // Extension ::= SEQUENCE { extnID, critical BOOLEAN DEFAULT FALSE, extnValue OCTET STRING }
            if let critical = element(in: rest), critical.tag == 0x01 { rest = critical.remainder }
            guard let value = element(in: rest), value.tag == 0x04,
                let constraints = element(in: value.content), constraints.tag == 0x30,
                let flag = element(in: constraints.content), flag.tag == 0x01
            else { return false }
            return flag.content.first.map { $0 != 0 } ?? false
        }
        return false
    }

    /// The first DER element of `bytes`: its tag, content, whole encoding and what follows it.
    static func element(
        in bytes: ArraySlice<UInt8>
    ) -> (tag: UInt8, content: ArraySlice<UInt8>, whole: ArraySlice<UInt8>, remainder: ArraySlice<UInt8>)? {
        var index = bytes.startIndex
        guard index < bytes.endIndex else { return nil }
        let tag = bytes[index]
        index += 1
        guard index < bytes.endIndex else { return nil }
        var length = Int(bytes[index])
        index += 1
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count > 0, count <= 4, index + count <= bytes.endIndex else { return nil }
            length = 0
            for byte in bytes[index..<index + count] { length = length << 8 | Int(byte) }
            index += count
        }
        guard length >= 0, index + length <= bytes.endIndex else { return nil }
        let end = index + length
        return (tag, bytes[index..<end], bytes[bytes.startIndex..<end], bytes[end...])
    }
}
