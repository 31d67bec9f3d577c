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
}
