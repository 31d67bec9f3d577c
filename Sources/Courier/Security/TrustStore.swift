#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SwiftASN1
import X509

/// The certificates a chain is evaluated against when ``SecurityPolicy`` asks whether it is valid
/// "against the system's roots" (what Apple's `SecTrust` does with its default anchors): the
/// system's roots (``system``, found as OpenSSL finds them), then
/// ``SecurityPolicy/additionalTrustedCertificates``.
///
/// Any certificate in the store is a trust anchor, self-signed or not, as with
/// `SecTrustSetAnchorCertificates`. Tests make one of their own roots to stand for the system's.
///
/// ``system`` is only a name for the system's roots: nothing is read until an evaluation looks a
/// certificate up in it (``SystemTrustRoots``), so a process that never evaluates a chain against
/// them (plain http, or only policies that pin certificates and allow invalid ones) never reads
/// the bundle.
struct TrustStore: Sendable {
    private enum Source: Sendable {
        /// Anchors already at hand.
        case roots(TrustRoots)
        /// The system's, loaded once per process on first use.
        case system
        /// Loaded on first use by a loader a test brings (to see whether and where it runs).
        case deferred(DeferredTrustRoots)
    }

    private let source: Source

    private init(_ source: Source) {
        self.source = source
    }

    /// A store of `certificates`; those swift-certificates cannot parse are skipped and counted.
    init(_ certificates: [Certificate]) {
        self.init(.roots(TrustRoots(derEncoded: certificates.map { Array($0.derBytes) })))
    }

    /// The system's roots, found as OpenSSL and Go's client find them
    /// (``SystemTrustRoots/Locations``): the bundle `SSL_CERT_FILE` names, or else the first of
    /// ``systemBundlePaths`` that can be read; the certificate files of the directories
    /// `SSL_CERT_DIR` names (colon-separated) besides; and, when no bundle was read, those of
    /// ``systemDirectoryPaths``. Read once per process when an evaluation first looks a
    /// certificate up in it (``SystemTrustRoots/shared``); empty when there is none.
    ///
    /// Reading and parsing the bundle (about 150 certificates) takes a few milliseconds: make the
    /// first use off the event loops (``loadOffTheEventLoops()``; ``TLSConnector`` does, before
    /// the first handshake that needs them).
    static var system: TrustStore { TrustStore(.system) }

    /// A store whose anchors `load` gives the first time they are needed (at most once); for tests.
    static func deferred(_ load: @escaping @Sendable () -> TrustStore) -> TrustStore {
        TrustStore(.deferred(DeferredTrustRoots { load().roots }))
    }

    /// Where Linux distributions keep their bundle of trusted roots, in the order Go's client
    /// looks: Debian, Ubuntu, Alpine and Arch; Fedora and RHEL 6; openSUSE; OpenELEC; CentOS and
    /// RHEL 7 and later; Alpine's other name.
    static let systemBundlePaths = [
        "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem",
        "/etc/pki/tls/cacert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem",
    ]

    /// Where distributions keep their trusted roots one to a file (read when no bundle is found).
    static let systemDirectoryPaths = ["/etc/ssl/certs", "/etc/pki/tls/certs"]

    /// Every certificate of a PEM bundle (``TrustRoots/load(bundleAt:)``). Nil when the file cannot
    /// be read or holds no certificate block.
    static func load(bundleAt path: String) -> TrustStore? {
        TrustRoots.load(bundleAt: path).map { TrustStore(.roots($0)) }
    }

    /// The anchors; for ``system`` (or a deferred store) they are loaded first when they are not
    /// yet, which blocks the caller for the read.
    var roots: TrustRoots {
        switch self.source {
        case .roots(let roots): roots
        case .system: SystemTrustRoots.shared
        case .deferred(let deferred): deferred.roots
        }
    }

    /// Whether ``roots`` is at hand without reading anything.
    var isLoaded: Bool {
        switch self.source {
        case .roots: true
        case .system: SystemTrustRoots.isLoaded
        case .deferred(let deferred): deferred.isLoaded
        }
    }

    /// Every anchor, parsed again on each call (for tests and diagnostics; evaluations look
    /// anchors up by subject instead).
    var certificates: [X509.Certificate] { self.roots.certificates }

    /// How many blocks of the store's source were not certificates (skipped, not fatal).
    var skippedCount: Int { self.roots.skippedCount }

