import Foundation

/// A self-issued stand-in for a pinned intermediate authority, so that BoringSSL can anchor trust
/// on it.
///
/// BoringSSL trusts only self-signed anchors (`EXFLAG_SS`: issuer name equal to subject name, an
/// authority key identifier absent or equal to the subject key identifier, keyCertSign allowed;
/// `v3_purp.cc`, `x509v3_cache_extensions`), and it does not check an anchor's own signature unless
/// `X509_V_FLAG_CHECK_SS_SIGNATURE` is set (`x509_vfy.cc`, `internal_verify`). The twin of an
/// intermediate *I* is *I* with its issuer name replaced by its subject name and its authority key
/// identifier removed: same subject, key, validity and other extensions (basic and name
/// constraints, key usage), *I*'s signature kept as filler. A chain that verifies up to the twin
/// ends in a certificate signed by *I*'s key under *I*'s name, within *I*'s dates: trust anchored
/// on the pinned intermediate.
///
/// The twin never leaves the process: it is only ever handed to BoringSSL as a trust root.
enum AnchorTwin {
    /// The twin of `certificate`, or `nil` when its DER cannot be taken apart.
    static func make(for certificate: Certificate) -> Certificate? {
        let der = Array(certificate.derBytes)
        // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue }
        guard let outer = DERReader.element(in: der[...]), outer.tag == 0x30 else { return nil }
        guard let parts = DERReader.elements(in: outer.content), parts.count == 3, parts[0].tag == 0x30 else { return nil }
        // TBSCertificate ::= SEQUENCE { [0] version, serialNumber, signature, issuer, validity,
        //   subject, subjectPublicKeyInfo, [1] issuerUID, [2] subjectUID, [3] extensions }
        guard var fields = DERReader.elements(in: parts[0].content),
            fields.first?.tag == 0xA0  // v3 only: an authority has extensions
        else { return nil }
        fields.removeFirst()
        guard fields.count >= 6 else { return nil }
        let (serial, signature, validity, subject, publicKey) = (fields[0], fields[1], fields[3], fields[4], fields[5])
        guard let extensions = fields.first(where: { $0.tag == 0xA3 }),
            let wrapped = DERReader.elements(in: extensions.content), wrapped.count == 1, wrapped[0].tag == 0x30,
            let all = DERReader.elements(in: wrapped[0].content)
        else { return nil }
        let authorityKeyIdentifier: [UInt8] = [0x06, 0x03, 0x55, 0x1D, 0x23]
        let kept = all.filter { !$0.content.starts(with: authorityKeyIdentifier) }
        var tbs: [UInt8] = DERWriter.element(0xA0, DERWriter.element(0x02, [0x02]))
        for field in [serial, signature, subject, validity, subject, publicKey] { tbs += field.whole }
        tbs += DERWriter.element(0xA3, DERWriter.element(0x30, kept.flatMap { $0.whole }))
        let twin = DERWriter.element(0x30, DERWriter.element(0x30, tbs) + parts[1].whole + parts[2].whole)
        return try? Certificate(derEncoded: Data(twin))
    }
}

/// Just enough DER writing to build an ``AnchorTwin``.
enum DERWriter {
    /// One element: tag, definite length, content.
    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var length: [UInt8] = []
        if content.count < 0x80 {
            length = [UInt8(content.count)]
        } else {
            var remaining = content.count
            while remaining > 0 {
                length.insert(UInt8(remaining & 0xFF), at: 0)
                remaining >>= 8
            }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return [tag] + length + content
    }
}

extension DERReader {
    /// Every element in `bytes`, in order, or `nil` unless they fill `bytes` exactly (nothing of
    /// an authority's constraints may be dropped unseen).
    static func elements(
        in bytes: ArraySlice<UInt8>
    ) -> [(tag: UInt8, content: ArraySlice<UInt8>, whole: ArraySlice<UInt8>, remainder: ArraySlice<UInt8>)]? {
        var result: [(tag: UInt8, content: ArraySlice<UInt8>, whole: ArraySlice<UInt8>, remainder: ArraySlice<UInt8>)] = []
        var rest = bytes
        while let next = element(in: rest) {
            result.append(next)
            rest = next.remainder
        }
        return rest.isEmpty ? result : nil
    }
}
