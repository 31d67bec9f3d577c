import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import Courier

/// A folder of its own, removed at the end.
struct TemporaryFolder: ~Copyable {
    let url: URL

    init() throws {
        self.url = FileManager.default.temporaryDirectory.appendingPathComponent("courier-cache-\(UUID())")
        try FileManager.default.createDirectory(at: self.url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: self.url) }

    var entryFiles: [URL] {
        ((try? FileManager.default.contentsOfDirectory(atPath: self.url.path)) ?? [])
            .filter { $0.hasSuffix(".cache") }.sorted().map { self.url.appendingPathComponent($0) }
    }
}

@Suite("Response cache storage")
struct ResponseCacheStoreTests {
    func cached(_ body: String, fields: [(String, String)] = [("Cache-Control", "max-age=60")], url: URL = CacheFixtures.url) -> CachedResponse {
        CachedResponse(response: CacheFixtures.response(200, fields), data: Data(body.utf8), url: url, requestDate: CacheFixtures.t0)
    }

    @Test func storesAndReturnsInMemory() throws {
        let cache = ResponseCache(memoryCapacity: 1 << 20)
        let request = CacheFixtures.request()
        #expect(cache.cachedResponse(for: request) == nil)
        cache.storeCachedResponse(self.cached("one"), for: request)
        let found = try #require(cache.cachedResponse(for: request))
        #expect(found.data == Data("one".utf8))
        #expect(cache.cachedResponse(for: CacheFixtures.request(url: URL(string: "http://h.test/r?x=1#frag")!)) != nil, "the fragment is not part of the key")
        #expect(cache.cachedResponse(for: CacheFixtures.request(url: URL(string: "http://h.test/r?x=2")!)) == nil)
        cache.storeCachedResponse(self.cached("two"), for: request)
        #expect(cache.cachedResponse(for: request)?.data == Data("two".utf8))
        #expect(cache.currentMemoryUsage > 0)
        cache.removeCachedResponse(for: request)
        #expect(cache.cachedResponse(for: request) == nil)
        #expect(cache.currentMemoryUsage == 0)
    }

