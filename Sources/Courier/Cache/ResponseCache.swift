import Dispatch
import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import Synchronization

/// An HTTP cache for one client (RFC 9111's private cache), in memory and optionally on disk:
/// what URLSession's `URLCache` gave AFNetworking.
///
/// A session consults its configuration's ``SessionConfiguration/responseCache`` for each data
/// task: a fresh stored response is served without touching the engine (no connection); a stale
/// one with a validator is revalidated with `If-None-Match`/`If-Modified-Since`, and a
/// `304 Not Modified` updates its stored headers; what the server sends is stored when RFC 9111
/// allows it (and ``SessionManager/Hooks/dataTaskWillCacheResponse`` agrees); an unsafe method's
/// success invalidates its target and the `Location`/`Content-Location` of the same origin.
/// ``RequestOptions/CachePolicy`` and the request's `Cache-Control` (`max-age`, `min-fresh`,
/// `max-stale`, `no-cache`, `no-store`, `only-if-cached`) choose how it is used. The engine
/// follows redirects itself, so only a task's first request is looked up; the final response is
/// stored under the URL that answered it, and redirect responses are not stored.
///
/// - Entries are keyed by URL (without fragment) and by the request fields the response's `Vary`
///   names; only `GET` responses are stored.
/// - Each tier has a capacity in bytes and drops its least recently used entries beyond it. An
///   entry larger than 5% of a tier's capacity is not kept in that tier (as URLCache does).
/// - On disk each entry is a file of its own in ``directory``, written atomically (a temporary
///   file synced to the disk and renamed into place, the folder synced after) on a queue of the
///   cache's: a process that dies, or a power loss, mid-write leaves no entry, not a damaged one. A damaged or truncated file is dropped and logged as an `error`.
///   A new cache on the same folder finds the entries of the last one. A lookup that has to read
///   an entry from disk reads it on the calling thread (for a session: the thread that resumes the
///   task), then keeps it in memory when it fits.
/// - Safe to share between sessions and tasks on any thread.
///
/// ```swift
/// var configuration = SessionConfiguration.default
/// configuration.responseCache = try ResponseCache(
///     memoryCapacity: 8 << 20, diskCapacity: 100 << 20,
///     directory: URL(fileURLWithPath: "/var/cache/myapp/http"))
/// ```
public final class ResponseCache: Sendable {
    /// The most bytes kept in memory.
    public let memoryCapacity: Int
    /// The most bytes kept on disk (0 without a ``directory``).
    public let diskCapacity: Int
    /// The folder of the disk entries, or nil for a cache in memory only.
    public let directory: URL?
    let logger: Logger?
    let clock: @Sendable () -> Date
    /// Reached through ``withState(_:)``, which keeps ``isEmpty`` true to it.
    private let state = NIOLockedValueBox(ResponseCacheState())
    /// Whether nothing is stored, kept beside the state so that a lookup in an empty cache (a
    /// session whose responses are not stored) costs neither the key nor the lock.
    private let emptiness = Atomic<Bool>(true)
    /// The bytes that streams keep at once to store in this cache (``reserveStreamCopy(_:)``).
    private let streamCopyBytes = Atomic<Int>(0)
    /// Writes and deletions of entry files, in order.
    let diskQueue = DispatchQueue(label: "courier.cache.disk")

    /// A cache in memory only.
    /// - Parameters:
    ///   - memoryCapacity: The most bytes to keep (4 MiB by default).
    ///   - logger: Where to log.
    ///   - clock: The time (for freshness and ages); tests pass their own.
    public init(memoryCapacity: Int = 4 << 20, logger: Logger? = nil, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.memoryCapacity = max(0, memoryCapacity)
        self.diskCapacity = 0
        self.directory = nil
        self.logger = logger
        self.clock = clock
    }

    /// A cache in memory and in a folder, which is made if missing; entries already in it are
    /// taken over (damaged ones and temporary files left by a crash are deleted).
    /// - Parameters:
    ///   - memoryCapacity: The most bytes to keep in memory.
    ///   - diskCapacity: The most bytes to keep on disk.
    ///   - directory: The folder; use it for one cache at a time.
    ///   - logger: Where damaged entries and failed writes are reported.
    ///   - clock: The time (for freshness and ages); tests pass their own.
    /// - Throws: ``CourierError`` with ``CourierError/Code/fileSystemFailure`` when the folder
    ///   cannot be made or read.
    public init(
        memoryCapacity: Int,
        diskCapacity: Int,
        directory: URL,
        logger: Logger? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.memoryCapacity = max(0, memoryCapacity)
        self.diskCapacity = max(0, diskCapacity)
        self.directory = directory
        self.logger = logger
        self.clock = clock
        try self.loadDirectory()
    }

