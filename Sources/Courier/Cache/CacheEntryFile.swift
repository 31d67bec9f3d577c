import Foundation
import HTTPTypes

/// A request field named by a response's `Vary`, with the value the request had (nil when absent).
/// Two are equal when their bytes are (RFC 9111 4.1 compares the normalized values; `String`'s
/// `==` would take a precomposed and a decomposed letter for one value).
struct VaryField: Codable, Hashable, Sendable {
    var name: String
    var value: String?

    static func == (a: VaryField, b: VaryField) -> Bool {
        guard a.name.utf8.elementsEqual(b.name.utf8) else { return false }
        switch (a.value, b.value) {
        case (nil, nil): return true
        case (let x?, let y?): return x.utf8.elementsEqual(y.utf8)
        default: return false
        }
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(self.name.utf8.count)
        for byte in self.name.utf8 { hasher.combine(byte) }
        hasher.combine(self.value == nil)
        for byte in self.value?.utf8 ?? "".utf8 { hasher.combine(byte) }
    }
}

/// What a cache keeps for one stored response: the response and the request fields its `Vary`
/// names, under a key made of both.
struct CacheEntry: Sendable {
    let cached: CachedResponse
    /// The primary key: the request's URL without its fragment.
    let primaryKey: String
    let varying: [VaryField]
    /// About how many bytes the entry takes: its body, key and head, counted once when it is
    /// made (the cache adds and subtracts it on every store, replacement and eviction).
    let cost: Int

    init(cached: CachedResponse, primaryKey: String, varying: [VaryField]) {
        self.cached = cached
        self.primaryKey = primaryKey
        self.varying = varying
        self.cost = Self.cost(of: cached, primaryKey: primaryKey)
    }

    /// The entry's identity: primary key and `Vary` values.
    var identity: String { Self.identity(primaryKey: self.primaryKey, varying: self.varying) }

    static func identity(primaryKey: String, varying: [VaryField]) -> String {
        var text = primaryKey
        for field in varying {
            text += "\u{1F}\(field.name)=\(field.value ?? "\u{0}")"
        }
        return text
    }

    /// The file name of the entry with this identity.
    static func fileName(identity: String) -> String {
        let hash = String(FNV1a.hash(identity), radix: 16)
        return String(repeating: "0", count: 16 - hash.count) + hash + CacheEntryFile.fileExtension
    }

    /// About how many bytes an entry of `cached` under `primaryKey` takes.
    static func cost(of cached: CachedResponse, primaryKey: String) -> Int {
        var cost = cached.data.count + primaryKey.utf8.count + 128
        for field in cached.response.headerFields { cost += field.name.rawName.utf8.count + field.value.utf8.count + 4 }
        return cost
    }

    /// The primary key of a request for `url`.
    static func primaryKey(for url: URL) -> String {
        let text = url.absoluteString
        // Scanned as bytes: a Character search would break the whole string into graphemes.
        if let hash = text.utf8.firstIndex(of: UInt8(ascii: "#")) { return String(text[..<hash]) }
        return text
    }

    /// The `Vary` field names of a response, lower-cased, in order.
    static func varyNames(of response: HTTPResponse) -> [String] {
        var names: [String] = []
        for value in response.headerFields[values: .vary] {
            for name in Self.varyMembers(value) {
                let name = name.lowercasedASCII
                if !name.isEmpty, !names.contains(name) { names.append(name) }
            }
        }
        return names
    }

    /// The members of one `Vary` value, spaces around them removed, split at the commas' bytes
    /// (a comma followed by a combining mark is one `Character` with it, and still a comma).
    static func varyMembers(_ value: String) -> [String] {
        value.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self).trimmingSpaces()
        }
    }

    /// The values `request` has for the named fields, normalized (RFC 9111 4.1): several fields
    /// and the members of a list joined by `", "`, spaces around members removed and runs of
    /// spaces inside them made one, and the values the field's definition makes case-insensitive
    /// (``caseInsensitiveVaryFields``) lower-cased. `Cookie` is joined by `"; "` and otherwise kept.
    static func varying(_ names: [String], of request: Request) -> [VaryField] {
        names.map { name in
            guard let fieldName = HTTPField.Name(name) else { return VaryField(name: name, value: nil) }
            let values = request.headerFields[values: fieldName]
            if values.isEmpty { return VaryField(name: name, value: nil) }
            if fieldName == .cookie {
                return VaryField(name: name, value: values.map { $0.trimmingSpaces() }.joined(separator: "; "))
            }
            var members: [String] = []
            for value in values {
                for member in value.split(separator: ",") {
                    let words = member.split(whereSeparator: { $0 == " " || $0 == "\t" })
                    guard !words.isEmpty else { continue }
                    members.append(words.joined(separator: " "))
                }
            }
            var value = members.joined(separator: ", ")
            if Self.caseInsensitiveVaryFields.contains(fieldName) { value = value.lowercasedASCII }
            return VaryField(name: name, value: value)
        }
    }

    /// Request fields whose values their definitions make case-insensitive (RFC 9110 12.5.3,
    /// 12.5.4): content codings and language ranges.
    static let caseInsensitiveVaryFields: Set<HTTPField.Name> = [.acceptEncoding, .acceptLanguage]

    /// Whether `request` selects this entry: every field the entry's `Vary` names has the same value.
    func isSelected(by request: Request) -> Bool {
        Self.varying(self.varying, select: request)
    }

    /// Whether `request` has the stored values of the fields `varying` names.
    static func varying(_ varying: [VaryField], select request: Request) -> Bool {
        varying.isEmpty || Self.varying(varying.map(\.name), of: request) == varying
    }
}

