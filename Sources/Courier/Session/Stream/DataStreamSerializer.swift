import Foundation
import NIOCore
import NIOFoundationCompat

/// Turns a streamed body into values as its chunks arrive (Alamofire's `DataStreamSerializer`),
/// for ``DataStreamResponse/serialized(by:)``.
///
/// The network keeps no chunk boundaries: a value the server wrote at once may arrive in two
/// chunks, and two values in one. A serializer keeps what a chunk leaves incomplete and returns
/// the values each chunk completes, zero or more; at the body's end it returns what is left.
///
/// ```swift
/// let stream = try await manager.stream(Request(url: url))
/// for try await text in stream.strings { print(text, terminator: "") }
/// ```
public protocol DataStreamSerializer: Sendable {
    /// What the serializer makes.
    associatedtype Output: Sendable

    /// The values that `chunk` completes, in order; what it leaves incomplete waits for the next.
    /// - Throws: ``CourierError`` (``CourierError/Code/responseSerializationFailed`` for Courier's
    ///   serializers) when the body cannot be made into values: the stream ends with it.
    mutating func serialize(_ chunk: ByteBuffer) throws(CourierError) -> [Output]

    /// The body ended: the values that what was kept completes (none by default).
    mutating func finish() throws(CourierError) -> [Output]

    /// A failure found after the values the last ``serialize(_:)`` returned, handed over once
    /// (none by default). A serializer that meets a bad value in a chunk after good ones returns
    /// the good ones and keeps the failure for this, so that nothing the server sent before it is
    /// lost, however the network cut the body: ``SerializedStream`` hands out those values, then
    /// ends with the failure, before it waits for another chunk.
    mutating func takeFailure() -> CourierError?
}

extension DataStreamSerializer {
    /// Nothing is kept between chunks: nothing is left at the end.
    public mutating func finish() throws(CourierError) -> [Output] { [] }

    /// A serializer that throws as soon as it fails keeps no failure.
    public mutating func takeFailure() -> CourierError? { nil }
}

/// Each chunk as it came, as `Data` (Alamofire's `PassthroughStreamSerializer`).
public struct PassthroughStreamSerializer: DataStreamSerializer {
    /// A serializer that hands on every chunk.
    public init() {}

    public mutating func serialize(_ chunk: ByteBuffer) -> [Data] {
        [Data(buffer: chunk, byteTransferStrategy: .noCopy)]
    }
}

/// The body as text, decoded as it arrives (Alamofire's `StringStreamSerializer`): one string a
/// chunk, holding every character the chunk completes. A character whose bytes are split between
/// two chunks comes whole with the second (Alamofire decodes each chunk alone, and so breaks such
/// a character in two); a byte that is not UTF-8, or a character the body ends in the middle of,
/// becomes U+FFFD, as `String(decoding:as:)` does.
///
/// The text is UTF-8 unless the body starts with a byte-order mark, which then says the encoding:
/// UTF-8, UTF-16 or UTF-32, either byte order (as ``StringResponseSerializer`` and the WHATWG
/// Encoding standard read one). The mark is not part of the text. A serializer sees the body, not
/// its `Content-Type`: a `charset` does not change the encoding here.
public struct StringStreamSerializer: DataStreamSerializer {
    /// What the last chunk left: the start of a character (at most 3 bytes of UTF-8, a byte of a
    /// UTF-16 unit or a high surrogate, up to 3 bytes of a UTF-32 unit), or, before the encoding
    /// is known, the body's first bytes, which may be the start of a byte-order mark.
    private var pending: [UInt8] = []
    /// The encoding, once the body's start said it (UTF-8, or one a byte-order mark names); nil
    /// before.
    private var form: String.Encoding?

    /// A serializer of UTF-8 text, or of the encoding a byte-order mark names.
    public init() {}

    public mutating func serialize(_ chunk: ByteBuffer) -> [String] {
        switch self.form {
        case .utf8:
            // Decoded from the chunk itself; joined to the start of a split character only after one.
            return self.pending.isEmpty ? self.decode(chunk.readableBytesView) : self.decode(self.pending + chunk.readableBytesView)
        case let form?:
            return self.decodeUnits(self.pending + chunk.readableBytesView, form: form, atEnd: false)
        case nil:
            return self.pending.isEmpty ? self.start(chunk.readableBytesView) : self.start(self.pending + chunk.readableBytesView)
        }
    }