    @Test func varySelectsVariants() throws {
        let cache = ResponseCache(memoryCapacity: 1 << 20)
        let fields = [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language, Accept-Encoding")]
        let english = CacheFixtures.request([("Accept-Language", "en")])
        let french = CacheFixtures.request([("Accept-Language", " fr ")])
        cache.storeCachedResponse(self.cached("hello", fields: fields), for: english)
        cache.storeCachedResponse(self.cached("bonjour", fields: fields), for: french)
        #expect(cache.cachedResponse(for: english)?.data == Data("hello".utf8))
        #expect(cache.cachedResponse(for: CacheFixtures.request([("Accept-Language", "fr")]))?.data == Data("bonjour".utf8))
        #expect(cache.cachedResponse(for: CacheFixtures.request()) == nil, "no Accept-Language selects neither")
        #expect(cache.cachedResponse(for: CacheFixtures.request([("Accept-Language", "en"), ("Accept-Encoding", "gzip")])) == nil)
        // A response that no longer varies replaces every variant.
        cache.storeCachedResponse(self.cached("plain"), for: english)
        #expect(cache.cachedResponse(for: french)?.data == Data("plain".utf8))
    }

    @Test func memoryEvictsTheLeastRecentlyUsed() {
        // 5% of 40 000 bytes: entries up to 2000 bytes are kept.
        let cache = ResponseCache(memoryCapacity: 40_000)
        let body = String(repeating: "x", count: 1500)
        let requests = (0..<40).map { CacheFixtures.request(url: URL(string: "http://h.test/\($0)")!) }
        for request in requests.prefix(30) {
            cache.storeCachedResponse(self.cached(body, url: request.url), for: request)
            _ = cache.cachedResponse(for: requests[0])  // keep the first one in use
        }
        #expect(cache.currentMemoryUsage <= 40_000)
        #expect(cache.cachedResponse(for: requests[0]) != nil, "recently used")
        #expect(cache.cachedResponse(for: requests[1]) == nil, "least recently used: evicted")
        #expect(cache.cachedResponse(for: requests[29]) != nil)
        cache.storeCachedResponse(self.cached(String(repeating: "y", count: 2500), url: requests[35].url), for: requests[35])
        #expect(cache.cachedResponse(for: requests[35]) == nil, "over 5% of the capacity: not kept")
    }

    /// Storing a URL's response again replaces the only one kept (the in-place path): the usage
    /// counts the new entry alone, the entry is the newest, and the replaced one is the most
    /// recently used, so that eviction takes the others first.
    @Test func aResponseStoredAgainReplacesTheOneKept() throws {
        let cache = ResponseCache(memoryCapacity: 40_000)
        let requests = (0..<3).map { CacheFixtures.request(url: URL(string: "http://h.test/\($0)")!) }
        for request in requests { cache.storeCachedResponse(self.cached(String(repeating: "a", count: 1000), url: request.url), for: request) }
        let usage = cache.currentMemoryUsage
        // Replaced, and nothing read (reading touches an entry): request 0 is now the most
        // recently used, 1 the least.
        cache.storeCachedResponse(self.cached(String(repeating: "c", count: 1400), url: requests[0].url), for: requests[0])
        #expect(cache.currentMemoryUsage == usage + 400, "the old entry's cost is gone, the new one's counted")
        var index = 3
        while index < 100 {
            let before = cache.currentMemoryUsage
            let request = CacheFixtures.request(url: URL(string: "http://h.test/\(index)")!)
            cache.storeCachedResponse(self.cached(String(repeating: "d", count: 1000), url: request.url), for: request)
            index += 1
            // An entry of about 1,170 bytes went in: a smaller growth means one went out.
            if cache.currentMemoryUsage - before < 500 { break }
        }
        #expect(index < 100, "the cache evicted")
        #expect(cache.cachedResponse(for: requests[1]) == nil, "the least recently used went first")
        #expect(try #require(cache.cachedResponse(for: requests[0])).data.count == 1400, "replaced later, so used more recently")
        #expect(cache.currentMemoryUsage <= 40_000)
        // Smaller again, then another Vary (the general path): the usage stays the sum of what is kept.
        cache.storeCachedResponse(self.cached("b", url: requests[0].url), for: requests[0])
        #expect(try #require(cache.cachedResponse(for: requests[0])).data == Data("b".utf8))
        var varied = self.cached("v", fields: [("Cache-Control", "max-age=60"), ("Vary", "Accept")], url: requests[0].url)
        varied.storagePolicy = .allowedInMemoryOnly
        cache.storeCachedResponse(varied, for: requests[0])
        #expect(try #require(cache.cachedResponse(for: requests[0])).data == Data("v".utf8))
        cache.removeAllCachedResponses()
        #expect(cache.currentMemoryUsage == 0, "every cost added was taken off again")
    }

    @Test func storagePolicies() {
        let cache = ResponseCache(memoryCapacity: 1 << 20)
        var refused = self.cached("no")
        refused.storagePolicy = .notAllowed
        cache.storeCachedResponse(refused, for: CacheFixtures.request())
        #expect(cache.cachedResponse(for: CacheFixtures.request()) == nil)
    }

    /// A 304's freshened copy replaces the response it revalidated, not one stored meanwhile
    /// (RFC 9111 4.3.4): a revalidation slower than another request's full answer put the older
    /// body back, fresh. In memory and on disk (read back from the file, whose dates may differ
    /// in their last bits).
    @Test(arguments: [false, true])
    func aFreshenedCopyReplacesOnlyWhatItRevalidated(_ onDisk: Bool) throws {
        let folder = try TemporaryFolder()
        let cache =
            onDisk
            ? try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: folder.url) : ResponseCache(memoryCapacity: 1 << 20)
        // The disk queue's last write must be done before the folder is removed (a file written
        // while it was being removed left the folder behind).
        defer { cache.flush() }
        let request = CacheFixtures.request()
        var one = self.cached("one")
        one.responseDate = CacheFixtures.t0.addingTimeInterval(0.123_456_789)
        cache.storeCachedResponse(one, for: request)
        let revalidated = try #require(cache.cachedResponse(for: request))
        // Another task's full answer, stored while the revalidation waited.
        var two = self.cached("two")
        two.responseDate = CacheFixtures.t0.addingTimeInterval(5)
        cache.storeCachedResponse(two, for: request)
        var freshened = revalidated
        freshened.responseDate = CacheFixtures.t0.addingTimeInterval(9)
        cache.storeCachedResponse(freshened, for: request, replacing: revalidated)
        #expect(cache.cachedResponse(for: request)?.data == Data("two".utf8), "the newer answer stays")
        // The 304 of what is stored freshens it.
        let current = try #require(cache.cachedResponse(for: request))
        var renewed = current
        renewed.responseDate = CacheFixtures.t0.addingTimeInterval(20)
        cache.storeCachedResponse(renewed, for: request, replacing: current)
        let now = try #require(cache.cachedResponse(for: request))
        #expect(now.data == Data("two".utf8))
        #expect(abs(now.responseDate.timeIntervalSince(renewed.responseDate)) < 0.001)
    }

