import Crypto
import CryptoExtras
import Foundation
import SwiftASN1

/// Opens a PKCS#8 `ENCRYPTED PRIVATE KEY` (RFC 5958 3) made with PBES2 (RFC 8018 6.2) where
/// BoringSSL cannot: its PBKDF2 takes only HMAC-SHA-1 and HMAC-SHA-256 as the PRF and it has no
/// scrypt, while OpenSSL writes keys with `-v2prf hmacWithSHA512` (or 384, 224) and `-scrypt`
/// (RFC 7914 7) that curl and Go open. Read here: PBKDF2 with any of the five HMAC PRFs, or
/// scrypt, then AES-128, -192 or -256 in CBC mode. ``ClientIdentity`` asks only after BoringSSL
/// refused the key, so everything BoringSSL opens still goes its way.
enum EncryptedPrivateKey {
    /// Why a key was not opened.
    enum Failure: Error, Equatable {
        /// The text holds no encrypted PKCS#8 key made with PBES2, or one this reader cannot
        /// parse: BoringSSL's verdict stands.
        case notRead
        /// A scheme this reader recognises and cannot use: its name, for the message.
        case unsupported(String)
        /// The passphrase does not decrypt it (the padding or the key inside is wrong).
        case wrongPassphrase
    }

    /// The most PBKDF2 iterations and scrypt memory (128 × r × N bytes) taken: far above what
    /// any tool writes (OpenSSL: 2,048 iterations; N = 16,384 and r = 8, 16 MiB), and a bound on
    /// the work and memory a key file makes.
    static let maximumIterations = 10_000_000
    static let maximumScryptMemory = 256 << 20

    /// The key inside, as unencrypted PKCS#8 DER (the `PrivateKeyInfo`); not checked to be a key.
    static func decrypt(pem: String, passphrase: String) throws(Failure) -> [UInt8] {
        guard let document = PEMDocument.derBytes(ofFirst: "ENCRYPTED PRIVATE KEY", in: pem) else { throw .notRead }
        let parsed: (scheme: Scheme, ciphertext: ArraySlice<UInt8>)
        do {
            parsed = try Self.parse(document)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .notRead
        }
        let key: SymmetricKey
        do {
            key = try parsed.scheme.derivation.deriveKey(passphrase: Array(passphrase.utf8), byteCount: parsed.scheme.keyByteCount)
        } catch {
            throw .unsupported("a key derivation whose parameters swift-crypto refuses (\(error))")
        }
        do {
            let iv = try AES._CBC.IV(ivBytes: parsed.scheme.iv)
            return Array(try AES._CBC.decrypt(parsed.ciphertext, using: key, iv: iv))
        } catch {
            // Bad padding: another passphrase (or a damaged file, which the passphrase cannot fix either).
            throw .wrongPassphrase
        }
    }

    /// How the key is encrypted: the key derivation, the cipher's key size and its IV.
    struct Scheme {
        var derivation: Derivation
        var keyByteCount: Int
        var iv: ArraySlice<UInt8>
    }

    enum Derivation {
        case pbkdf2(salt: ArraySlice<UInt8>, iterations: Int, hash: KDF.Insecure.PBKDF2.HashFunction)
        case scrypt(salt: ArraySlice<UInt8>, cost: Int, blockSize: Int, parallelism: Int)

        /// Whether BoringSSL derives keys so itself: PBKDF2 with HMAC-SHA-1 or HMAC-SHA-256.
        var isBoringSSLs: Bool {
            if case .pbkdf2(_, _, let hash) = self { return hash == .insecureSHA1 || hash == .sha256 }
            return false
        }

        /// Its name, for a message.
        var name: String {
            switch self {
            case .pbkdf2(_, _, let hash):
                let names: [KDF.Insecure.PBKDF2.HashFunction: String] = [
                    .insecureSHA1: "SHA-1", .insecureSHA224: "SHA-224", .sha256: "SHA-256", .sha384: "SHA-384", .sha512: "SHA-512",
                ]
                return "PBKDF2-HMAC-\(names[hash] ?? "\(hash)")"
            case .scrypt: return "scrypt"
            }
        }

