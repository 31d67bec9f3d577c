/// Keys in order of use, least recent first, with O(1) touch and removal.
struct LRUList<Key: Hashable & Sendable>: Sendable {
    private struct Links: Sendable {
        var previous: Key?
        var next: Key?
    }

    private var links: [Key: Links] = [:]
    /// The least recently used key.
    private(set) var leastRecent: Key?
    /// The most recently used key.
    private(set) var mostRecent: Key?

    var count: Int { self.links.count }

    func contains(_ key: Key) -> Bool { self.links[key] != nil }

    /// Makes `key` the most recently used, adding it if needed.
    mutating func touch(_ key: Key) {
        if self.mostRecent == key { return }
        self.remove(key)
        self.links[key] = Links(previous: self.mostRecent, next: nil)
        if let tail = self.mostRecent { self.links[tail]!.next = key }
        self.mostRecent = key
        if self.leastRecent == nil { self.leastRecent = key }
    }

    mutating func remove(_ key: Key) {
        guard let links = self.links.removeValue(forKey: key) else { return }
        if let previous = links.previous { self.links[previous]!.next = links.next } else { self.leastRecent = links.next }
        if let next = links.next { self.links[next]!.previous = links.previous } else { self.mostRecent = links.previous }
    }

    /// The keys, least recent first.
    var keys: [Key] {
        var result: [Key] = []
        result.reserveCapacity(self.links.count)
        var current = self.leastRecent
        while let key = current {
            result.append(key)
            current = self.links[key]?.next
        }
        return result
    }
}

/// FNV-1a, 64 bits: a short stable name for a cache entry's file.
enum FNV1a {
    static func hash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}