    /// Whether the cache writes to disk (an ephemeral session refuses such a cache).
    public var isPersistent: Bool { self.directory != nil && self.diskCapacity > 0 }

    /// Bytes held in memory now.
    public var currentMemoryUsage: Int { self.withState { $0.memoryUsage } }

    /// Bytes held on disk now (writes still queued included).
    public var currentDiskUsage: Int { self.withState { $0.diskUsage } }

    /// The largest entry a tier of `capacity` bytes keeps.
    static func maximumEntrySize(capacity: Int) -> Int { capacity / 20 }

    /// The largest entry either tier keeps.
    var largestEntrySize: Int {
        max(Self.maximumEntrySize(capacity: self.memoryCapacity), self.isPersistent ? Self.maximumEntrySize(capacity: self.diskCapacity) : 0)
    }

    /// The most bytes all streams together keep to store here (the memory capacity, or the
    /// largest entry when that is larger): many long streams at once cost no more than that,
    /// however many there are.
    var streamCopyBudget: Int { max(self.memoryCapacity, self.largestEntrySize) }

    /// The bytes streams keep for this cache now (for tests: 0 once they have ended).
    var bytesKeptForStreams: Int { self.streamCopyBytes.load(ordering: .relaxed) }

    /// Reserves `bytes` of ``streamCopyBudget`` for a stream's copy of its body; false, and
    /// nothing reserved, when that would go over it.
    func reserveStreamCopy(_ bytes: Int) -> Bool {
        let total = self.streamCopyBytes.wrappingAdd(bytes, ordering: .relaxed).newValue
        guard total > self.streamCopyBudget else { return true }
        self.streamCopyBytes.wrappingSubtract(bytes, ordering: .relaxed)
        return false
    }

    /// Gives back what a stream's copy reserved (``reserveStreamCopy(_:)``).
    func releaseStreamCopy(_ bytes: Int) {
        guard bytes > 0 else { return }
        self.streamCopyBytes.wrappingSubtract(bytes, ordering: .relaxed)
    }

    var now: Date { self.clock() }

    // MARK: Reading

    /// The stored response that `request` selects (same URL, same values of the fields its
    /// `Vary` names), fresh or not; nil when none is stored.
    /// Whether the cache holds no response, in memory or on disk.
    var isEmpty: Bool { self.emptiness.load(ordering: .acquiring) }

    /// Runs `body` on the cache's state under its lock, and notes whether it is left empty.
    func withState<Result>(_ body: (inout ResponseCacheState) throws -> Result) rethrows -> Result {
        try self.state.withLockedValue { state in
            defer { self.emptiness.store(state.memory.isEmpty && state.disk.isEmpty, ordering: .releasing) }
            return try body(&state)
        }
    }

    public func cachedResponse(for request: Request) -> CachedResponse? {
        self.entry(for: request)?.cached
    }

    /// The stored response for `request`, as ``cachedResponse(for:)``; without `readsDisk`, only
    /// one the memory tier holds: on an event loop, which must not wait for a file.
    func cachedResponse(for request: Request, readsDisk: Bool) -> CachedResponse? {
        self.entry(for: request, readsDisk: readsDisk)?.cached
    }

    func entry(for request: Request, readsDisk: Bool = true) -> CacheEntry? {
        if self.isEmpty { return nil }
        let primaryKey = CacheEntry.primaryKey(for: request.url)
        enum Found { case memory(CacheEntry), disk(DiskRecord, Data?), none }
        let found: Found = self.withState { state in
            for identity in state.variants[primaryKey] ?? [] {
                if let entry = state.memory[identity] {
                    guard entry.isSelected(by: request) else { continue }
                    state.memoryLRU.touch(identity)
                    if state.disk[identity] != nil { state.diskLRU.touch(identity) }
                    return .memory(entry)
                }
                if readsDisk, let record = state.disk[identity] {
                    guard CacheEntry.varying(record.varying, select: request) else { continue }
                    state.diskLRU.touch(identity)
                    return .disk(record, state.pendingWrites[record.fileName]?.data ?? state.writing[record.fileName])
                }
            }
            return .none
        }
        switch found {
        case .none: return nil
        case .memory(let entry): return entry
        case .disk(let record, let pending): return self.readDiskEntry(record, pending: pending)
        }
    }

    // MARK: Storing

    /// Stores `cachedResponse` as the answer to `request`, as far as its
    /// ``CachedResponse/storagePolicy`` and the capacities allow; it replaces the response
    /// `request` selected before. This stores what it is given: it does not apply the rules of
    /// RFC 9111 on what may be stored.
    public func storeCachedResponse(_ cachedResponse: CachedResponse, for request: Request) {
        self.storeCachedResponse(cachedResponse, for: request, replacing: nil)
    }