        func deriveKey(passphrase: [UInt8], byteCount: Int) throws -> SymmetricKey {
            switch self {
            case .pbkdf2(let salt, let iterations, let hash):
                // The file's own count, however low: the key was made with it.
                return try KDF.Insecure.PBKDF2.deriveKey(
                    from: passphrase, salt: salt, using: hash, outputByteCount: byteCount, unsafeUncheckedRounds: iterations)
            case .scrypt(let salt, let cost, let blockSize, let parallelism):
                return try KDF.Scrypt.deriveKey(
                    from: passphrase, salt: salt, outputByteCount: byteCount, rounds: cost, blockSize: blockSize, parallelism: parallelism)
            }
        }
    }

    // Object identifiers (RFC 8018 appendix C, RFC 7914 7, NIST's AES arcs).
    static let pbes2: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 5, 13]
    static let pbkdf2: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 5, 12]
    static let scrypt: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 11591, 4, 11]
    static let prfs: [ASN1ObjectIdentifier: KDF.Insecure.PBKDF2.HashFunction] = [
        [1, 2, 840, 113549, 2, 7]: .insecureSHA1,
        [1, 2, 840, 113549, 2, 8]: .insecureSHA224,
        [1, 2, 840, 113549, 2, 9]: .sha256,
        [1, 2, 840, 113549, 2, 10]: .sha384,
        [1, 2, 840, 113549, 2, 11]: .sha512,
    ]
    static let ciphers: [ASN1ObjectIdentifier: Int] = [
        [2, 16, 840, 1, 101, 3, 4, 1, 2]: 16,
        [2, 16, 840, 1, 101, 3, 4, 1, 22]: 24,
        [2, 16, 840, 1, 101, 3, 4, 1, 42]: 32,
    ]
    /// Names of ciphers recognised and not supported here, for the message.
    static let cipherNames: [ASN1ObjectIdentifier: String] = [
        [1, 2, 840, 113549, 3, 7]: "DES-EDE3-CBC",
        [1, 2, 840, 113549, 3, 2]: "RC2-CBC",
        [1, 3, 14, 3, 2, 7]: "DES-CBC",
        [2, 16, 840, 1, 101, 3, 4, 1, 6]: "AES-128-GCM",
        [2, 16, 840, 1, 101, 3, 4, 1, 26]: "AES-192-GCM",
        [2, 16, 840, 1, 101, 3, 4, 1, 46]: "AES-256-GCM",
    ]

    /// `EncryptedPrivateKeyInfo ::= SEQUENCE { encryptionAlgorithm AlgorithmIdentifier,
    /// encryptedData OCTET STRING }`, with PBES2 as the algorithm.
    private static func parse(_ der: [UInt8]) throws -> (scheme: Scheme, ciphertext: ArraySlice<UInt8>) {
        try DER.sequence(try DER.parse(der), identifier: .sequence) { nodes in
            let (algorithm, parameters) = try Self.algorithmIdentifier(&nodes)
            // PKCS#5 v1.5 and PKCS#12 schemes (PBE-SHA1-3DES and the like) are BoringSSL's.
            guard algorithm == Self.pbes2, let parameters else { throw Failure.notRead }
            let scheme = try Self.pbes2Scheme(parameters)
            let ciphertext = try ASN1OctetString(derEncoded: &nodes).bytes
            return (scheme, ciphertext)
        }
    }

    /// `PBES2-params ::= SEQUENCE { keyDerivationFunc AlgorithmIdentifier, encryptionScheme
    /// AlgorithmIdentifier }`.
    private static func pbes2Scheme(_ node: ASN1Node) throws -> Scheme {
        try DER.sequence(node, identifier: .sequence) { nodes in
            let (kdf, kdfParameters) = try Self.algorithmIdentifier(&nodes)
            let (cipher, cipherParameters) = try Self.algorithmIdentifier(&nodes)
            guard let kdfParameters else { throw Failure.notRead }
            let (derivation, keyLength) = try Self.derivation(kdf, kdfParameters)
            guard let keyByteCount = Self.ciphers[cipher] else {
                // BoringSSL's own derivations with a cipher it knows (3DES): its verdict stands.
                if derivation.isBoringSSLs { throw Failure.notRead }
                throw Failure.unsupported("\(Self.cipherNames[cipher] ?? "the cipher \(cipher)") under \(derivation.name)")
            }
            guard let cipherParameters else { throw Failure.notRead }
            let iv = try ASN1OctetString(derEncoded: cipherParameters).bytes
            guard iv.count == 16 else { throw Failure.notRead }
            // A key length, when given, must be the cipher's.
            if let keyLength, keyLength != keyByteCount { throw Failure.notRead }
            return Scheme(derivation: derivation, keyByteCount: keyByteCount, iv: iv)
        }
    }

    /// PBKDF2's parameters (RFC 8018 A.2) or scrypt's (RFC 7914 7.1), and the key length they give.
    private static func derivation(_ kdf: ASN1ObjectIdentifier, _ node: ASN1Node) throws -> (Derivation, keyLength: Int?) {
        switch kdf {
        case Self.pbkdf2:
            // SEQUENCE { salt OCTET STRING (the `specified` choice), iterationCount INTEGER,
            // keyLength INTEGER OPTIONAL, prf AlgorithmIdentifier DEFAULT hmacWithSHA1 }
            return try DER.sequence(node, identifier: .sequence) { nodes in
                let salt = try ASN1OctetString(derEncoded: &nodes).bytes
                let iterations = try Int(derEncoded: &nodes)
                let keyLength: Int? = try DER.optionalImplicitlyTagged(&nodes)
                var hash = KDF.Insecure.PBKDF2.HashFunction.insecureSHA1
                if nodes.peekIsPresent {
                    let (prf, _) = try Self.algorithmIdentifier(&nodes)
                    guard let known = Self.prfs[prf] else { throw Failure.unsupported("PBKDF2 with the PRF \(prf)") }
                    hash = known
                }
                guard (1...Self.maximumIterations).contains(iterations) else {
                    throw Failure.unsupported("PBKDF2 with \(iterations) iterations (at most \(Self.maximumIterations) are taken)")
                }
                return (.pbkdf2(salt: salt, iterations: iterations, hash: hash), keyLength)
            }
        case Self.scrypt:
            // SEQUENCE { salt OCTET STRING, costParameter INTEGER, blockSize INTEGER,
            // parallelizationParameter INTEGER, keyLength INTEGER OPTIONAL }
            return try DER.sequence(node, identifier: .sequence) { nodes in
                let salt = try ASN1OctetString(derEncoded: &nodes).bytes
                let cost = try Int(derEncoded: &nodes)
                let blockSize = try Int(derEncoded: &nodes)
                let parallelism = try Int(derEncoded: &nodes)
                let keyLength: Int? = try DER.optionalImplicitlyTagged(&nodes)
                guard cost >= 2, cost & (cost - 1) == 0, (1...64).contains(blockSize), (1...16).contains(parallelism),
                    cost <= Self.maximumScryptMemory / (128 * blockSize)
                else {
                    throw Failure.unsupported("scrypt with N = \(cost), r = \(blockSize), p = \(parallelism)")
                }
                return (.scrypt(salt: salt, cost: cost, blockSize: blockSize, parallelism: parallelism), keyLength)
            }
        default:
            throw Failure.unsupported("the key derivation \(kdf)")
        }
    }

    /// `AlgorithmIdentifier ::= SEQUENCE { algorithm OBJECT IDENTIFIER, parameters ANY OPTIONAL }`.
    private static func algorithmIdentifier(_ nodes: inout ASN1NodeCollection.Iterator) throws -> (ASN1ObjectIdentifier, ASN1Node?) {
        guard let node = nodes.next() else { throw Failure.notRead }
        return try DER.sequence(node, identifier: .sequence) { inner in
            (try ASN1ObjectIdentifier(derEncoded: &inner), inner.next())
        }
    }
}

extension PEMDocument {
    /// The DER of the text's first block with this label (`PRIVATE KEY`, `ENCRYPTED PRIVATE
    /// KEY`), if it has one that decodes.
    static func derBytes(ofFirst label: String, in text: String) -> [UInt8]? {
        guard let start = text.range(of: "-----BEGIN \(label)-----"),
            let end = text.range(of: "-----END \(label)-----", range: start.upperBound..<text.endIndex)
        else { return nil }
        return try? PEMDocument(pemString: String(text[start.lowerBound..<end.upperBound])).derBytes
    }
}

extension ASN1NodeCollection.Iterator {
    /// Whether another node follows, without taking it.
    fileprivate var peekIsPresent: Bool {
        var copy = self
        return copy.next() != nil
    }
}