    @Test func aDiskCacheSurvivesARestart() throws {
        let folder = try TemporaryFolder()
        let request = CacheFixtures.request([("Accept-Language", "en")])
        do {
            let cache = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: folder.url)
            #expect(cache.isPersistent)
            cache.storeCachedResponse(self.cached("kept", fields: [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language"), ("X-A", "1")]),
                                      for: request)
            var memoryOnly = self.cached("memory", url: URL(string: "http://h.test/m")!)
            memoryOnly.storagePolicy = .allowedInMemoryOnly
            cache.storeCachedResponse(memoryOnly, for: CacheFixtures.request(url: URL(string: "http://h.test/m")!))
            cache.flush()
            #expect(folder.entryFiles.count == 1, "the memory-only entry never reaches the disk")
        }
        let reopened = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: folder.url)
        #expect(reopened.currentDiskUsage > 0)
        let found = try #require(reopened.cachedResponse(for: request))
        #expect(found.data == Data("kept".utf8))
        #expect(found.response.headerFields[HTTPField.Name("X-A")!] == "1")
        #expect(found.requestDate == CacheFixtures.t0)
        #expect(found.url == CacheFixtures.url)
        #expect(reopened.cachedResponse(for: CacheFixtures.request([("Accept-Language", "de")])) == nil, "Vary survives too")
        #expect(reopened.cachedResponse(for: CacheFixtures.request(url: URL(string: "http://h.test/m")!)) == nil)
    }

