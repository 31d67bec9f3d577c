@testable import Courier
import CourierTesting
import Foundation
import NIOSSL
import Testing

@Suite("The self-issued twin that anchors trust on a pinned intermediate")
struct AnchorTwinTests {
    static func certificate(_ pem: String) throws -> Certificate {
        try #require(try Certificate.certificates(pemEncoded: pem).first)
    }

    @Test func twinKeepsNameKeyAndDatesAndIsSelfIssued() throws {
        let intermediate = try Self.certificate(TestCertificates.intermediateCA)
        let twin = try #require(AnchorTwin.make(for: intermediate))
        #expect(twin.isSelfIssued)
        #expect(twin.isCertificateAuthority)
        #expect(!intermediate.isSelfIssued)
        #expect(twin.publicKeyBytes == intermediate.publicKeyBytes)
        let names = try #require(DERReader.issuerAndSubject(of: Array(twin.derBytes)))
        let original = try #require(DERReader.issuerAndSubject(of: Array(intermediate.derBytes)))
        #expect(Array(names.subject) == Array(original.subject))
        #expect(Array(names.issuer) == Array(original.subject))
        let nio = try twin.nioCertificate(), nioOriginal = try intermediate.nioCertificate()
        #expect(nio.notValidBefore == nioOriginal.notValidBefore)
        #expect(nio.notValidAfter == nioOriginal.notValidAfter)
        // No authority key identifier (2.5.29.35) is left.
        #expect(!Array(twin.derBytes).contains(subsequence: [0x06, 0x03, 0x55, 0x1D, 0x23]))
        #expect(Array(intermediate.derBytes).contains(subsequence: [0x06, 0x03, 0x55, 0x1D, 0x23]))
    }

    @Test func bytesThatAreNoV3CertificateHaveNoTwin() {
        #expect(AnchorTwin.make(for: Certificate(trustedDER: Data([0x30, 0x03, 0x02, 0x01, 0x01]))) == nil)
    }

    /// OpenSSL's command-line verifier agrees: the twin anchors the intermediate's leaves, not a
    /// leaf under another key with the same issuer name, and only because an anchor's own signature
    /// is not checked (`-check_ss_sig` refuses it).
    @Test func opensslVerifiesLeavesAgainstTheTwin() async throws {
        let generated = try await GeneratedCertificates.prepared()
        let twin = try #require(AnchorTwin.make(for: try Self.certificate(generated.intermediate)))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-twin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try twin.derBytes.write(to: folder.appendingPathComponent("twin.der"))
        let files = [
            "genuine.pem": generated.intermediateLeaf, "impostor.pem": generated.impostorLeaf,
            "bare.pem": generated.impostorLeafWithoutKeyID,
        ]
        for (name, pem) in files { try Data(pem.utf8).write(to: folder.appendingPathComponent(name)) }
        func openssl(_ arguments: String...) async throws -> Int32 {
            try await offThePools {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = ["openssl"] + arguments
                process.currentDirectoryURL = folder
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                process.waitUntilExit()
                return process.terminationStatus
            }
        }
        try #require(try await openssl("x509", "-inform", "DER", "-in", "twin.der", "-out", "twin.pem") == 0)
        #expect(try await openssl("verify", "-CAfile", "twin.pem", "genuine.pem") == 0)
        #expect(try await openssl("verify", "-CAfile", "twin.pem", "impostor.pem") != 0)
        #expect(try await openssl("verify", "-CAfile", "twin.pem", "bare.pem") != 0)
        #expect(try await openssl("verify", "-check_ss_sig", "-CAfile", "twin.pem", "genuine.pem") != 0)
    }
}

extension Array where Element == UInt8 {
    fileprivate func contains(subsequence: [UInt8]) -> Bool {
        guard count >= subsequence.count else { return false }
        return (0...(count - subsequence.count)).contains { Array(self[$0..<$0 + subsequence.count]) == subsequence }
    }
}
