@testable import Courier
import CourierTesting
import Foundation
import Testing
import X509

/// Where the system's roots are read from, as OpenSSL and Go's client read them: the
/// environment's `SSL_CERT_FILE` and `SSL_CERT_DIR`, the bundles of the distributions Go knows, and
/// directories of certificates when there is no bundle. The CLI's tests run the command with the
/// variables set (`TLSTests`).
@Suite("The system's trust roots: where they are read from")
struct SystemTrustRootsTests {
    typealias Locations = SystemTrustRoots.Locations

    /// A folder of its own, removed after `body`.
    func withFolder<T>(_ body: (String) throws -> T) throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-roots-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        return try body(folder)
    }

    func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    func subjects(_ roots: TrustRoots) -> [String] {
        roots.certificates.map { $0.subject.description }
    }

    static let root = TestCertificates.rootCA
    static let intermediate = TestCertificates.intermediateCA
    static let selfSigned = TestCertificates.selfSignedLeaf

    @Test func theEnvironmentNamesTheBundleAndTheDirectories() {
        #expect(Locations(environment: [:]) == Locations(environment: ["SSL_CERT_FILE": "", "SSL_CERT_DIR": ""]))
        let defaults = Locations(environment: [:])
        #expect(defaults.bundles == TrustStore.systemBundlePaths)
        #expect(defaults.bundles.first == "/etc/ssl/certs/ca-certificates.crt")
        #expect(defaults.bundles.contains("/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"))
        #expect(defaults.directories.isEmpty)
        #expect(defaults.fallbackDirectories == ["/etc/ssl/certs", "/etc/pki/tls/certs"])

        let named = Locations(environment: ["SSL_CERT_FILE": "/corp/roots.pem", "SSL_CERT_DIR": "/corp/a:/corp/b"])
        #expect(named.bundles == ["/corp/roots.pem"])
        #expect(named.directories == ["/corp/a", "/corp/b"])
        #expect(named.fallbackDirectories.isEmpty)
    }

    @Test func theFirstBundleThatCanBeReadIsTheOneRead() throws {
        try self.withFolder { folder in
            try self.write("no certificate here\n", to: folder + "/empty.pem")
            try self.write(Self.root, to: folder + "/first.pem")
            try self.write(Self.intermediate + Self.selfSigned, to: folder + "/second.pem")
            var read: [String] = []
            let roots = TrustRoots.load(
                bundles: [folder + "/missing.pem", folder + "/empty.pem", folder + "/first.pem", folder + "/second.pem"],
                directories: [], fallbackDirectories: [folder]) { path, count in read.append("\(path): \(count)") }
            #expect(roots.count == 1)
            #expect(self.subjects(roots) == self.subjects(TrustRoots(derEncoded: [try Self.der(Self.root)])))
            #expect(read == ["\(folder)/first.pem: 1"], "the fallback directory is not read once a bundle was")
        }
    }

    @Test func directoriesAddTheirCertificatesEachOnce() throws {
        try self.withFolder { folder in
            try self.write(Self.root, to: folder + "/bundle.pem")
            let directory = folder + "/certs"
            try FileManager.default.createDirectory(atPath: directory + "/nested", withIntermediateDirectories: true)
            // The bundle's root again, another certificate, a link to it (as c_rehash makes), a file
            // that is not a certificate, and a folder.
            try self.write(Self.root, to: directory + "/root.pem")
            try self.write(Self.intermediate, to: directory + "/intermediate.pem")
            try FileManager.default.createSymbolicLink(atPath: directory + "/5ed36f99.0", withDestinationPath: "intermediate.pem")
            try self.write("# a readme\n", to: directory + "/README")
            try self.write(Self.selfSigned, to: directory + "/nested/inside.pem")
            var read: [String] = []
            let roots = TrustRoots.load(bundles: [folder + "/bundle.pem"], directories: [directory, folder + "/missing"], fallbackDirectories: []) {
                read.append("\($0): \($1)")
            }
            #expect(roots.count == 2, "\(self.subjects(roots))")
            #expect(roots.skippedCount == 0)
            #expect(read == ["\(folder)/bundle.pem: 1", "\(directory): 1"])
        }
    }

    /// Which entries of a certificate directory are read: files, and links that reach one
    /// elsewhere (Debian's `ISRG_Root_X1.pem`); not a link to another entry of the same directory
    /// (c_rehash's `4042bcee.0`, read under its target's name, as Go's client does), nor a FIFO
    /// (opening it would block), a folder or a broken link.
    @Test func whichDirectoryEntriesAreRead() throws {
        try self.withFolder { folder in
            let elsewhere = folder + "/share"
            let directory = folder + "/certs"
            try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: directory + "/nested", withIntermediateDirectories: true)
            try self.write(Self.root, to: elsewhere + "/root.crt")
            try self.write(Self.intermediate, to: directory + "/intermediate.pem")
            try FileManager.default.createSymbolicLink(atPath: directory + "/Root.pem", withDestinationPath: "../share/root.crt")
            try FileManager.default.createSymbolicLink(atPath: directory + "/Absolute.pem", withDestinationPath: elsewhere + "/root.crt")
            try FileManager.default.createSymbolicLink(atPath: directory + "/5ed36f99.0", withDestinationPath: "intermediate.pem")
            try FileManager.default.createSymbolicLink(atPath: directory + "/4042bcee.0", withDestinationPath: "Root.pem")
            try FileManager.default.createSymbolicLink(atPath: directory + "/broken.pem", withDestinationPath: "../share/missing.crt")
            try FileManager.default.createSymbolicLink(atPath: directory + "/folder.pem", withDestinationPath: "../share")
            #expect(mkfifo(directory + "/fifo.pem", 0o600) == 0)
            let read = ["intermediate.pem", "Root.pem", "Absolute.pem"]
            let passed = ["5ed36f99.0", "4042bcee.0", "broken.pem", "folder.pem", "fifo.pem", "nested", "missing.pem"]
            for name in read { #expect(TrustRoots.isCertificateFile(directory + "/" + name), "\(name)") }
            for name in passed { #expect(!TrustRoots.isCertificateFile(directory + "/" + name), "\(name)") }
            let roots = TrustRoots.load(bundles: [], directories: [directory], fallbackDirectories: [])
            #expect(roots.count == 2, "\(self.subjects(roots))")
        }
    }

    @Test func withoutABundleTheFallbackDirectoriesAreRead() throws {
        try self.withFolder { folder in
            try self.write(Self.root, to: folder + "/a.pem")
            try self.write(Self.intermediate, to: folder + "/b.crt")
            let roots = TrustRoots.load(bundles: [folder + "/missing.pem"], directories: [], fallbackDirectories: [folder])
            #expect(roots.count == 2)
            let none = TrustRoots.load(bundles: [folder + "/missing.pem"], directories: [], fallbackDirectories: [folder + "/missing"])
            #expect(none.count == 0)
        }
    }

    @Test func thisMachinesRootsAreFoundWithoutTheEnvironment() throws {
        // Debian's bundle, as the CI machine has it: the same roots as the bundle alone.
        let locations = Locations(environment: [:])
        guard let path = locations.bundles.first(where: { FileManager.default.isReadableFile(atPath: $0) }) else {
            Issue.record("no system bundle at \(locations.bundles)")
            return
        }
        let bundle = try #require(TrustRoots.load(bundleAt: path))
        #expect(locations.load().count == bundle.count)
    }

    static func der(_ pem: String) throws -> [UInt8] {
        try #require(try Certificate.certificates(pemEncoded: pem).first).derBytes.map { $0 }
    }
}