    /// Stores `cachedResponse` as ``storeCachedResponse(_:for:)`` does; with `expected`, only
    /// when the response stored in its place is still that one (the same response date): a 304
    /// freshens the response it revalidated, not one stored meanwhile (RFC 9111 4.3.4). A
    /// revalidation slower than another request's full answer otherwise put the older body back,
    /// fresh.
    func storeCachedResponse(_ cachedResponse: CachedResponse, for request: Request, replacing expected: CachedResponse?) {
        let primaryKey = CacheEntry.primaryKey(for: request.url)
        let varying = CacheEntry.varying(CacheEntry.varyNames(of: cachedResponse.response), of: request)
        let entry = CacheEntry(cached: cachedResponse, primaryKey: primaryKey, varying: varying)
        let identity = entry.identity
        let cost = entry.cost
        let inMemory = cachedResponse.storagePolicy != .notAllowed && cost <= Self.maximumEntrySize(capacity: self.memoryCapacity)
        let onDisk = cachedResponse.storagePolicy == .allowed && self.isPersistent
            && cost <= Self.maximumEntrySize(capacity: self.diskCapacity)
        var encoded: Data?
        if onDisk {
            do {
                encoded = try CacheEntryFile.encode(entry)
            } catch {
                self.logger?.error("cannot encode the cache entry for \(primaryKey): \(error)")
            }
        }
        // Only an entry written to disk needs its file name (a hash of the identity).
        let fileName = encoded == nil ? "" : CacheEntry.fileName(identity: identity)
        let names = varying.map(\.name)
        let work = self.withState { state -> DiskWork in
            var work = DiskWork()
            if let expected {
                // (Dates read back from a file may differ from the stored one in the last bits.)
                let current = state.memory[identity]?.cached.responseDate ?? state.disk[identity]?.responseDate
                guard let current, abs(current.timeIntervalSince(expected.responseDate)) < 0.001 else { return work }
            }
            // Variants selected by other Vary field names are out of date: the newest response says
            // which fields select.
            for other in state.variants[primaryKey] ?? [] where other != identity {
                let otherNames = state.memory[other]?.varying.map(\.name) ?? state.disk[other]?.varying.map(\.name)
                if otherNames != names { state.removeEntry(other, work: &work) }
            }
            if inMemory, encoded == nil, state.disk[identity] == nil, let old = state.memory[identity] {
                // A memory-only entry replaced by another (a client asking for one URL again and
                // again): it stays in every index; only its cost goes, and its variant comes first.
                state.memoryUsage -= old.cost
                state.moveVariantToFront(identity, primaryKey: primaryKey)
            } else {
                state.removeEntry(identity, work: &work)
                if inMemory || encoded != nil {
                    state.variants[primaryKey, default: []].insert(identity, at: 0)
                }
            }
            if inMemory {
                state.memory[identity] = entry
                state.memoryUsage += cost
                state.memoryLRU.touch(identity)
                state.evictMemory(capacity: self.memoryCapacity)
            }
            if let encoded {
                let record = DiskRecord(
                    fileName: fileName, primaryKey: primaryKey, varying: varying, size: encoded.count,
                    responseDate: cachedResponse.responseDate)
                state.disk[identity] = record
                state.diskUsage += record.size
                state.diskLRU.touch(identity)
                state.generation += 1
                state.pendingWrites[fileName] = PendingWrite(generation: state.generation, data: encoded)
                work.deletions.removeAll { $0 == fileName }
                work.writes.append((fileName, state.generation))
                state.evictDisk(capacity: self.diskCapacity, work: &work)
            }
            return work
        }
        self.perform(work)
    }

    // MARK: Removing

    /// Removes every stored response for `request`'s URL (all its variants).
    public func removeCachedResponse(for request: Request) {
        self.removeCachedResponses(for: request.url)
    }

    /// Removes every stored response for `url` (all its variants).
    func removeCachedResponses(for url: URL) {
        if self.isEmpty { return }
        let primaryKey = CacheEntry.primaryKey(for: url)
        let work = self.withState { state -> DiskWork in
            var work = DiskWork()
            for identity in state.variants[primaryKey] ?? [] { state.removeEntry(identity, work: &work) }
            return work
        }
        self.perform(work)
    }