    public mutating func finish() -> [String] {
        defer {
            self.pending = []
            self.form = nil
        }
        var form = self.form
        var rest = self.pending[...]
        if form == nil {
            let (sniffed, mark) = Self.sniff(Array(rest.prefix(4)), atEnd: true) ?? (.utf8, 0)
            form = sniffed
            rest = rest.dropFirst(mark)
        }
        guard !rest.isEmpty, let form else { return [] }
        return form == .utf8 ? [String(decoding: rest, as: UTF8.self)] : self.decodeUnits(rest, form: form, atEnd: true)
    }

    /// The body's first bytes: the encoding once they say it, the text after the mark.
    private mutating func start<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> [String] {
        guard let sniffed = Self.sniff(Array(bytes.prefix(4)), atEnd: false) else {
            self.pending = Array(bytes)
            return []
        }
        let (form, mark) = sniffed
        self.form = form
        self.pending = []
        return form == .utf8 ? self.decode(bytes.dropFirst(mark)) : self.decodeUnits(bytes.dropFirst(mark), form: form, atEnd: false)
    }

    /// The encoding the byte-order mark at the start of `head` (the body's first bytes, up to 4)
    /// names, and the mark's length; UTF-8 and 0 when there is none. Nil while `head` may still
    /// grow into a mark (`FF FE` is UTF-16LE's, or the start of UTF-32LE's) and the body goes on.
    static func sniff(_ head: [UInt8], atEnd: Bool) -> (String.Encoding, Int)? {
        // The marks in `TextEncoding`'s order: UTF-32LE's before UTF-16LE's, which starts it.
        for (mark, encoding) in TextEncoding.byteOrderMarks {
            if head.count >= mark.count {
                if head.starts(with: mark) { return (encoding, mark.count) }
            } else if !atEnd, mark.starts(with: head) {
                return nil
            }
        }
        return (.utf8, 0)
    }

    /// The characters `bytes` of UTF-16 or UTF-32 hold whole; a unit cut short, and a high
    /// surrogate whose pair may follow, are kept for the next chunk, or become U+FFFD `atEnd`.
    private mutating func decodeUnits<Bytes: Collection<UInt8>>(_ bytes: Bytes, form: String.Encoding, atEnd: Bool) -> [String] {
        let bytes = Array(bytes)
        let size = form == .utf16BigEndian || form == .utf16LittleEndian ? 2 : 4
        var end = bytes.count - bytes.count % size
        var text: String
        if size == 2 {
            var units: [UInt16] = []
            units.reserveCapacity(end / 2)
            for index in stride(from: 0, to: end, by: 2) {
                let first = UInt16(bytes[index]), second = UInt16(bytes[index + 1])
                units.append(form == .utf16BigEndian ? first << 8 | second : second << 8 | first)
            }
            if !atEnd, let last = units.last, (0xD800...0xDBFF).contains(last) {
                units.removeLast()
                end -= 2
            }
            text = String(decoding: units, as: UTF16.self)
        } else {
            var units: [UInt32] = []
            units.reserveCapacity(end / 4)
            for index in stride(from: 0, to: end, by: 4) {
                let b = (UInt32(bytes[index]), UInt32(bytes[index + 1]), UInt32(bytes[index + 2]), UInt32(bytes[index + 3]))
                units.append(form == .utf32BigEndian ? b.0 << 24 | b.1 << 16 | b.2 << 8 | b.3 : b.3 << 24 | b.2 << 16 | b.1 << 8 | b.0)
            }
            text = String(decoding: units, as: UTF32.self)
        }
        self.pending = Array(bytes[end...])
        if atEnd, !self.pending.isEmpty {
            text += "\u{FFFD}"
            self.pending = []
        }
        return text.isEmpty ? [] : [text]
    }

    /// The characters `bytes` hold whole; the start of one they end in the middle of is kept.
    private mutating func decode<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> [String] {
        let end = Self.completeEnd(of: bytes)
        self.pending = Array(bytes[end...])
        return end == bytes.startIndex ? [] : [String(decoding: bytes[..<end], as: UTF8.self)]
    }

    /// The end of `bytes` without a character they end in the middle of: the last lead byte among
    /// the last three, when fewer of its continuation bytes follow it than it announces.
    static func completeEnd<Bytes: BidirectionalCollection<UInt8>>(of bytes: Bytes) -> Bytes.Index {
        var index = bytes.endIndex
        var looked = 0
        while index > bytes.startIndex, looked < 3 {
            bytes.formIndex(before: &index)
            looked += 1
            let byte = bytes[index]
            // A continuation byte: its lead byte is further back.
            if byte & 0b1100_0000 == 0b1000_0000 { continue }
            let announced: Int =
                switch byte {
                case 0b1100_0000...0b1101_1111: 2
                case 0b1110_0000...0b1110_1111: 3
                case 0b1111_0000...0b1111_0111: 4
                default: 1  // ASCII, or not a lead byte: nothing is held back
                }
            return looked < announced ? index : bytes.endIndex
        }
        return bytes.endIndex
    }
}