    /// Loads ``roots`` on NIO's thread pool when they are not loaded yet, so that the read does
    /// not block an event loop or a thread of the concurrency pool.
    func loadOffTheEventLoops() async {
        guard !self.isLoaded else { return }
        // A pool that is shutting down leaves the load to the first lookup.
        _ = try? await NIOThreadPool.singleton.runIfActive { _ = self.roots }
    }

    /// ``loadOffTheEventLoops()`` for a caller on `eventLoop`: succeeds there once the roots are
    /// loaded (or the pool is shutting down, which leaves the load to the first lookup).
    func loadOffTheEventLoops(notifying eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        guard !self.isLoaded else { return eventLoop.makeSucceededVoidFuture() }
        return NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { _ = self.roots }.recover { _ in }
    }

    /// The anchors as swift-certificates' verifier takes them: this store, then `additional`
    /// (``SecurityPolicy/additionalTrustedCertificates``; those it cannot parse are left out).
    /// Nothing is loaded until the verifier looks a certificate up.
    func anchors(adding additional: [Certificate]) -> CertificateStore {
        CertificateStore(custom: TrustAnchors(store: self, additional: additional.compactMap(\.x509)))
    }

    /// Who the anchors are, for ``TrustAnchors``' `Hashable` conformance.
    fileprivate var identity: ObjectIdentifier? {
        switch self.source {
        case .roots(let roots): ObjectIdentifier(roots)
        case .system: nil
        case .deferred(let deferred): ObjectIdentifier(deferred)
        }
    }
}

/// Trust anchors kept as their DER encodings, indexed by subject, in the order they came: a
/// certificate is parsed when path building asks for its subject (a handshake asks for one or
/// two), not kept parsed (a parsed certificate holds its decoded names, extensions and a
/// BoringSSL key object, several times its DER size).
///
/// When the store is made, only each certificate's subject is read, to index it
/// (``subject(ofCertificate:)``); blocks that are not certificates are skipped and counted. A
/// certificate swift-certificates refuses (a key type it does not know, say) is left out when it
/// is looked up, so path building sees the anchors a `CertificateStore` of parsed certificates
/// would hold.
final class TrustRoots: Sendable {
    /// The DER encodings of the anchors, in order.
    private let encodings: [[UInt8]]
    /// Which of ``encodings`` have each subject, in order.
    private let bySubject: [DistinguishedName: [Int]]
    /// How many blocks were not certificates (skipped, not fatal).
    let skippedCount: Int

    /// Anchors from DER encodings; those that are not certificates are skipped and counted.
    convenience init(derEncoded certificates: [[UInt8]]) {
        var builder = Builder()
        for der in certificates { builder.add(der) }
        self.init(builder)
    }

    private init(_ builder: Builder) {
        self.encodings = builder.encodings
        self.bySubject = builder.bySubject
        self.skippedCount = builder.skippedCount
    }

    /// Collects anchors one at a time, so that at most one is parsed at once.
    private struct Builder {
        var encodings: [[UInt8]] = []
        var bySubject: [DistinguishedName: [Int]] = [:]
        var skippedCount = 0
        /// The encodings added so far, once anchors come from directories (which often hold the
        /// bundle's roots, and links to them): each is kept once. Nil while a bundle is read.
        var seen: Set<Encoding>?

        /// A certificate's DER encoding as a set member, hashed as one run of bytes (an array of
        /// bytes hashes them one at a time: with `SSL_CERT_DIR` set, a sixth of the roots' load).
        struct Encoding: Hashable {
            let bytes: [UInt8]

            func hash(into hasher: inout Hasher) {
                self.bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
            }
        }

        mutating func add(_ der: [UInt8]) {
            if self.seen != nil, self.seen?.insert(Encoding(bytes: der)).inserted == false { return }
            guard let subject = TrustRoots.subject(ofCertificate: der) else {
                self.skippedCount += 1
                return
            }
            self.bySubject[subject, default: []].append(self.encodings.count)
            self.encodings.append(der)
        }

        /// Adds every certificate block of PEM text (``PEMCertificateBlocks``); blocks that do not
        /// decode are skipped and counted. Returns how many blocks there were.
        mutating func addBlocks(of text: Data) -> Int {
            var blocks = 0
            PEMCertificateBlocks.forEach(in: text) { der in
                blocks += 1
                if let der {
                    self.add(der)
                } else {
                    self.skippedCount += 1
                }
            }
            return blocks
        }
    }

