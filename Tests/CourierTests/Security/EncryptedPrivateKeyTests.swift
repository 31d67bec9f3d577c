@testable import Courier
import CourierTesting
import Foundation
import SwiftASN1
import Testing

/// Encrypted PKCS#8 client keys as OpenSSL 3 writes them: the schemes BoringSSL opens, the ones
/// ``EncryptedPrivateKey`` opens after it (PBKDF2 with an HMAC-SHA-2 PRF other than SHA-256, and
/// scrypt), and the ones neither opens, which are named instead of being called a wrong
/// passphrase (an interop probe against Go's server found every one of them refused so).
@Suite("Encrypted client keys")
struct EncryptedPrivateKeyTests {
    /// The client key encrypted with `openssl pkcs8 -topk8` and these options, as PEM.
    static func encryptedKey(_ options: [String]) async throws -> String {
        try await withTemporaryFolder { folder in
            try Data(TestCertificates.clientKey.utf8).write(to: folder.appendingPathComponent("client.key"))
            let arguments = ["openssl", "pkcs8", "-topk8", "-in", "client.key", "-passout", "pass:secret", "-out", "client-enc.key"] + options
            let status = try await offThePools {
                try ChildProcess.spawn("/usr/bin/env", arguments, directory: folder.path).waitForExit()
            }
            try #require(status == 0, "openssl \(arguments.joined(separator: " "))")
            return String(decoding: try Data(contentsOf: folder.appendingPathComponent("client-enc.key")), as: UTF8.self)
        }
    }

    static let plain = Result { try ClientIdentity(certificatePEM: TestCertificates.clientCertificate, privateKeyPEM: TestCertificates.clientKey) }

