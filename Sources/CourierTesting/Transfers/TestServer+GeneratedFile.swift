import Foundation

extension TestServer {
    /// The content, validators and URL path of `/courier/file/{n}`, reproduced on the client side.
    ///
    /// The content is made up on the fly and never held whole, so `n` may be gigabytes. Byte `i`
    /// is byte `i % 8` (little-endian) of the 64-bit word `w = i / 8`, where word `w` is
    /// SplitMix64's output for the state `seed &+ (w &+ 1) &* 0x9E3779B97F4A7C15`. `seed` is 0
    /// without a version, else the 64-bit FNV-1a hash of the version's UTF-8 bytes. The bytes at an
    /// offset do not depend on `n` (a shorter file is a prefix of a longer one), and they change
    /// with the version, so a download resumed across a change of version is caught by its checksum.
    ///
    /// ```swift
    /// let file = TestServer.GeneratedFile(length: 10 << 20, version: "2")
    /// let url = server.url(file.path(["drop-after": "4096"]))  // /courier/file/10485760?version=2&drop-after=4096
    /// // …download, resume with Range: bytes=4096- and If-Range: file.etag…
    /// #expect(CRC32.checksum(of: downloaded) == file.crc32())
    /// ```
    public struct GeneratedFile: Sendable, Hashable {
        /// The size in bytes (`n`).
        public var length: Int
        /// The `version` query option, or nil for none. An empty version is the same as none.
        public var version: String?

        /// Describes `/courier/file/{length}`, or `/courier/file/{length}?version={version}`.
        /// - Parameters:
        ///   - length: The size in bytes (not negative).
        ///   - version: The `version` option: another version is another resource, with other
        ///     bytes and validators.
        public init(length: Int, version: String? = nil) {
            precondition(length >= 0, "a file length cannot be negative")
            self.length = length
            self.version = version?.isEmpty == true ? nil : version
        }

        /// The path to ask for, with `version` when there is one and then `options` (for
        /// example `["drop-after": "100"]`), percent-encoded.
        public func path(_ options: KeyValuePairs<String, String> = [:]) -> String {
            var items: [(String, String)] = self.version.map { [("version", $0)] } ?? []
            items += options.map { ($0.key, $0.value) }
            guard !items.isEmpty else { return "/courier/file/\(self.length)" }
            let query = items.map { "\(Self.percentEncoded($0.0))=\(Self.percentEncoded($0.1))" }.joined(separator: "&")
            return "/courier/file/\(self.length)?\(query)"
        }

        /// The `ETag` header value the server sends, quotes included: a strong tag made of the
        /// length and the version's seed, such as `"file-1024-0000000000000000"`.
        public var etag: String {
            let hex = String(self.seed, radix: 16)
            return "\"file-\(self.length)-\(String(repeating: "0", count: 16 - hex.count))\(hex)\""
        }

        /// The modification time the server reports: 2000-01-01 00:00:00 GMT without a version,
        /// else that plus `seed % 100_000_000` seconds plus one.
        public var modificationDate: Date {
            let base: TimeInterval = 946_684_800
            return Date(timeIntervalSince1970: self.seed == 0 ? base : base + 1 + TimeInterval(self.seed % 100_000_000))
        }

        /// The `Last-Modified` header value the server sends (an IMF-fixdate).
        public var lastModified: String { HTTPBinRoutes.httpDate(self.modificationDate) }

        /// The bytes at `range` (the whole file when nil). The range must lie within the file.
        public func bytes(_ range: Range<Int>? = nil) -> [UInt8] {
            let range = self.checked(range)
            return [UInt8](unsafeUninitializedCapacity: range.count) { buffer, initialized in
                self.fill(UnsafeMutableRawBufferPointer(buffer), from: range.lowerBound)
                initialized = range.count
            }
        }

        /// The CRC-32 of the bytes at `range` (the whole file when nil), computed in slices
        /// without holding the range in memory.
        public func crc32(_ range: Range<Int>? = nil) -> CRC32 {
            let range = self.checked(range)
            var crc = CRC32()
            let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
            defer { scratch.deallocate() }
            var offset = range.lowerBound
            while offset < range.upperBound {
                let slice = UnsafeMutableRawBufferPointer(rebasing: scratch.prefix(min(scratch.count, range.upperBound - offset)))
                self.fill(slice, from: offset)
                crc.update(UnsafeRawBufferPointer(slice))
                offset += slice.count
            }
            return crc
        }

        // MARK: Making the bytes

        /// 0 without a version, else the FNV-1a hash of its UTF-8 bytes.
        var seed: UInt64 {
            guard let version = self.version else { return 0 }
            var hash: UInt64 = 0xCBF2_9CE4_8422_2325
            for byte in version.utf8 {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01B3
            }
            return hash
        }

        /// Writes the content from `offset` on into all of `buffer`.
        func fill(_ buffer: UnsafeMutableRawBufferPointer, from offset: Int) {
            Self.fill(buffer, from: offset, seed: self.seed)
        }

        static func fill(_ buffer: UnsafeMutableRawBufferPointer, from offset: Int, seed: UInt64) {
            var index = 0
            var position = offset
            // Up to the next word boundary byte by byte, then whole words, then the tail.
            while index < buffer.count, position & 7 != 0 {
                buffer[index] = UInt8(truncatingIfNeeded: word(position >> 3, seed: seed) >> (8 * UInt64(position & 7)))
                index += 1
                position += 1
            }
            while buffer.count - index >= 8 {
                buffer.storeBytes(of: word(position >> 3, seed: seed).littleEndian, toByteOffset: index, as: UInt64.self)
                index += 8
                position += 8
            }
            if index < buffer.count {
                let last = word(position >> 3, seed: seed)
                for shift in 0..<(buffer.count - index) {
                    buffer[index + shift] = UInt8(truncatingIfNeeded: last >> (8 * UInt64(shift)))
                }
            }
        }

        /// SplitMix64's output for word `index`.
        @inline(__always)
        static func word(_ index: Int, seed: UInt64) -> UInt64 {
            var value = seed &+ (UInt64(index) &+ 1) &* 0x9E37_79B9_7F4A_7C15
            value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
            value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
            return value ^ (value >> 31)
        }

        private func checked(_ range: Range<Int>?) -> Range<Int> {
            let range = range ?? 0..<self.length
            precondition(range.lowerBound >= 0 && range.upperBound <= self.length, "\(range) is outside the file's 0..<\(self.length)")
            return range
        }

        private static func percentEncoded(_ text: String) -> String {
            let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
            return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
        }
    }
}
