import Foundation
import Logging
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ResponseCache {
    /// Makes the folder if needed and indexes the entry files in it, least recently used first
    /// (by modification time, which a disk hit refreshes). Temporary files (a write a crash cut
    /// short) and damaged entries are deleted.
    func loadDirectory() throws {
        guard let directory = self.directory else { return }
        let manager = FileManager.default
        let names: [String]
        do {
            try manager.createDirectory(at: directory, withIntermediateDirectories: true)
            names = try manager.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw CourierError(.fileSystemFailure, "cannot use \(directory.path) as a cache folder", underlyingError: error)
        }
        var found: [(record: DiskRecord, identity: String, modified: Date)] = []
        for name in names {
            let url = directory.appendingPathComponent(name)
            if AtomicFile.isTemporary(name) {
                self.logger?.info("deleting \(url.path), a cache write that did not finish")
                unlink(url.path)
                continue
            }
            guard name.hasSuffix(CacheEntryFile.fileExtension) else { continue }
            do {
                let (head, size, modified) = try Self.readHead(of: url)
                guard CacheEntry.fileName(identity: head.identity) == name else { throw CacheEntryFile.Damage.badHead }
                let record = DiskRecord(
                    fileName: name, primaryKey: head.primaryKey, varying: head.varying, size: size,
                    responseDate: Date(timeIntervalSince1970: head.responseDate))
                found.append((record, head.identity, modified))
            } catch {
                self.logger?.error("dropping the damaged cache entry \(url.path): \(error)")
                unlink(url.path)
            }
        }
        found.sort { $0.modified < $1.modified }
        let work = self.withState { state -> DiskWork in
            for item in found {
                state.disk[item.identity] = item.record
                state.diskUsage += item.record.size
                state.diskLRU.touch(item.identity)
                // Oldest first, so that the newest variant ends up first.
                state.variants[item.record.primaryKey, default: []].insert(item.identity, at: 0)
            }
            var work = DiskWork()
            state.evictDisk(capacity: self.diskCapacity, work: &work)
            return work
        }
        self.perform(work)
    }

    /// The head of an entry file, its size and modification time.
    static func readHead(of url: URL) throws -> (CacheEntryFile.Head, Int, Date) {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
        let modified = attributes[.modificationDate] as? Date ?? .distantPast
        var prefix = try handle.read(upToCount: 4096) ?? Data()
        if prefix.count >= CacheEntryFile.prefixLength {
            let headLength = prefix[prefix.startIndex + 8..<prefix.startIndex + 12].reduce(0) { $0 << 8 | Int($1) }
            let wanted = CacheEntryFile.prefixLength + headLength
            if wanted > prefix.count, wanted <= size {
                prefix.append(try handle.read(upToCount: wanted - prefix.count) ?? Data())
            }
        }
        return (try CacheEntryFile.head(from: prefix, fileLength: size), size, modified)
    }

    /// Reads and checks an entry file (or the bytes still waiting to be written); a damaged file
    /// is dropped and logged. A hit is kept in memory when it fits, and its file's modification
    /// time refreshed (the disk tier's recency across restarts).
    func readDiskEntry(_ record: DiskRecord, pending: Data?) -> CacheEntry? {
        guard let directory = self.directory else { return nil }
        let url = directory.appendingPathComponent(record.fileName)
        let data: Data
        if let pending {
            data = pending
        } else {
            do {
                data = try Data(contentsOf: url)
            } catch {
                // Evicted or removed meanwhile: a miss. Anything else is worth a line in the log.
                if (error as NSError).code != NSFileReadNoSuchFileError {
                    self.logger?.error("cannot read the cache entry \(url.path): \(error)")
                }
                self.forget(record)
                return nil
            }
        }
        let entry: CacheEntry
        do {
            entry = try CacheEntryFile.decode(data)
            guard entry.primaryKey == record.primaryKey, entry.varying == record.varying else { throw CacheEntryFile.Damage.badHead }
        } catch {
            self.logger?.error("dropping the damaged cache entry \(url.path): \(error)")
            self.forget(record)
            return nil
        }
        if pending == nil {
            // Refresh the recency a restart will read back.
            utimes(url.path, nil)
        }
        if entry.cost <= Self.maximumEntrySize(capacity: self.memoryCapacity) {
            let identity = entry.identity
            self.withState { state in
                guard state.disk[identity] != nil, state.memory[identity] == nil else { return }
                state.memory[identity] = entry
                state.memoryUsage += entry.cost
                state.memoryLRU.touch(identity)
                state.evictMemory(capacity: self.memoryCapacity)
            }
        }
        return entry
    }

    /// Drops a record (and its file) unless a newer entry replaced it meanwhile.
    private func forget(_ record: DiskRecord) {
        let identity = CacheEntry.identity(primaryKey: record.primaryKey, varying: record.varying)
        let work = self.withState { state -> DiskWork in
            var work = DiskWork()
            guard let current = state.disk[identity], current.size == record.size, state.pendingWrites[record.fileName] == nil,
                state.writing[record.fileName] == nil
            else { return work }
            state.removeEntry(identity, work: &work)
            return work
        }
        self.perform(work)
    }

    /// Queues the writes and deletions decided under the lock, in order.
    func perform(_ work: DiskWork) {
        guard let directory = self.directory, !work.writes.isEmpty || !work.deletions.isEmpty else { return }
        // Not fire-and-forget: each block is a file operation the cache's state already counts
        // on; the serial queue keeps them in order, and `flush()` waits for them.
        self.diskQueue.async {
            for name in work.deletions {
                unlink(directory.appendingPathComponent(name).path)
            }
            for (name, generation) in work.writes {
                let pending = self.withState { state -> PendingWrite? in
                    // A later store's write is that store's block's to do (after any deletion
                    // queued between the two); a removed entry's, nobody's.
                    guard state.pendingWrites[name]?.generation == generation, let pending = state.pendingWrites.removeValue(forKey: name)
                    else { return nil }
                    state.writing[name] = pending.data
                    return pending
                }
                guard let pending else { continue }
                do {
                    try AtomicFile.write(pending.data, to: directory.appendingPathComponent(name))
                } catch {
                    self.logger?.error("cannot write a cache entry: \(error)")
                }
                self.withState { $0.writing[name] = nil }
            }
        }
    }
}
