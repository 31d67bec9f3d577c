import Dispatch
import Foundation
import Logging
import NIOConcurrencyHelpers

/// A cookie store kept in a Netscape `cookies.txt` file (``NetscapeCookieFile``), so that cookies
/// outlive the process and can be shared with curl and wget.
///
/// The file is read when the store is made. After each change the store writes the whole file
/// again, atomically and durably (a new file, readable by its owner only, synced to the disk and
/// renamed over the old one: a power loss leaves the old file or the new one), on a
/// queue of its own: changes made in a burst are written once. ``save()`` writes at once and
/// reports failure; ``flush()`` waits for a pending write. A write that fails in the background is
/// logged as an `error`.
///
/// Session cookies are written too, with expiry 0, as curl writes them: a command-line tool that
/// logs in once stays logged in (pass `includesSessionCookies: false` to keep them in memory
/// only). `SameSite` is not kept in the file (the format has no field for it), nor a cookie whose
/// name or path holds a tab (its fields are separated by tabs; a value's tabs are kept), which
/// lives in memory only and is logged as a `warning` when the file is written.
///
/// The file is read with the store's public suffix list: a line for a public suffix and its
/// subdomains (`.com`) is skipped and logged with the malformed lines, as curl skips it.
public final class FileCookieStorage: CookieStorage {
    /// The file.
    public let fileURL: URL
    private let memory: MemoryCookieStorage
    private let writer: CookieFileWriter

    /// Opens the store for `fileURL`, reading the file when it exists.
    /// - Parameters:
    ///   - fileURL: The cookies file; it need not exist yet, but its folder must.
    ///   - limits: How many cookies to keep per domain and in all.
    ///   - publicSuffixes: The suffixes under which a `Domain` attribute is refused; nil (the
    ///     default) for ``PublicSuffixList/system``.
    ///   - includesSessionCookies: Whether session cookies are written to the file (true, as curl does).
    ///   - logger: Where malformed lines and failed background writes are reported.
    ///   - clock: The time (for expiry and last access); tests pass their own.
    /// - Throws: ``CourierError`` with ``CourierError/Code/fileSystemFailure`` when the file exists
    ///   but cannot be read, or is not text.
    public init(
        fileURL: URL,
        limits: CookieLimits = CookieLimits(),
        publicSuffixes: PublicSuffixList? = nil,
        includesSessionCookies: Bool = true,
        logger: Logger? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.fileURL = fileURL
        let jar = NIOLockedValueBox(CookieJar(limits: limits, publicSuffixes: publicSuffixes))
        let writer = CookieFileWriter(
            fileURL: fileURL, jar: jar, includesSessionCookies: includesSessionCookies, logger: logger, clock: clock)
        self.writer = writer
        self.memory = MemoryCookieStorage(jar: jar, logger: logger, clock: clock, onChange: { writer.schedule() })
        if FileManager.default.fileExists(atPath: fileURL.path) {
            let data: Data
            do {
                data = try Data(contentsOf: fileURL)
            } catch {
                throw CourierError(.fileSystemFailure, "cannot read the cookies file \(fileURL.path)", underlyingError: error)
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw CourierError(.fileSystemFailure, "the cookies file \(fileURL.path) is not UTF-8 text")
            }
            let contents = NetscapeCookieFile.decode(text, now: clock(), publicSuffixes: publicSuffixes ?? .system)
            if !contents.invalidLines.isEmpty {
                logger?.warning("skipped malformed lines of \(fileURL.path): \(contents.invalidLines.map(String.init).joined(separator: ", "))")
            }
            self.memory.replaceAll(with: contents.cookies)
        }
    }

    /// Writes the file now, atomically and durably (synced to the disk).
    /// - Throws: ``CourierError`` with ``CourierError/Code/fileSystemFailure``.
    public func save() throws {
        try self.writer.write()
    }

    /// Waits until a write scheduled by a change has finished.
    public func flush() {
        self.writer.flush()
    }

    /// The limits; lowering them evicts at once.
    public var limits: CookieLimits {
        get { self.memory.limits }
        set { self.memory.limits = newValue }
    }

    /// True: the store writes its cookies to ``fileURL``.
    public var isPersistent: Bool { true }

    public func cookies(for url: URL) -> [Cookie] { self.memory.cookies(for: url) }
    public func cookieHeader(for url: URL) -> String? { self.memory.cookieHeader(for: url) }
    public func storeCookies(fromSetCookieFields fields: [String], for url: URL) { self.memory.storeCookies(fromSetCookieFields: fields, for: url) }
    public func setCookie(_ cookie: Cookie) { self.memory.setCookie(cookie) }
    public func deleteCookie(_ cookie: Cookie) { self.memory.deleteCookie(cookie) }
    public var allCookies: [Cookie] { self.memory.allCookies }
    public func removeCookies(since date: Date) { self.memory.removeCookies(since: date) }
    public func removeAllCookies() { self.memory.removeAllCookies() }
}

/// Writes a store's cookies to its file, on a serial queue, at most one write pending.
final class CookieFileWriter: Sendable {
    let fileURL: URL
    let jar: NIOLockedValueBox<CookieJar>
    let includesSessionCookies: Bool
    let logger: Logger?
    let clock: @Sendable () -> Date
    private let queue = DispatchQueue(label: "courier.cookies.file")
    private let isScheduled = NIOLockedValueBox(false)

    init(fileURL: URL, jar: NIOLockedValueBox<CookieJar>, includesSessionCookies: Bool, logger: Logger?, clock: @escaping @Sendable () -> Date) {
        self.fileURL = fileURL
        self.jar = jar
        self.includesSessionCookies = includesSessionCookies
        self.logger = logger
        self.clock = clock
    }

    /// Schedules a write unless one is pending (which will see this change too).
    func schedule() {
        let alreadyScheduled = self.isScheduled.withLockedValue { scheduled in
            defer { scheduled = true }
            return scheduled
        }
        guard !alreadyScheduled else { return }
        // Not fire-and-forget: the block is the write the change asked for; it ends with the
        // write, and `flush()` waits for it.
        self.queue.async {
            self.isScheduled.withLockedValue { $0 = false }
            do {
                try self.writeNow()
            } catch {
                self.logger?.error("cannot save cookies: \(error)")
            }
        }
    }

    func flush() {
        self.queue.sync {}
    }

    /// Writes now, after any pending write, on the writer's queue.
    func write() throws {
        try self.queue.sync { try self.writeNow() }
    }

    private func writeNow() throws {
        let now = self.clock()
        let cookies = self.jar.withLockedValue { $0.allCookies }.filter {
            !$0.isExpired(at: now) && (self.includesSessionCookies || !$0.isSessionOnly)
        }
        let unwritable = cookies.filter { !NetscapeCookieFile.canEncode($0) }
        if !unwritable.isEmpty {
            self.logger?.warning(
                "cookies kept in memory only, a tab in the name or path (or in the value of a nameless one): \(unwritable.map { "\($0.name.debugDescription) for \($0.domain)" }.joined(separator: ", "))")
        }
        try AtomicFile.write(Data(NetscapeCookieFile.encode(cookies).utf8), to: self.fileURL)
    }
}
