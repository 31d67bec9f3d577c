@testable import Courier
import CourierTesting
import Foundation
import Testing

@Suite("SecurityPolicy rules and loading")
struct SecurityPolicyTests {
    static func certificate(_ pem: String) throws -> Certificate {
        try #require(try Certificate.certificates(pemEncoded: pem).first)
    }

    @Test func defaultsAreAFNetworkings() throws {
        let policy = SecurityPolicy.default
        #expect(policy.pinningMode == .none)
        #expect(policy.pinnedCertificates.isEmpty)
        #expect(!policy.allowInvalidCertificates)
        #expect(policy.validatesDomainName)
        #expect(policy.minimumTLSVersion == .v1_2)
        #expect(policy.clientIdentity == nil)
        try policy.validate()
    }

    @Test(arguments: [SecurityPolicy.PinningMode.publicKey, .certificate])
    func pinningWithNoPinsIsRejected(_ mode: SecurityPolicy.PinningMode) {
        let policy = SecurityPolicy(pinningMode: mode)
        #expect(policy.pinnedCertificates.isEmpty, "no certificate is loaded implicitly")
        #expect {
            try policy.validate()
        } throws: { error in
            (error as? CourierError)?.code == .serverTrustEvaluationFailed
                && ((error as? CourierError)?.underlyingError as? ServerTrustFailure)?.reason == .noPinsConfigured
        }
    }

    @Test func invalidCertificatesWithDomainValidationNeedAPin() throws {
        var policy = SecurityPolicy.default
        policy.allowInvalidCertificates = true
        #expect(throws: CourierError.self) { try policy.validate() }
        policy.validatesDomainName = false
        try policy.validate()
        var pinned = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: [try Self.certificate(TestCertificates.localhostLeaf)])
        pinned.allowInvalidCertificates = true
        try pinned.validate()
    }

    @Test func pinningPolicyNeedsAnHTTPSBaseURL() async throws {
        let policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: [try Self.certificate(TestCertificates.rootCA)])
        #expect(throws: CourierError.self) { try policy.validate(baseURL: URL(string: "http://example.com/")) }
        // The error names the base URL without its password.
        let withPassword = #expect(throws: CourierError.self) { try policy.validate(baseURL: URL(string: "http://ann:secret@example.com/")) }
        #expect(withPassword?.message.contains("http://ann:***@example.com/") == true, "\(String(describing: withPassword))")
        #expect(withPassword?.message.contains("secret") == false)
        try policy.validate(baseURL: URL(string: "https://example.com/"))
        try SecurityPolicy.default.validate(baseURL: URL(string: "http://example.com/"))
        let manager = HTTPSessionManager(baseURL: URL(string: "http://example.com/"), securityPolicy: policy)
        defer { manager.invalidate(cancelingTasks: true) }
        #expect {
            try manager.absoluteURLString(for: "get")
        } throws: { error in
            (error as? CourierError)?.code == .invalidRequest && "\(error)".contains("https base URL")
        }
    }

    /// A pinning policy set for the base URL's host (``ServerTrustPolicies``) needs an https base
    /// URL as the manager's own does: over `http` it would never be enforced.
    @Test func hostsPinningPolicyNeedsAnHTTPSBaseURL() async throws {
        var trust = ServerTrustPolicies(default: .default)
        trust["api.example.com"] = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: [try Self.certificate(TestCertificates.rootCA)])
        let pinnedHost = HTTPSessionManager(baseURL: URL(string: "http://API.example.com/v1"), engine: NIOEngine(serverTrust: trust))
        defer { pinnedHost.invalidate(cancelingTasks: true) }
        #expect {
            try pinnedHost.absoluteURLString(for: "get")
        } throws: { error in
            (error as? CourierError)?.code == .invalidRequest && "\(error)".contains("https base URL")
        }
        // Another host's base URL gets the default policy, which does not pin.
        let otherHost = HTTPSessionManager(baseURL: URL(string: "http://www.example.com/"), engine: NIOEngine(serverTrust: trust))
        defer { otherHost.invalidate(cancelingTasks: true) }
        #expect(try otherHost.absoluteURLString(for: "get") == "http://www.example.com/get")
    }

    @Test func certificatesLoadFromDERAndPEM() throws {
        let pem = try Self.certificate(TestCertificates.localhostLeaf)
        let der = try Certificate(derEncoded: Data(TestCertificates.der(TestCertificates.localhostLeaf)))
        #expect(pem == der)
        #expect(throws: CourierError.self) { try Certificate(derEncoded: Data([1, 2, 3])) }
        #expect(throws: CourierError.self) { try Certificate.certificates(pemEncoded: "no certificate here") }
        let chain = try Certificate.certificates(pemEncoded: TestCertificates.localhostLeaf + "\n" + TestCertificates.intermediateCA)
        #expect(chain.count == 2)
    }

    @Test func certificatesInAFolder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-pins-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(TestCertificates.rootCA.utf8).write(to: folder.appendingPathComponent("root.pem"))
        try Data(TestCertificates.der(TestCertificates.localhostLeaf)).write(to: folder.appendingPathComponent("leaf.cer"))
        try Data("not a certificate".utf8).write(to: folder.appendingPathComponent("notes.txt"))
        // Subfolders are not searched (AFNetworking: the bundle's top level).
        let subfolder = folder.appendingPathComponent("more")
        try FileManager.default.createDirectory(at: subfolder, withIntermediateDirectories: true)
        try Data(TestCertificates.der(TestCertificates.selfSignedLeaf)).write(to: subfolder.appendingPathComponent("other.cer"))
        let certificates = try SecurityPolicy.certificates(in: folder)
        #expect(certificates == [try Self.certificate(TestCertificates.rootCA), try Self.certificate(TestCertificates.localhostLeaf)])
        try Data("garbage".utf8).write(to: folder.appendingPathComponent("bad.der"))
        #expect(throws: CourierError.self) { try SecurityPolicy.certificates(in: folder) }
        #expect(throws: CourierError.self) { try SecurityPolicy.certificates(in: folder.appendingPathComponent("missing")) }
    }

    @Test func publicKeys() throws {
        let leaf = try Self.certificate(TestCertificates.localhostLeaf)
        #expect(leaf.publicKeyBytes.count > 60)
        #expect(leaf.publicKeyBytes != (try Self.certificate(TestCertificates.wrongHostLeaf)).publicKeyBytes)
    }

    @Test func clientIdentityFromPEM() throws {
        let identity = try ClientIdentity(certificatePEM: TestCertificates.clientCertificate, privateKeyPEM: TestCertificates.clientKey)
        #expect(identity.certificateChain.count == 1)
        #expect(throws: CourierError.self) {
            try ClientIdentity(certificatePEM: TestCertificates.clientCertificate, privateKeyPEM: "nope")
        }
    }

    /// A key that is not the certificate's is refused when the identity is made, saying so:
    /// before, it was taken, and the first handshake failed as "the policy is invalid".
    @Test func aClientIdentityWhoseKeyIsAnotherCertificatesIsRefused() {
        let error = #expect(throws: CourierError.self) {
            try ClientIdentity(certificatePEM: TestCertificates.clientCertificate, privateKeyPEM: TestCertificates.localhostKey)
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message == "the private key is not the certificate's (its public key is another)")
    }

    /// A certificate file given as a FIFO (a shell's `<(…)`) is read: `Data(contentsOf:)` opened
    /// it and read nothing.
    @Test func certificatesAreReadFromAFIFO() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-fifo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("root.pem")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let pem = TestCertificates.rootCA
        let writer = Thread {
            if let handle = FileHandle(forWritingAtPath: fifo.path) {
                handle.write(Data(pem.utf8))
                try? handle.close()
            }
        }
        writer.start()
        let certificates = try Certificate.certificates(contentsOf: fifo)
        #expect(certificates == (try Certificate.certificates(pemEncoded: pem)))
    }

    @Test func failureNamesHostPolicyAndReason() {
        let failure = ServerTrustFailure(.pinMismatch, host: "api.example.com", policy: .default)
        #expect("\(failure)".contains("api.example.com"))
        #expect("\(failure)".contains("pinning none"))
        #expect("\(failure)".contains("pinned"))
        #expect(failure.courierError().code == .serverTrustEvaluationFailed)
        #expect(ServerTrustFailure(.handshakeFailure, policy: .default).courierError().code == .tlsFailure)
    }
}