/// Values decoded one a line (Alamofire's `DecodableStreamSerializer`): JSON Lines, NDJSON, the
/// form of streamed JSON APIs (`application/x-ndjson`, `application/jsonl`).
///
/// Each line (ended by `\n`, a `\r` before it dropped) is one value, decoded with ``decoder``
/// (`JSONDecoder` by default); blank lines are skipped, and a last line without its `\n` is
/// decoded at the body's end. Alamofire decodes each chunk as one value, which the network does
/// not keep apart; a line is what the server wrote as one.
///
/// A line that does not decode, or runs over ``maximumLineLength``, fails the stream; the values
/// of the lines before it come first, whichever chunk they arrived in (``takeFailure()``).
public struct DecodableStreamSerializer<Value: Decodable & Sendable>: DataStreamSerializer {
    /// The decoder each line is handed to.
    public var decoder: any DataDecoder
    /// The longest line, in bytes without its line break (16 MiB by default): a longer one fails
    /// the stream, whether it came in one chunk or many, instead of filling memory.
    public var maximumLineLength: Int
    /// The bytes of the line under way.
    private var line: [UInt8] = []
    /// Lines decoded or skipped so far, to name a line that does not decode.
    private var lineNumber = 0
    /// The failure met after the values the last chunk gave, for ``takeFailure()``.
    private var failure: CourierError?

    /// A serializer of `type`, one value a line.
    public init(_ type: Value.Type = Value.self, decoder: any DataDecoder = JSONDecoder(), maximumLineLength: Int = 16 * 1024 * 1024) {
        self.decoder = decoder
        self.maximumLineLength = maximumLineLength
    }

    public mutating func serialize(_ chunk: ByteBuffer) throws(CourierError) -> [Value] {
        if let failure = self.takeFailure() { throw failure }
        var values: [Value] = []
        var rest = chunk.readableBytesView[...]
        do throws(CourierError) {
            while let newline = rest.firstIndex(of: UInt8(ascii: "\n")) {
                // A line within the chunk is decoded from it; only one split between chunks is gathered.
                let value: Value?
                if self.line.isEmpty {
                    value = try self.decodeLine(rest[..<newline])
                } else {
                    self.line += rest[..<newline]
                    value = try self.decodeLine(self.line[...])
                    self.line.removeAll(keepingCapacity: true)
                }
                if let value { values.append(value) }
                rest = rest[(newline + 1)...]
            }
            self.line += rest
            // A CR at the end may be the line break's start: it is not counted.
            let length = self.line.count - (self.line.last == UInt8(ascii: "\r") ? 1 : 0)
            if length > self.maximumLineLength {
                throw CourierError(
                    .responseSerializationFailed,
                    "line \(self.lineNumber + 1) of the streamed body runs over \(self.maximumLineLength) bytes (\(length) so far) without a line break")
            }
        } catch {
            self.line = []
            // The values before the failure are handed out first.
            guard values.isEmpty else {
                self.failure = error
                return values
            }
            throw error
        }
        return values
    }

    public mutating func finish() throws(CourierError) -> [Value] {
        defer { self.line = [] }
        if let failure = self.takeFailure() { throw failure }
        return try self.decodeLine(self.line[...]).map { [$0] } ?? []
    }

    public mutating func takeFailure() -> CourierError? {
        defer { self.failure = nil }
        return self.failure
    }

    /// Decodes one line (without its `\n`); nil for a blank line.
    private mutating func decodeLine<Line: BidirectionalCollection<UInt8>>(_ line: Line) throws(CourierError) -> Value? {
        self.lineNumber += 1
        var bytes = line[...]
        if bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
        if bytes.count > self.maximumLineLength {
            throw CourierError(
                .responseSerializationFailed, "line \(self.lineNumber) of the streamed body runs over \(self.maximumLineLength) bytes (\(bytes.count))")
        }
        guard bytes.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }) else { return nil }
        let data = Data(bytes)
        do {
            return try self.decoder.decode(Value.self, from: data)
        } catch {
            throw CourierError(
                .responseSerializationFailed, "line \(self.lineNumber) of the streamed body is not a \(Value.self)", data: data,
                underlyingError: error)
        }
    }
}
