import Foundation

/// Certificates and keys for tests, made by `Scripts/make-test-certificates.sh` (EC P-256, valid
/// for about 100 years unless said otherwise).
///
/// The chain is: ``rootCA`` → ``intermediateCA`` → ``localhostLeaf`` (and ``wrongHostLeaf``,
/// ``expiredLeaf``); ``rootCA`` → ``clientCertificate``. ``selfSignedLeaf`` stands alone, as do
/// ``selfSignedCommonNameLeaf`` (named only by its common name, `localhost`) and
/// ``selfSignedNoNameLeaf`` (no name at all), for the name checks of AFNetworking's own tests. A
/// ``TestServer`` with TLS presents the chosen leaf followed by ``intermediateCA``, so a client that
/// trusts ``rootCA`` accepts it.
///
/// These keys are public: never trust these certificates outside tests.
public enum TestCertificates {
    /// Writes `pem` to a new file in the temporary directory and returns its URL.
    ///
    /// - Parameters:
    ///   - pem: The PEM text, for example ``rootCA``.
    ///   - name: The file name's stem; a unique suffix is added.
    /// - Returns: The URL of the file; delete it when done.
    public static func writeToTemporaryFile(_ pem: String, name: String = "courier-test") throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(name)-\(UUID().uuidString).pem")
        try Data(pem.utf8).write(to: url, options: .atomic)
        return url
    }

    /// The DER bytes of every PEM block in `pem`, in order (a certificate or a key per block).
    ///
    /// - Parameter pem: PEM text with one or more `-----BEGIN …-----` blocks.
    /// - Returns: One byte array per block; blocks whose base64 does not decode are skipped.
    public static func derBlocks(_ pem: String) -> [[UInt8]] {
        var blocks: [[UInt8]] = []
        var base64 = ""
        var inside = false
        for line in pem.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("-----BEGIN") {
                inside = true
                base64 = ""
            } else if line.hasPrefix("-----END") {
                inside = false
                if let data = Data(base64Encoded: base64) { blocks.append(Array(data)) }
            } else if inside {
                base64 += line.trimmingCharacters(in: .whitespaces)
            }
        }
        return blocks
    }

    /// The DER bytes of the first PEM block in `pem`, or an empty array when there is none.
    ///
    /// - Parameter pem: PEM text, for example ``localhostLeaf``.
    public static func der(_ pem: String) -> [UInt8] {
        derBlocks(pem).first ?? []
    }
}