    /// The subject of a DER-encoded certificate, read from its structure alone: its key, its
    /// extensions and its signature are not parsed (that took most of the time a bundle of 146
    /// roots took to load). Nil when the bytes are not an X.509 certificate's shape (a
    /// `Certificate` SEQUENCE whose `tbsCertificate` holds, after an optional version, the serial
    /// number, signature algorithm, issuer and validity, then the subject).
    static func subject(ofCertificate der: [UInt8]) -> DistinguishedName? {
        guard let certificate = try? DER.parse(der), case .constructed(let parts) = certificate.content else { return nil }
        var outer = parts.makeIterator()
        guard let tbsCertificate = outer.next(), case .constructed(let fields) = tbsCertificate.content else { return nil }
        var remaining = fields.makeIterator()
        guard var field = remaining.next() else { return nil }
        if field.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            guard let serialNumber = remaining.next() else { return nil }
            field = serialNumber
        }
        // serialNumber (`field`), signature, issuer, validity, subject.
        for _ in 0..<4 {
            guard let next = remaining.next() else { return nil }
            field = next
        }
        return try? DistinguishedName(derEncoded: field)
    }

    /// How many anchors there are.
    var count: Int { self.encodings.count }

    /// The anchors whose subject is `subject`, in order, parsed now; nil when there is none.
    func certificates(withSubject subject: DistinguishedName) -> [X509.Certificate]? {
        guard let indices = self.bySubject[subject] else { return nil }
        // One swift-certificates refuses is left out here.
        return indices.compactMap { try? X509.Certificate(derEncoded: self.encodings[$0]) }
    }

    /// Whether `certificate` is one of the anchors.
    func contains(_ certificate: X509.Certificate) -> Bool {
        self.certificates(withSubject: certificate.subject)?.contains(certificate) ?? false
    }

    /// Every anchor, parsed now, in order.
    var certificates: [X509.Certificate] {
        self.encodings.compactMap { try? X509.Certificate(derEncoded: $0) }
    }

    /// Every certificate block of a PEM bundle (``PEMCertificateBlocks``), read one at a time;
    /// blocks that do not decode, or are not certificates, are skipped and counted. Nil when the
    /// file cannot be read or holds no certificate block.
    static func load(bundleAt path: String) -> TrustRoots? {
        guard let text = FileManager.default.contents(atPath: path) else { return nil }
        var builder = Builder()
        return builder.addBlocks(of: text) == 0 ? nil : TrustRoots(builder)
    }

    /// The anchors of the first of `bundles` that can be read and holds a certificate block, then
    /// of every file of `directories` (in each, in the order of their names; entries that are
    /// neither files nor links to files, or cannot be read, are passed over, and so are links to
    /// another entry of the same directory, as Go's client passes them over: c_rehash's hashed
    /// names, whose targets are read under their own names), each certificate kept once; and,
    /// when no bundle was read, of every file of `fallbackDirectories` likewise. What each source
    /// gave is told to `read` (its path and how many certificates it added; tests read it).
    static func load(
        bundles: [String], directories: [String], fallbackDirectories: [String], read: (String, Int) -> Void = { _, _ in }
    ) -> TrustRoots {
        var builder = Builder()
        var bundleRead = false
        for path in bundles {
            guard let text = FileManager.default.contents(atPath: path) else { continue }
            let before = builder.encodings.count
            if builder.addBlocks(of: text) > 0 {
                read(path, builder.encodings.count - before)
                bundleRead = true
                break
            }
        }
        let directories = directories + (bundleRead ? [] : fallbackDirectories)
        // A bundle is taken as it is; a directory's certificates that are already there are not
        // added again (a directory often holds the bundle's roots, and links to them).
        if !directories.isEmpty { builder.seen = Set(builder.encodings.map(Builder.Encoding.init)) }
        for directory in directories {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
            let before = builder.encodings.count
            for name in names.sorted() {
                let path = directory + "/" + name
                // Other links are followed (Debian's names link to the certificates elsewhere);
                // the certificate each reaches is kept once.
                guard Self.isCertificateFile(path), let text = FileManager.default.contents(atPath: path) else { continue }
                _ = builder.addBlocks(of: text)
            }
            read(directory, builder.encodings.count - before)
        }
        return TrustRoots(builder)
    }

    /// Whether the directory entry at `path` is worth reading for certificates: a regular file, or
    /// a link, unless the link names another entry of the same directory (its text has no `/`:
    /// c_rehash's `5ad8a5d6.0` for `ISRG_Root_X1.pem`), which is read under its own name, or
    /// reaches a folder or nothing. An entry that is a FIFO or a device is never opened (a read
    /// could block).
    static func isCertificateFile(_ path: String) -> Bool {
        // `readlink` first: most entries of such a directory are links, and it is one system call
        // (`struct stat` is not used: which C module declares it here depends on the build).
        var target = [CChar](repeating: 0, count: Int(PATH_MAX))
        let length = readlink(path, &target, target.count)
        if length >= 0 {
            guard target[..<length].contains(CChar(UInt8(ascii: "/"))) else { return false }
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
        // Not a link: a regular file only (`attributesOfItem` reads the entry itself).
        return (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType == .typeRegular
    }
}

/// The system's trusted roots, loaded at most once per process, the first time an evaluation
/// needs them.
enum SystemTrustRoots {
    /// Where the system's roots are read from.
    struct Locations: Equatable {
        /// Bundles, the first one that can be read wins.
        var bundles: [String]
        /// Directories whose certificate files are read too.
        var directories: [String]
        /// Directories read only when no bundle could be.
        var fallbackDirectories: [String]

        /// As OpenSSL and Go's client take them from the environment: `SSL_CERT_FILE` names
        /// the one bundle to read instead of ``TrustStore/systemBundlePaths``, `SSL_CERT_DIR` the
        /// directories (colon-separated) to read besides it, instead of
        /// ``TrustStore/systemDirectoryPaths`` (read only when no bundle is found). An empty
        /// variable counts as unset.
        init(environment: [String: String]) {
            if let file = environment["SSL_CERT_FILE"], !file.isEmpty {
                self.bundles = [file]
            } else {
                self.bundles = TrustStore.systemBundlePaths
            }
            if let directories = environment["SSL_CERT_DIR"], !directories.isEmpty {
                self.directories = directories.split(separator: ":").map(String.init)
                self.fallbackDirectories = []
            } else {
                self.directories = []
                self.fallbackDirectories = TrustStore.systemDirectoryPaths
            }
        }

        /// The roots found there (``TrustRoots/load(bundles:directories:fallbackDirectories:read:)``).
        func load() -> TrustRoots {
            TrustRoots.load(bundles: self.bundles, directories: self.directories, fallbackDirectories: self.fallbackDirectories)
        }
    }

    /// The roots found where ``Locations/init(environment:)`` says, for this process's
    /// environment; empty when there are none. A `static let`: the runtime initialises it once,
    /// thread-safely, on first use (`swift_once`); later reads take no lock.
    static let shared: TrustRoots = {
        let roots = Locations(environment: ProcessInfo.processInfo.environment).load()
        Self.loads.withLockedValue { $0 += 1 }
        return roots
    }()

    /// How many times this process loaded ``shared``: 0 until then, 1 after (tests read it).
    static let loads = NIOLockedValueBox(0)

    /// Whether ``shared`` has been loaded.
    static var isLoaded: Bool { Self.loads.withLockedValue { $0 > 0 } }
}

/// Anchors loaded on first use by a loader of the caller's (tests: it counts its calls and sees
/// which thread ran it). Lookups take a lock; the system's roots use ``SystemTrustRoots`` instead.
final class DeferredTrustRoots: Sendable {
    private let load: @Sendable () -> TrustRoots
    private let loaded = NIOLockedValueBox<TrustRoots?>(nil)

    init(_ load: @escaping @Sendable () -> TrustRoots) {
        self.load = load
    }

    /// The anchors, loaded (under the lock, so once) if they are not yet.
    var roots: TrustRoots {
        self.loaded.withLockedValue { loaded in
            if let loaded { return loaded }
            let roots = self.load()
            loaded = roots
            return roots
        }
    }

    var isLoaded: Bool { self.loaded.withLockedValue { $0 != nil } }
}

/// A ``TrustStore`` and a policy's additional trusted certificates as the root store of
/// swift-certificates' verifier: the store's anchors with a subject first, then the additional
/// ones, as a `CertificateStore` of both would give them. The store is only loaded when the
/// verifier first looks a certificate up. It never suspends: every lookup is in memory (or the
/// one read of the bundle).
struct TrustAnchors: CustomCertificateStore {
    let store: TrustStore
    private var additional: [DistinguishedName: [X509.Certificate]]

    init(store: TrustStore, additional: [X509.Certificate]) {
        self.store = store
        self.additional = Dictionary(grouping: additional, by: \.subject)
    }

    subscript(subject: DistinguishedName) -> [X509.Certificate]? {
        get async {
            let stored = self.store.roots.certificates(withSubject: subject) ?? []
            let matching = stored + (self.additional[subject] ?? [])
            return matching.isEmpty ? nil : matching
        }
    }

    func contains(_ certificate: X509.Certificate) async -> Bool {
        if self.store.roots.contains(certificate) { return true }
        return self.additional[certificate.subject]?.contains(certificate) ?? false
    }

    mutating func append(contentsOf certificates: some Sequence<X509.Certificate>) {
        for certificate in certificates {
            self.additional[certificate.subject, default: []].append(certificate)
        }
    }

    static func == (lhs: TrustAnchors, rhs: TrustAnchors) -> Bool {
        lhs.store.identity == rhs.store.identity && lhs.additional == rhs.additional
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(self.store.identity)
        hasher.combine(self.additional)
    }
}

/// The certificate blocks of a PEM text (`-----BEGIN CERTIFICATE-----` or the older
/// `X509 CERTIFICATE`), decoded one at a time. Other blocks (keys, parameters, OpenSSL's
/// `TRUSTED CERTIFICATE`) are passed over, as swift-nio-ssl's reader of a bundle passes them
/// (it takes a `TRUSTED CERTIFICATE` only as a bundle's very first block). Unlike it, a block
/// that does not decode is skipped instead of ending the bundle there.
enum PEMCertificateBlocks {
    private static let labels: Set<[UInt8]> = [Array("CERTIFICATE".utf8), Array("X509 CERTIFICATE".utf8)]
    private static let begin = Array("-----BEGIN ".utf8)
    private static let end = Array("-----END ".utf8)
    private static let dashes = Array("-----".utf8)

    /// Calls `body` with the DER bytes of each certificate block of `text`, in order, or with nil
    /// for a block whose base64 does not decode or that has no end line.
    static func forEach(in text: Data, _ body: ([UInt8]?) -> Void) {
        var label: [UInt8]?
        var base64: [UInt8] = []
        text.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var lineStart = 0
            while lineStart < bytes.count {
                var lineEnd = lineStart
                while lineEnd < bytes.count, bytes[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
                let line = Self.trimmed(UnsafeRawBufferPointer(rebasing: bytes[lineStart..<lineEnd]))
                lineStart = lineEnd + 1
                if let open = label {
                    if line.starts(with: Self.end) {
                        let closing = Self.label(of: line, after: Self.end)
                        if closing == open {
                            body(Data(base64Encoded: Data(base64)).map { Array($0) })
                        } else {
                            body(nil)
                        }
                        label = nil
                        base64.removeAll(keepingCapacity: true)
                    } else {
                        base64.append(contentsOf: line)
                    }
                } else if line.starts(with: Self.begin), let opened = Self.label(of: line, after: Self.begin),
                    Self.labels.contains(opened)
                {
                    label = opened
                }
            }
        }
        if label != nil { body(nil) }
    }

    /// `line` without the spaces, tabs and carriage returns around it.
    private static func trimmed(_ line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var start = 0
        var end = line.count
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D }
        while start < end, isSpace(line[start]) { start += 1 }
        while end > start, isSpace(line[end - 1]) { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: line[start..<end])
    }

    /// The label of a `-----BEGIN label-----` or `-----END label-----` line.
    private static func label(of line: UnsafeRawBufferPointer, after prefix: [UInt8]) -> [UInt8]? {
        guard line.count >= prefix.count + Self.dashes.count, line.suffix(Self.dashes.count).elementsEqual(Self.dashes) else {
            return nil
        }
        return Array(line[prefix.count..<(line.count - Self.dashes.count)])
    }
}

extension Certificate {
    /// The certificate parsed by swift-certificates, or nil when its stricter parser refuses it.
    var x509: X509.Certificate? {
        try? X509.Certificate(derEncoded: Array(self.derBytes))
    }
}