    /// Store, remove, store again, all before the disk queue runs (a GET, a PUT that invalidates
    /// it, a GET, on a busy queue): the file on disk is the last store's. (The first store's
    /// block wrote the last store's data, the removal's block deleted it, and the last store's
    /// block found nothing to write: the entry was gone after a restart.) The memory tier is
    /// off, so that every read goes to the disk.
    @Test func aStoreAfterARemovalIsOnDiskWhateverTheQueuesTiming() throws {
        let folder = try TemporaryFolder()
        let request = CacheFixtures.request()
        do {
            let cache = try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: folder.url)
            let held = DispatchSemaphore(value: 0)
            cache.diskQueue.async { held.wait() }
            cache.storeCachedResponse(self.cached("first"), for: request)
            cache.removeCachedResponse(for: request)
            cache.storeCachedResponse(self.cached("second"), for: request)
            held.signal()
            cache.flush()
            #expect(cache.cachedResponse(for: request)?.data == Data("second".utf8))
            #expect(folder.entryFiles.count == 1)
        }
        let reopened = try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: folder.url)
        #expect(reopened.cachedResponse(for: request)?.data == Data("second".utf8))
    }

    @Test func aTruncatedEntryIsDroppedAndLogged() throws {
        let folder = try TemporaryFolder()
        let request = CacheFixtures.request()
        do {
            let cache = try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: folder.url)
            cache.storeCachedResponse(self.cached(String(repeating: "z", count: 5000)), for: request)
            cache.flush()
        }
        let file = try #require(folder.entryFiles.first)
        // A crash mid-write, as a file system might leave it: the entry cut short.
        let whole = try Data(contentsOf: file)
        try whole.prefix(whole.count / 2).write(to: file)
        let (logger, messages) = RecordingLogHandler.logger()
        let reopened = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: folder.url, logger: logger)
        #expect(reopened.cachedResponse(for: request) == nil)
        #expect(folder.entryFiles.isEmpty, "the damaged file is deleted")
        #expect(reopened.currentDiskUsage == 0)
        #expect(messages.withLockedValue { $0 }.contains { $0.hasPrefix("error") && $0.contains("damaged") })
    }

    @Test func aCorruptBodyIsCaughtOnRead() throws {
        let folder = try TemporaryFolder()
        let request = CacheFixtures.request()
        do {
            let cache = try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: folder.url)
            cache.storeCachedResponse(self.cached("abcdefgh"), for: request)
            cache.flush()
        }
        let file = try #require(folder.entryFiles.first)
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count - 6] ^= 0xFF  // a flipped bit in the body: same length
        try bytes.write(to: file)
        let (logger, messages) = RecordingLogHandler.logger()
        let reopened = try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: folder.url, logger: logger)
        #expect(reopened.currentDiskUsage > 0, "the length is right: indexed")
        #expect(reopened.cachedResponse(for: request) == nil, "the checksum is wrong: dropped")
        reopened.flush()
        #expect(folder.entryFiles.isEmpty)
        #expect(messages.withLockedValue { $0 }.contains { $0.contains("checksum") })
    }

    @Test func aWriteLeftByACrashIsIgnored() throws {
        let folder = try TemporaryFolder()
        let leftover = folder.url.appendingPathComponent(".0123456789abcdef.cache.tmp-42")
        try Data("half an entry".utf8).write(to: leftover)
        let cache = try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: folder.url)
        #expect(cache.currentDiskUsage == 0)
        #expect(!FileManager.default.fileExists(atPath: leftover.path))
    }

    @Test func diskEvictionKeepsWithinCapacity() throws {
        let folder = try TemporaryFolder()
        let cache = try ResponseCache(memoryCapacity: 0, diskCapacity: 100_000, directory: folder.url)
        let body = String(repeating: "d", count: 4000)
        for index in 0..<40 {
            let request = CacheFixtures.request(url: URL(string: "http://h.test/\(index)")!)
            cache.storeCachedResponse(self.cached(body, url: request.url), for: request)
        }
        cache.flush()
        #expect(cache.currentDiskUsage <= 100_000)
        let onDisk = try folder.entryFiles.reduce(0) { $0 + (try Data(contentsOf: $1)).count }
        #expect(onDisk == cache.currentDiskUsage)
        #expect(cache.cachedResponse(for: CacheFixtures.request(url: URL(string: "http://h.test/39")!)) != nil)
        #expect(cache.cachedResponse(for: CacheFixtures.request(url: URL(string: "http://h.test/0")!)) == nil)
        cache.removeAllCachedResponses()
        cache.flush()
        #expect(folder.entryFiles.isEmpty)
        #expect(cache.currentDiskUsage == 0)
    }

    @Test func concurrentStoresAndReadsOfOneURL() async throws {
        let folder = try TemporaryFolder()
        let cache = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: folder.url)
        let request = CacheFixtures.request()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    if index % 2 == 0 {
                        cache.storeCachedResponse(self.cached("v\(index)"), for: request)
                    } else if let found = cache.cachedResponse(for: request) {
                        #expect(String(decoding: found.data, as: UTF8.self).hasPrefix("v"))
                    }
                }
            }
        }
        cache.flush()
        #expect(folder.entryFiles.count == 1)
        let reopened = try ResponseCache(memoryCapacity: 1 << 20, diskCapacity: 1 << 20, directory: folder.url)
        let final = try #require(reopened.cachedResponse(for: request))
        #expect(final.data == cache.cachedResponse(for: request)?.data, "the disk holds the last write")
    }

    @Test func anUnusableFolderIsATypedError() throws {
        let folder = try TemporaryFolder()
        let file = folder.url.appendingPathComponent("plain-file")
        try Data("x".utf8).write(to: file)
        #expect(throws: CourierError(.fileSystemFailure, "")) {
            try ResponseCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: file)
        }
    }
}