    /// Removes the responses received at `date` or later.
    public func removeCachedResponses(since date: Date) {
        let work = self.withState { state -> DiskWork in
            var work = DiskWork()
            let recent = state.memory.filter { $0.value.cached.responseDate >= date }.map(\.key)
                + state.disk.filter { $0.value.responseDate >= date }.map(\.key)
            for identity in Set(recent) { state.removeEntry(identity, work: &work) }
            return work
        }
        self.perform(work)
    }

    /// Removes every stored response, in memory and on disk.
    public func removeAllCachedResponses() {
        let work = self.withState { state -> DiskWork in
            var work = DiskWork()
            for identity in Array(state.memory.keys) + Array(state.disk.keys) { state.removeEntry(identity, work: &work) }
            return work
        }
        self.perform(work)
    }

    /// Waits until the disk writes and deletions queued so far are done.
    public func flush() {
        self.diskQueue.sync {}
    }
}

/// A write waiting for the disk queue.
struct PendingWrite: Sendable {
    var generation: UInt64
    var data: Data
}

/// What the disk index knows of an entry file.
struct DiskRecord: Sendable {
    var fileName: String
    var primaryKey: String
    var varying: [VaryField]
    var size: Int
    var responseDate: Date
}

/// File work decided under the lock, done after it.
struct DiskWork {
    /// Files to write, each with the generation of the store that queued it: a block writes a
    /// file only if its pending write is still that one. (Taking whatever was pending, an
    /// earlier block wrote a later store's data before a removal queued between the two deleted
    /// it, and the later block found nothing left to write: the entry was lost.)
    var writes: [(name: String, generation: UInt64)] = []
    var deletions: [String] = []
}

/// The cache's tables, behind its lock.
struct ResponseCacheState: Sendable {
    /// Identities of the entries for each primary key, newest first.
    var variants: [String: [String]] = [:]
    var memory: [String: CacheEntry] = [:]
    var memoryLRU = LRUList<String>()
    var memoryUsage = 0
    var disk: [String: DiskRecord] = [:]
    var diskLRU = LRUList<String>()
    var diskUsage = 0
    /// Files to write, by name, newest content only (the newest store's generation).
    var pendingWrites: [String: PendingWrite] = [:]
    /// Files being written now, readable until they are on disk.
    var writing: [String: Data] = [:]
    var generation: UInt64 = 0

    /// Forgets an entry everywhere; its file goes in `work.deletions`.
    mutating func removeEntry(_ identity: String, work: inout DiskWork) {
        if let entry = self.memory.removeValue(forKey: identity) {
            self.memoryUsage -= entry.cost
            self.memoryLRU.remove(identity)
            self.dropVariant(identity, primaryKey: entry.primaryKey, keepingIfOn: self.disk[identity] != nil)
        }
        if let record = self.disk.removeValue(forKey: identity) {
            self.diskUsage -= record.size
            self.diskLRU.remove(identity)
            self.pendingWrites[record.fileName] = nil
            work.deletions.append(record.fileName)
            self.dropVariant(identity, primaryKey: record.primaryKey, keepingIfOn: false)
        }
    }

    /// Makes `identity` the first (newest) variant of `primaryKey`.
    mutating func moveVariantToFront(_ identity: String, primaryKey: String) {
        guard self.variants[primaryKey]?.first != identity else { return }
        self.variants[primaryKey]?.removeAll { $0 == identity }
        self.variants[primaryKey, default: []].insert(identity, at: 0)
    }

    private mutating func dropVariant(_ identity: String, primaryKey: String, keepingIfOn stillThere: Bool) {
        guard !stillThere else { return }
        self.variants[primaryKey]?.removeAll { $0 == identity }
        if self.variants[primaryKey]?.isEmpty == true { self.variants[primaryKey] = nil }
    }

    mutating func evictMemory(capacity: Int) {
        while self.memoryUsage > capacity, let identity = self.memoryLRU.leastRecent {
            guard let entry = self.memory.removeValue(forKey: identity) else {
                self.memoryLRU.remove(identity)
                continue
            }
            self.memoryUsage -= entry.cost
            self.memoryLRU.remove(identity)
            self.dropVariant(identity, primaryKey: entry.primaryKey, keepingIfOn: self.disk[identity] != nil)
        }
    }

    mutating func evictDisk(capacity: Int, work: inout DiskWork) {
        while self.diskUsage > capacity, let identity = self.diskLRU.leastRecent {
            guard let record = self.disk.removeValue(forKey: identity) else {
                self.diskLRU.remove(identity)
                continue
            }
            self.diskUsage -= record.size
            self.diskLRU.remove(identity)
            self.pendingWrites[record.fileName] = nil
            work.deletions.append(record.fileName)
            self.dropVariant(identity, primaryKey: record.primaryKey, keepingIfOn: self.memory[identity] != nil)
        }
    }
}