/// The on-disk form of a ``CacheEntry``: a magic number, the length of a JSON head, the head,
/// the body, and a CRC-32 of everything before it. A file that is short, long, or fails its
/// checksum is damaged.
enum CacheEntryFile {
    static let fileExtension = ".cache"
    static let magic = Array("CRCACHE1".utf8)
    /// Magic plus the head's length.
    static let prefixLength = 12

    struct Head: Codable {
        var identity: String
        var primaryKey: String
        var url: String
        var varying: [VaryField]
        var status: Int
        var reasonPhrase: String
        var fields: [[String]]
        var requestDate: Double
        var responseDate: Double
        var bodyLength: Int
    }

    /// Why a file was not read.
    enum Damage: Error, CustomStringConvertible {
        case badMagic, badHead, wrongLength(expected: Int, actual: Int), badChecksum, badField

        var description: String {
            switch self {
            case .badMagic: "not a Courier cache file"
            case .badHead: "its head does not decode"
            case .wrongLength(let expected, let actual): "it has \(actual) bytes instead of \(expected) (a write cut short?)"
            case .badChecksum: "its checksum does not match"
            case .badField: "it holds an invalid header field"
            }
        }
    }

    static func encode(_ entry: CacheEntry) throws -> Data {
        let response = entry.cached.response
        let head = Head(
            identity: entry.identity, primaryKey: entry.primaryKey, url: entry.cached.url.absoluteString, varying: entry.varying,
            status: response.status.code, reasonPhrase: response.status.reasonPhrase,
            fields: response.headerFields.map { [$0.name.rawName, $0.value] },
            requestDate: entry.cached.requestDate.timeIntervalSince1970, responseDate: entry.cached.responseDate.timeIntervalSince1970,
            bodyLength: entry.cached.data.count)
        let headData = try JSONEncoder().encode(head)
        var data = Data(capacity: self.prefixLength + headData.count + entry.cached.data.count + 4)
        data.append(contentsOf: self.magic)
        data.append(contentsOf: Self.bigEndian(UInt32(headData.count)))
        data.append(headData)
        data.append(entry.cached.data)
        let crc = data.withUnsafeBytes { Checksum.crc32($0) }
        data.append(contentsOf: Self.bigEndian(crc))
        return data
    }

    /// Reads the head of a file from its first bytes; `fileLength` checks the total.
    static func head(from prefix: Data, fileLength: Int) throws -> Head {
        guard prefix.count >= self.prefixLength, Array(prefix.prefix(8)) == self.magic else { throw Damage.badMagic }
        let headLength = Int(Self.uint32(prefix, at: 8))
        guard prefix.count >= self.prefixLength + headLength else {
            throw Damage.wrongLength(expected: self.prefixLength + headLength, actual: fileLength)
        }
        let start = prefix.startIndex + self.prefixLength
        guard let head = try? JSONDecoder().decode(Head.self, from: prefix[start..<(start + headLength)]) else { throw Damage.badHead }
        // The head is the file's word, checked before it is believed: a length that is negative
        // or past the file (summing it could overflow) is damage, and so are dates that are not
        // a time (an age from 1e300 seconds cannot be written in `Age`).
        guard head.bodyLength >= 0, head.bodyLength <= fileLength else { throw Damage.badHead }
        let expected = self.prefixLength + headLength + head.bodyLength + 4
        guard expected == fileLength else { throw Damage.wrongLength(expected: expected, actual: fileLength) }
        guard Self.isPlausible(head.requestDate), Self.isPlausible(head.responseDate) else { throw Damage.badHead }
        return head
    }

    /// Decodes a whole file, checking length and checksum.
    static func decode(_ data: Data) throws -> CacheEntry {
        let head = try self.head(from: data, fileLength: data.count)
        let crcOffset = data.count - 4
        let expected = Self.uint32(data, at: crcOffset)
        let actual = data.withUnsafeBytes { Checksum.crc32(UnsafeRawBufferPointer(rebasing: $0[..<crcOffset])) }
        guard expected == actual else { throw Damage.badChecksum }
        var fields = HTTPFields()
        for pair in head.fields {
            guard pair.count == 2, let name = HTTPField.Name(pair[0]) else { throw Damage.badField }
            fields.append(HTTPField(name: name, value: pair[1]))
        }
        guard let url = URL(string: head.url), (100...999).contains(head.status) else { throw Damage.badHead }
        let bodyStart = data.startIndex + crcOffset - head.bodyLength
        let response = HTTPResponse(status: HTTPResponse.Status(code: head.status, reasonPhrase: head.reasonPhrase), headerFields: fields)
        let cached = CachedResponse(
            response: response, data: Data(data[bodyStart..<(data.startIndex + crcOffset)]), url: url, storagePolicy: .allowed,
            requestDate: Date(timeIntervalSince1970: head.requestDate), responseDate: Date(timeIntervalSince1970: head.responseDate))
        return CacheEntry(cached: cached, primaryKey: head.primaryKey, varying: head.varying)
    }

    /// Whether seconds since 1970 make a date between years 1 and 9999.
    private static func isPlausible(_ seconds: Double) -> Bool {
        (-62_135_596_800...253_402_300_799).contains(seconds)
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func uint32(_ data: Data, at offset: Int) -> UInt32 {
        let index = data.startIndex + offset
        return data[index..<(index + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