    @Test(
        "Every PBES2 scheme with AES-CBC opens with its passphrase, to the same key",
        arguments: [
            ["-v2", "aes-256-cbc"],  // PBKDF2-HMAC-SHA-256 (BoringSSL)
            ["-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"],  // (BoringSSL)
            ["-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA512"],
            ["-v2", "aes-192-cbc", "-v2prf", "hmacWithSHA384"],
            ["-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA224"],
            ["-scrypt"],  // scrypt, AES-256-CBC
            ["-v2", "des3"],  // 3DES under PBKDF2-HMAC-SHA-256 (BoringSSL)
        ]
    )
    func opens(_ options: [String]) async throws {
        let pem = try await Self.encryptedKey(options)
        let identity = try ClientIdentity(certificatePEM: TestCertificates.clientCertificate, privateKeyPEM: pem, passphrase: "secret")
        #expect(identity.privateKeyDER == (try Self.plain.get()).privateKeyDER)
        let wrong = #expect(throws: CourierError.self) {
            try ClientIdentity(certificatePEM: TestCertificates.clientCertificate, privateKeyPEM: pem, passphrase: "wrong")
        }
        #expect(wrong?.code == .invalidRequest)
        #expect(wrong?.message == "the passphrase does not open the encrypted private key", "\(String(describing: wrong))")
    }

    /// 3DES under a PRF BoringSSL does not take is named, not called a wrong passphrase.
    @Test func aSchemeNeitherOpensIsNamed() async throws {
        let pem = try await Self.encryptedKey(["-v2", "des3", "-v2prf", "hmacWithSHA512"])
        let error = #expect(throws: CourierError.self) {
            try ClientIdentity(certificatePEM: TestCertificates.clientCertificate, privateKeyPEM: pem, passphrase: "secret")
        }
        #expect(error?.code == .invalidRequest)
        #expect(
            error?.message.hasPrefix("the private key is encrypted with DES-EDE3-CBC under PBKDF2-HMAC-SHA-512, which Courier cannot open") == true,
            "\(String(describing: error))")
    }

    /// A key opened by Courier rather than BoringSSL is presented in a real handshake.
    @Test(arguments: [["-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA512"], ["-scrypt"]])
    func aKeyOpenedByCourierAuthenticatesTheClient(_ options: [String]) async throws {
        let pem = try await Self.encryptedKey(options)
        var configuration = TestServer.Configuration.https()
        configuration.requiresClientCertificate = true
        try await withTestServer(configuration) { server in
            var policy = SecurityPolicy.default
            policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
            policy.clientIdentity = try ClientIdentity(certificatePEM: TestCertificates.clientCertificate, privateKeyPEM: pem, passphrase: "secret")
            try await withManager(baseURL: server.baseURL, securityPolicy: policy) { manager in
                let response = try await manager.get("get")
                #expect(response.response.status == .ok)
            }
        }
    }

    /// A PBES2 key's PEM, with these key derivation parameters and AES-256-CBC.
    static func pbes2PEM(kdf: ASN1ObjectIdentifier, _ parameters: (inout DER.Serializer) throws -> Void) throws -> String {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { info in
            try info.appendConstructedNode(identifier: .sequence) { algorithm in
                try algorithm.serialize(EncryptedPrivateKey.pbes2)
                try algorithm.appendConstructedNode(identifier: .sequence) { pbes2 in
                    try pbes2.appendConstructedNode(identifier: .sequence) { derivation in
                        try derivation.serialize(kdf)
                        try derivation.appendConstructedNode(identifier: .sequence, parameters)
                    }
                    try pbes2.appendConstructedNode(identifier: .sequence) { cipher in
                        try cipher.serialize([2, 16, 840, 1, 101, 3, 4, 1, 42] as ASN1ObjectIdentifier)
                        try cipher.serialize(ASN1OctetString(contentBytes: ArraySlice(repeating: 7, count: 16)))
                    }
                }
            }
            try info.serialize(ASN1OctetString(contentBytes: ArraySlice(repeating: 9, count: 48)))
        }
        return PEMDocument(type: "ENCRYPTED PRIVATE KEY", derBytes: serializer.serializedBytes).pemString
    }

    /// A key file cannot make Courier work or allocate without bound: PBKDF2 past ten million
    /// iterations and scrypt past 256 MiB are named, not run; parameters within them run (and
    /// the made-up ciphertext does not decrypt).
    @Test func derivationsAreBounded() throws {
        let salt = ASN1OctetString(contentBytes: [1, 2, 3, 4, 5, 6, 7, 8])
        let pbkdf2 = { (iterations: Int) in
            try Self.pbes2PEM(kdf: EncryptedPrivateKey.pbkdf2) { parameters in
                try parameters.serialize(salt)
                try parameters.serialize(iterations)
                try parameters.appendConstructedNode(identifier: .sequence) { prf in
                    try prf.serialize([1, 2, 840, 113549, 2, 11] as ASN1ObjectIdentifier)
                    try prf.serialize(ASN1Null())
                }
            }
        }
        let scrypt = { (cost: Int, blockSize: Int) in
            try Self.pbes2PEM(kdf: EncryptedPrivateKey.scrypt) { parameters in
                try parameters.serialize(salt)
                try parameters.serialize(cost)
                try parameters.serialize(blockSize)
                try parameters.serialize(1)
            }
        }
        #expect(throws: EncryptedPrivateKey.Failure.unsupported("PBKDF2 with 10000001 iterations (at most 10000000 are taken)")) {
            try EncryptedPrivateKey.decrypt(pem: try pbkdf2(10_000_001), passphrase: "x")
        }
        #expect(throws: EncryptedPrivateKey.Failure.unsupported("scrypt with N = 524288, r = 8, p = 1")) {
            try EncryptedPrivateKey.decrypt(pem: try scrypt(1 << 19, 8), passphrase: "x")
        }
        #expect(throws: EncryptedPrivateKey.Failure.unsupported("scrypt with N = 1000, r = 8, p = 1")) {
            try EncryptedPrivateKey.decrypt(pem: try scrypt(1000, 8), passphrase: "x")
        }
        #expect(throws: EncryptedPrivateKey.Failure.wrongPassphrase) { try EncryptedPrivateKey.decrypt(pem: try pbkdf2(1000), passphrase: "x") }
        #expect(throws: EncryptedPrivateKey.Failure.wrongPassphrase) { try EncryptedPrivateKey.decrypt(pem: try scrypt(1 << 10, 8), passphrase: "x") }
    }

    /// Schemes read from the DER alone, without OpenSSL: a truncated or foreign block is left to
    /// BoringSSL's verdict.
    @Test func textsThatAreNotEncryptedPKCS8AreNotRead() {
        #expect(throws: EncryptedPrivateKey.Failure.notRead) { try EncryptedPrivateKey.decrypt(pem: TestCertificates.clientKey, passphrase: "x") }
        let garbage = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAMCAQA=\n-----END ENCRYPTED PRIVATE KEY-----\n"
        #expect(throws: EncryptedPrivateKey.Failure.notRead) { try EncryptedPrivateKey.decrypt(pem: garbage, passphrase: "x") }
    }

    /// An Ed25519 client certificate and key (RFC 8410, PKCS#8; Go and curl take them), plain and
    /// encrypted with a scheme Courier opens, authenticate the client. BoringSSL reads the key but
    /// does not write its DER, and the identity used to call it "no usable private key".
    @Test func anEd25519IdentityAuthenticatesTheClient() async throws {
        let (certificate, key, encrypted) = try await withTemporaryFolder { folder in
            try Data(TestCertificates.rootCA.utf8).write(to: folder.appendingPathComponent("ca.pem"))
            try Data(TestCertificates.rootCAKey.utf8).write(to: folder.appendingPathComponent("ca.key"))
            let script = """
                openssl genpkey -algorithm ED25519 -out client.key &&
                openssl req -new -key client.key -subj "/CN=Courier Ed25519 client" -out client.csr &&
                printf 'extendedKeyUsage = clientAuth\\n' > client.ext &&
                openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -set_serial 77 -days 30 -extfile client.ext -out client.pem &&
                openssl pkcs8 -topk8 -in client.key -v2 aes-256-cbc -v2prf hmacWithSHA512 -passout pass:secret -out client-enc.key
                """
            let status = try await offThePools { try ChildProcess.spawn("/bin/sh", ["-c", script], directory: folder.path).waitForExit() }
            try #require(status == 0)
            let text = { (name: String) in String(decoding: try Data(contentsOf: folder.appendingPathComponent(name)), as: UTF8.self) }
            return (try text("client.pem"), try text("client.key"), try text("client-enc.key"))
        }
        let identities = [
            try ClientIdentity(certificatePEM: certificate, privateKeyPEM: key),
            try ClientIdentity(certificatePEM: certificate, privateKeyPEM: encrypted, passphrase: "secret"),
        ]
        #expect(identities[0] == identities[1])
        var configuration = TestServer.Configuration.https()
        configuration.requiresClientCertificate = true
        try await withTestServer(configuration) { server in
            for identity in identities {
                var policy = SecurityPolicy.default
                policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
                policy.clientIdentity = identity
                try await withManager(baseURL: server.baseURL, securityPolicy: policy) { manager in
                    let response = try await manager.get("get")
                    #expect(response.response.status == .ok)
                }
            }
        }
    }
    /// The private key is not in what reflection shows (`dump`, a debugger, a crash reporter):
    /// `Data` mirrors the bytes of a small one, and the test's P-256 key is small. The identity is
    /// reachable from every TLS error (``ServerTrustFailure/policy``).
    @Test func reflectionDoesNotShowThePrivateKey() throws {
        let identity = try Self.plain.get()
        var policy = SecurityPolicy.default
        policy.clientIdentity = identity
        var dumped = ""
        dump(policy, to: &dumped)
        #expect(!dumped.contains("privateKeyDER"), "\(dumped.prefix(2000))")
        #expect(Mirror(reflecting: identity).descendant("privateKeyDER") == nil)
        #expect(dumped.contains("certificateChain") && dumped.contains("(hidden)"))
    }
}
