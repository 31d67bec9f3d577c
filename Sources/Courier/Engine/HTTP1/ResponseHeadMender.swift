import NIOCore
import NIOHTTP1

/// Mends what real servers send in HTTP/1.x response heads (and in a chunked body's framing) that
/// NIO's strict decoder (llhttp, built without its lenient flags) would refuse, into what it reads
/// as a user agent should, before the decoder sees it:
///
/// - an obs-fold (a field line continued on the next line, which starts with a space or a tab)
///   becomes spaces, as RFC 9112 section 5.2 asks of a user agent;
/// - a line ended by LF alone gets its CR (RFC 9112 section 2.2 lets a recipient take a bare LF
///   as a line terminator; curl, browsers, Go's client and OkHttp do);
/// - a `Content-Length` whose value is a list of one number (`6, 6`), or that comes again with
///   the same number on another line, becomes one field with that number (RFC 9112 section 6.3).
///   Different numbers are left for the decoder to refuse;
/// - a `Content-Length` beside a `Transfer-Encoding` is removed: the transfer coding frames the
///   body (RFC 9112 section 6.3, as curl, Go's client and OkHttp read it), and the connection is
///   not used again (``droppedContentLength``), since such a head may come from a server that
///   frames its messages otherwise than the client reads them;
/// - in a chunked body, a chunk-size line, the line break after a chunk's data, or a trailer
///   line ended by LF alone gets its CR, as curl and OkHttp read them;
/// - a `Location` value's bytes outside ASCII (a path in Latin-1 or UTF-8, sent raw as some
///   servers do) are percent-encoded (`%E9`): NIO's decoder reads a field value as UTF-8, and
///   would make a Latin-1 byte U+FFFD, so the redirect would lose the server's bytes. Encoded,
///   they reach the server again as they came (Go's client keeps them so too). A line of up to
///   ``locationLineLimit`` bytes is held back until it ends, wherever the reads cut it.
///
/// A pure state machine over the bytes of a connection, in order: ``scan(_:)`` mends a buffer and
/// says how many of its last bytes it holds back until the next bytes say what they are. A fold
/// is rewritten in place, byte for byte; the others (rare) rebuild the buffer. The fields that
/// frame the body (`Content-Length`, `Transfer-Encoding`) are decided on together when the head
/// ends, so a head that spans reads is held back from the first of them (up to
/// ``framingHoldLimit`` bytes; past that, its framing is left to the decoder). It looks at
/// response heads: from ``expectHead()`` (each request) to the blank line that ends the final head
/// (an interim 1xx head is followed by another). Of a chunked body it reads the chunk-size lines
/// and the trailers, passing over each chunk's data without looking at it; any other body it
/// passes through untouched until the next ``expectHead()``.
///
/// On the way it keeps the final head's reason phrase when the server's is not the standard one
/// for its code (``reasonPhrase``): NIO's decoder makes the status from the code alone.
struct ResponseHeadMender {
    private enum Position: Equatable {
        /// In the status line of a head.
        case statusLine
        /// In a field line.
        case fieldLine
        /// Just after the line break of the status line (`afterField` false) or of a field line
        /// not yet mended (true).
        case lineStart(afterField: Bool)
        /// A CR at the start of a line: the head ends at the LF that should follow.
        case blankLineCR
        /// In a chunked body, a chunk-size line: the size read so far from its `digits` hex
        /// digits, and whether they have ended (an extension, or the line's CR, came).
        case chunkSize(size: UInt64, digits: Int, ended: Bool)
        /// In a chunk's data, `remaining` bytes of it to come: passed over.
        case chunkData(remaining: UInt64)
        /// After a chunk's data, at the line break that ends it; `sawCR` once its CR came.
        case chunkDataEnd(sawCR: Bool)
        /// In the trailer section, after the last chunk: at a line's start, or in a line.
        case trailer(lineStart: Bool)
        /// A CR at the start of a trailer line: the message ends at the LF that should follow.
        case trailerBlankCR
        /// Past the end of the final head, or of a chunked body: nothing is looked at.
        case body
    }

    /// An edit that moves bytes: its range in the buffer being scanned, and what replaces it.
    private struct Edit {
        var range: Range<Int>
        var replacement: [UInt8]

        /// The CR a bare LF at `lineFeed` lacks, put before it.
        static func carriageReturn(before lineFeed: Int) -> Edit {
            Edit(range: lineFeed..<lineFeed, replacement: [UInt8(ascii: "\r")])
        }

        /// The byte at `index` as `%XX`.
        static func percentEncoded(_ byte: UInt8, at index: Int) -> Edit {
            let digits: StaticString = "0123456789ABCDEF"
            return Edit(
                range: index..<(index + 1),
                replacement: [UInt8(ascii: "%"), digits.utf8Start[Int(byte >> 4)], digits.utf8Start[Int(byte & 0x0F)]])
        }
    }

    /// The fields that frame the body, by name (with the colon, in small letters).
    private enum FramingField {
        case contentLength
        case transferEncoding

        var name: StaticString {
            switch self {
            case .contentLength: "content-length:"
            case .transferEncoding: "transfer-encoding:"
            }
        }
    }

    /// A `Content-Length` field line in the bytes being scanned.
    private struct ContentLengthLine {
        /// From its first byte to its LF, inclusive.
        var line: Range<Int>
        /// Its value, without the line break.
        var value: Range<Int>
        var bareLineFeed: Bool
        /// The number its value lists, and how many times; nil when it is not a list of one number.
        var number: (value: UInt64, count: Int)?
    }

    /// The fields that frame the body in the head being scanned, all in the bytes being scanned
    /// (the head is held back from the first of them until it ends).
    private struct Framing {
        /// Where the first of them begins.
        var start: Int?
        /// The first `Content-Length`: most heads have one, and it is kept without an allocation.
        var first: ContentLengthLine?
        /// The ones after it (rare; nil for none, which costs nothing).
        var more: [ContentLengthLine]?
        var transferEncoding = false
        /// One of them was folded: the decoder says what it makes of the head.
        var folded = false
    }

    private var position = Position.statusLine
    /// The current status line as it came (`HTTP/1.1 200 OK` and its line break), up to
    /// ``statusLineLimit`` bytes: its code, and its reason phrase.
    private var statusLine: [UInt8] = []
    /// The final head's status code and reason phrase, when the phrase is not the standard one for
    /// the code (`200 Everything Fine`, `999 Weird`); nil for the standard phrase, which is what
    /// NIO's head already says, and until the final head has ended.
    private(set) var reasonPhrase: (code: Int, phrase: String)?
    /// Whether the final head's `Content-Length` was removed for its `Transfer-Encoding`: its
    /// connection must not carry another request.
    private(set) var droppedContentLength = false
    /// Whether the current head's framing fields spanned more than ``framingHoldLimit`` bytes:
    /// they are left as they are.
    private var framingLeftAlone = false
    /// Whether the last byte passed on (not held back) was a CR: a line break split between two
    /// reads is CRLF, not a bare LF.
    private var passedCR = false

    /// The longest status line kept whole: room for a reason phrase of 256 bytes. A longer one is
    /// left as NIO's decoder gives it (the standard phrase).
    static let statusLineLimit = 12 + 1 + 256 + 2
    /// The longest field line read as a `Content-Length` or `Transfer-Encoding` (name, colon,
    /// value, no line break); a longer one is left to the decoder.
    static let framingLineLimit = 80
    /// The most bytes of a head held back from its first framing field until the head ends.
    static let framingHoldLimit = 16 * 1024
    /// The longest `Location` field line held back until it ends (its bytes outside ASCII are
    /// encoded when it ends); a longer one that two reads cut is left as it came.
    static let locationLineLimit = 8 * 1024
    // Static strings, read through their pointers: an array here cost retains on every head.
    private static let chunkedName: StaticString = "chunked"
    private static let locationName: StaticString = "location:"

    /// Whether bytes are being looked at (a head is expected or under way, or a chunked body).
    var isScanning: Bool { self.position != .body }

    /// The next bytes start a response head (a request went out).
    mutating func expectHead() {
        self.position = .statusLine
        self.statusLine.removeAll(keepingCapacity: true)
        self.reasonPhrase = nil
        self.droppedContentLength = false
        self.framingLeftAlone = false
        self.passedCR = false
    }

    /// Looks at `bytes`, mending what it must. Returns how many of its last bytes must be held
    /// back and given again at the start of the next call (a line break whose fate the next byte
    /// decides, or the head from its first framing field); the bytes before them can go on.
    mutating func scan(_ bytes: inout ByteBuffer) -> Int {
        guard self.isScanning else { return 0 }
        var folds: [Range<Int>] = []
        var edits: [Edit] = []
        let holdBack = bytes.withUnsafeReadableBytes { self.scan($0, folds: &folds, edits: &edits) }
        // Written only when there is a fold (rare): the buffer is not copied otherwise. A fold in
        // the bytes held back is found again when they are scanned again.
        let held = bytes.readableBytes - holdBack
        for fold in folds where fold.lowerBound < held {
            for offset in fold { bytes.setInteger(UInt8(ascii: " "), at: bytes.readerIndex + offset) }
        }
        // Rarer still: a bare LF or a framing field to mend. Edits in the bytes held back are
        // made when they are scanned again, so the count held back stays true.
        edits.removeAll { $0.range.lowerBound >= held }
        if !edits.isEmpty {
            edits.sort { $0.range.lowerBound < $1.range.lowerBound }
            var mended = ByteBuffer()
            mended.reserveCapacity(bytes.readableBytes + edits.count)
            var next = 0
            for edit in edits {
                mended.writeBytes(bytes.readableBytesView[(bytes.readerIndex + next)..<(bytes.readerIndex + edit.range.lowerBound)])
                mended.writeBytes(edit.replacement)
                next = edit.range.upperBound
            }
            mended.writeBytes(bytes.readableBytesView[(bytes.readerIndex + next)...])
            bytes = mended
        }
        return holdBack
    }

    private mutating func scan(_ bytes: UnsafeRawBufferPointer, folds: inout [Range<Int>], edits: inout [Edit]) -> Int {
        let end = bytes.count
        var index = 0
        // Where the line break before the current line start began (CR or LF).
        var breakStart = 0
        // Where the current field line began, when it began in these bytes; whether a fold
        // continued it.
        var lineBegin: Int?
        var lineFolded = false
        var framing = Framing()
        scanning: while index < end {
            let byte = bytes[index]
            switch self.position {
            case .body:
                break scanning
            case .statusLine, .fieldLine:
                if self.position == .statusLine, self.statusLine.count < Self.statusLineLimit { self.statusLine.append(byte) }
                if byte == UInt8(ascii: "\n") {
                    let bare = self.isBare(bytes, lineFeed: index)
                    // A CR passed on before these bytes is only ever the status line's.
                    breakStart = bare ? index : max(index - 1, 0)
                    if self.position == .statusLine, bare {
                        edits.append(.carriageReturn(before: index))
                    }
                    self.position = .lineStart(afterField: self.position == .fieldLine)
                }
            case .lineStart(let afterField):
                if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t"), afterField {
                    // obs-fold: the line break becomes spaces, the line goes on.
                    folds.append(breakStart..<index)
                    lineFolded = true
                    self.position = .fieldLine
                    index += 1
                    continue
                }
                // The field line before this one (if any) has ended: mend it.
                if afterField {
                    self.fieldLineEnded(bytes, begin: lineBegin, folded: lineFolded, lineFeed: index - 1, framing: &framing, edits: &edits)
                }
                if byte == UInt8(ascii: "\r") {
                    self.position = .blankLineCR
                } else if byte == UInt8(ascii: "\n") {
                    edits.append(.carriageReturn(before: index))
                    self.headEnded(framing: &framing, edits: &edits)
                } else {
                    lineBegin = index
                    lineFolded = false
                    self.position = .fieldLine
                }
            case .blankLineCR:
                if byte == UInt8(ascii: "\n") {
                    self.headEnded(framing: &framing, edits: &edits)
                } else {
                    // Not a blank line after all; the decoder will say what is wrong with it.
                    lineBegin = nil
                    self.position = .fieldLine
                }
            case .chunkData(let remaining):
                // Passed over whole, however much of it there is.
                let passed = min(remaining, UInt64(end - index))
                index += Int(passed)
                self.position = passed == remaining ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - passed)
                continue
            case .chunkSize, .chunkDataEnd, .trailer, .trailerBlankCR:
                self.chunkedBodyByte(byte, bytes, at: index, edits: &edits)
            }
            index += 1
        }
        // A folded line is held back like any other: its folds, not yet rewritten in the bytes
        // held back, are found again when they are scanned again.
        let holdBack = self.holdBack(bytes, breakStart: breakStart, lineBegin: lineBegin, framing: &framing, edits: &edits)
        if holdBack < end { self.passedCR = bytes[end - holdBack - 1] == UInt8(ascii: "\r") }
        return holdBack
    }

    /// How many of the scanned bytes' last bytes to hold back, with the position set to where
    /// they will be scanned from again. Bytes held back from a field line's start are scanned
    /// again from a line start with nothing before it to mend (the line before it was mended
    /// when it began).
    private mutating func holdBack(
        _ bytes: UnsafeRawBufferPointer, breakStart: Int, lineBegin: Int?, framing: inout Framing, edits: inout [Edit]
    ) -> Int {
        let end = bytes.count
        guard self.position != .body else { return 0 }
        // The head goes on past these bytes, and it has framing fields: hold it back from the
        // first, to decide on them all when it ends; or, past the limit, leave them as they are.
        if let start = framing.start {
            if end - start <= Self.framingHoldLimit {
                self.position = .lineStart(afterField: false)
                return end - start
            }
            self.framingLeftAlone = true
            _ = Self.mend(framing, asTheyCame: true, edits: &edits)
        }
        switch self.position {
        case .lineStart(afterField: true):
            // A field line ended at the very end: the next byte says whether it goes on (a fold)
            // and whether a bare LF needs its CR. Hold back its line break, or the whole line
            // when it may be a framing field or a `Location`.
            if let lineBegin,
                self.framingField(bytes, from: lineBegin, to: breakStart) != nil || self.mayBeLocation(bytes, from: lineBegin, to: breakStart)
            {
                self.position = .lineStart(afterField: false)
                return end - lineBegin
            }
            self.position = .fieldLine
            return end - breakStart
        case .fieldLine:
            if let lineBegin, self.framingField(bytes, from: lineBegin, to: end) != nil || self.mayBeLocation(bytes, from: lineBegin, to: end) {
                self.position = .lineStart(afterField: false)
                return end - lineBegin
            }
            // A CR at the very end: the line break it starts may turn out to be a fold.
            return end > 0 && bytes[end - 1] == UInt8(ascii: "\r") ? 1 : 0
        default:
            return 0
        }
    }

    /// One byte of a chunked body's framing (RFC 9112 7.1): a LF alone gets its CR. Anything the
    /// decoder will refuse (a size line without a hex digit, or longer than 64 bits; data not
    /// followed by a line break) ends the looking: the bytes go on as they are.
    private mutating func chunkedBodyByte(_ byte: UInt8, _ bytes: UnsafeRawBufferPointer, at index: Int, edits: inout [Edit]) {
        let lineFeed = UInt8(ascii: "\n")
        let carriageReturn = UInt8(ascii: "\r")
        func endLine() {
            if self.isBare(bytes, lineFeed: index) { edits.append(.carriageReturn(before: index)) }
        }
        switch self.position {
        case .chunkSize(let size, let digits, let ended):
            if byte == lineFeed {
                guard digits > 0 else {
                    self.position = .body
                    return
                }
                endLine()
                self.position = size == 0 ? .trailer(lineStart: true) : .chunkData(remaining: size)
            } else if !ended, let value = byte.hexDigitValue {
                guard digits < 16 else {
                    self.position = .body
                    return
                }
                self.position = .chunkSize(size: size << 4 | UInt64(value), digits: digits + 1, ended: false)
            } else if digits == 0 {
                self.position = .body
            } else {
                // An extension (`;name=value`), whitespace, or the line's CR.
                self.position = .chunkSize(size: size, digits: digits, ended: true)
            }
        case .chunkDataEnd(let sawCR):
            if byte == carriageReturn, !sawCR {
                self.position = .chunkDataEnd(sawCR: true)
            } else if byte == lineFeed {
                if !sawCR { edits.append(.carriageReturn(before: index)) }
                self.position = .chunkSize(size: 0, digits: 0, ended: false)
            } else {
                self.position = .body
            }
        case .trailer(let lineStart):
            if byte == lineFeed {
                endLine()
                // A blank line (LF alone) ends the message.
                self.position = lineStart ? .body : .trailer(lineStart: true)
            } else if byte == carriageReturn, lineStart {
                self.position = .trailerBlankCR
            } else {
                self.position = .trailer(lineStart: false)
            }
        case .trailerBlankCR:
            self.position = byte == lineFeed ? .body : .trailer(lineStart: false)
        default:
            break
        }
    }

    /// Whether the LF at `lineFeed` ends a line alone, with no CR before it (in these bytes, or the
    /// last byte passed on).
    private func isBare(_ bytes: UnsafeRawBufferPointer, lineFeed: Int) -> Bool {
        lineFeed > 0 ? bytes[lineFeed - 1] != UInt8(ascii: "\r") : !self.passedCR
    }

    /// The framing field the bytes of a field line from `begin` to `end` (no line break) may be:
    /// the one whose name they start with or, a line not yet whole, are the start of; nil for
    /// none, for a line too long to be read, and when this head's framing is left alone.
    private func framingField(_ bytes: UnsafeRawBufferPointer, from begin: Int, to end: Int) -> FramingField? {
        guard !self.framingLeftAlone, end - begin <= Self.framingLineLimit else { return nil }
        if Self.starts(bytes, from: begin, to: end, with: FramingField.contentLength.name) { return .contentLength }
        if Self.starts(bytes, from: begin, to: end, with: FramingField.transferEncoding.name) { return .transferEncoding }
        return nil
    }

    /// Whether the bytes from `begin` to `end` are the start of `name` (lowercase), or start with
    /// it, in any case.
    private static func starts(_ bytes: UnsafeRawBufferPointer, from begin: Int, to end: Int, with name: StaticString) -> Bool {
        let count = min(name.utf8CodeUnitCount, end - begin)
        for offset in 0..<max(count, 0) {
            if bytes[begin + offset].lowercasedASCII != name.utf8Start[offset] { return false }
        }
        return true
    }

    /// Whether a `Transfer-Encoding` value from `begin` to `end` ends with the coding `chunked`
    /// (`chunked`, `gzip, Chunked `).
    private static func endsWithChunked(_ bytes: UnsafeRawBufferPointer, from begin: Int, to end: Int) -> Bool {
        var last = end
        while last > begin, bytes[last - 1] == UInt8(ascii: " ") || bytes[last - 1] == UInt8(ascii: "\t") { last -= 1 }
        guard last - begin >= Self.chunkedName.utf8CodeUnitCount else { return false }
        let first = last - Self.chunkedName.utf8CodeUnitCount
        guard Self.starts(bytes, from: first, to: last, with: Self.chunkedName) else { return false }
        switch bytes[first - 1] {
        case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: ","): return true
        default: return first == begin
        }
    }

    /// A field line that began at `begin` (nil: in bytes already passed on) has ended at the LF at
    /// `lineFeed`: it gets its CR if its LF is bare, unless it is a `Content-Length`, which the end
    /// of the head decides on (``headEnded(framing:edits:)``).
    private mutating func fieldLineEnded(
        _ bytes: UnsafeRawBufferPointer, begin: Int?, folded: Bool, lineFeed: Int, framing: inout Framing, edits: inout [Edit]
    ) {
        let bare = self.isBare(bytes, lineFeed: lineFeed)
        let contentEnd = bare ? lineFeed : lineFeed - 1
        // The names differ in their first byte, so the field whose name the whole line starts with
        // is the one found.
        if let begin, let field = self.framingField(bytes, from: begin, to: contentEnd),
           contentEnd - begin >= field.name.utf8CodeUnitCount {
            framing.start = framing.start ?? begin
            framing.folded = framing.folded || folded
            let valueStart = begin + field.name.utf8CodeUnitCount
            switch field {
            case .contentLength:
                let line = ContentLengthLine(
                    line: begin..<(lineFeed + 1), value: valueStart..<contentEnd, bareLineFeed: bare,
                    number: Self.sameNumber(in: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<contentEnd])))
                if framing.first == nil { framing.first = line } else { framing.more = (framing.more ?? []) + [line] }
                // Its CR, if it lacks one, comes when the head ends and it is kept.
                return
            case .transferEncoding:
                // Only `chunked` last frames the body; another coding leaves the decoder to
                // refuse the head as before.
                framing.transferEncoding = framing.transferEncoding || Self.endsWithChunked(bytes, from: valueStart, to: contentEnd)
            }
        }
        if let begin, contentEnd - begin > Self.locationName.utf8CodeUnitCount, Self.starts(bytes, from: begin, to: contentEnd, with: Self.locationName) {
            for index in (begin + Self.locationName.utf8CodeUnitCount)..<contentEnd where bytes[index] >= 0x80 {
                edits.append(.percentEncoded(bytes[index], at: index))
            }
        }
        if bare { edits.append(.carriageReturn(before: lineFeed)) }
    }

    /// Whether the bytes from `begin` to `end`, a field line so far, may be a `Location` line short
    /// enough to hold back until it ends.
    private func mayBeLocation(_ bytes: UnsafeRawBufferPointer, from begin: Int, to end: Int) -> Bool {
        end - begin <= Self.locationLineLimit && Self.starts(bytes, from: begin, to: end, with: Self.locationName)
    }

    /// The edits that make a head's `Content-Length` fields what the decoder should read: none
    /// beside a `Transfer-Encoding`, one with one number, or (different numbers, a folded field,
    /// or `asTheyCame`) as they came; each one kept gets the CR its bare LF lacks. Returns whether
    /// one was removed for a `Transfer-Encoding`.
    private static func mend(_ framing: Framing, asTheyCame: Bool = false, edits: inout [Edit]) -> Bool {
        guard let first = framing.first else { return false }
        var keptFirst = true
        var keepMore = true
        var dropped = false
        if asTheyCame || framing.folded {
            // As they came.
        } else if framing.transferEncoding {
            keptFirst = false
            keepMore = false
            dropped = true
        } else if let number = first.number, framing.more?.allSatisfy({ $0.number?.value == number.value }) ?? true {
            keepMore = false
            if number.count > 1 { edits.append(Edit(range: first.value, replacement: Array(" \(number.value)".utf8))) }
        }
        // No arrays made: most heads have one Content-Length, mended by nothing.
        func keep(_ line: ContentLengthLine, _ kept: Bool) {
            if !kept {
                edits.append(Edit(range: line.line, replacement: []))
            } else if line.bareLineFeed {
                edits.append(.carriageReturn(before: line.value.upperBound))
            }
        }
        keep(first, keptFirst)
        for line in framing.more ?? [] { keep(line, keepMore) }
        return dropped
    }

    /// The number a `Content-Length` value is a list of (`6`, ` 6, 6 `), and how many times it is
    /// listed; nil when an element is not a number or two differ. Read byte by byte, with no
    /// allocation: every response with a length comes through here.
    static func sameNumber(in value: UnsafeRawBufferPointer) -> (value: UInt64, count: Int)? {
        var result: UInt64?
        var count = 0
        var number: UInt64 = 0
        var digits = 0
        // Whether the current element's digits have ended (whitespace after them).
        var ended = false
        func elementEnded() -> Bool {
            guard digits > 0, result == nil || result == number else { return false }
            result = number
            count += 1
            number = 0
            digits = 0
            ended = false
            return true
        }
        for byte in value {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard !ended, digits < 18 else { return nil }
                number = number * 10 + UInt64(byte - UInt8(ascii: "0"))
                digits += 1
            case UInt8(ascii: " "), UInt8(ascii: "\t"):
                if digits > 0 { ended = true }
            case UInt8(ascii: ","):
                guard elementEnded() else { return nil }
            default:
                return nil
            }
        }
        guard elementEnded() else { return nil }
        return result.map { ($0, count) }
    }

    /// The blank line ended a head: its framing fields are mended, and an interim (1xx other
    /// than 101) head is followed by another; a final head with a chunked body (not a 204 or a
    /// 304, whose bodies are empty) is followed by its chunks.
    private mutating func headEnded(framing: inout Framing, edits: inout [Edit]) {
        let dropped = self.framingLeftAlone ? false : Self.mend(framing, edits: &edits)
        let chunked = framing.transferEncoding && !framing.folded && !self.framingLeftAlone
        framing = Framing()
        self.framingLeftAlone = false
        // Over the array's bytes: slices of the array itself would retain it, on every response.
        self.statusLine.withUnsafeBufferPointer { line in
            let code = Self.code(in: line)
            if let code, (100..<200).contains(code), code != 101 {
                self.position = .statusLine
                self.statusLine.removeAll(keepingCapacity: true)
            } else {
                self.reasonPhrase = code.flatMap { code in Self.unusualReasonPhrase(in: line, code: code).map { (code, $0) } }
                self.droppedContentLength = dropped
                let bodyless = code == 101 || code == 204 || code == 304
                self.position = chunked && !bodyless ? .chunkSize(size: 0, digits: 0, ended: false) : .body
            }
        }
    }

    /// The status code of a status line (`HTTP/1.1 200`…), or nil when its three digits are not.
    static func code(in line: UnsafeBufferPointer<UInt8>) -> Int? {
        guard line.count >= 12 else { return nil }
        var code = 0
        for digit in line[9..<12] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            code = code * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return code
    }

    /// The reason phrase of a whole status line (`HTTP/1.1 200 Fine` and its line break) whose
    /// code is `code` (``code(in:)``), when it is not the standard one for the code, read as ISO
    /// Latin 1 (RFC 9112 4); nil otherwise, and for a line NIO's decoder will refuse or one longer
    /// than kept.
    static func unusualReasonPhrase(in line: UnsafeBufferPointer<UInt8>, code: Int) -> String? {
        guard line.count >= 13, line.count <= Self.statusLineLimit, line[line.count - 1] == UInt8(ascii: "\n") else { return nil }
        var end = line.count - 1
        if line[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        // `HTTP/1.1 200` with no phrase, or with its space: the standard phrase stays, as NIO's
        // decoder reads it.
        guard end > 13, line[12] == UInt8(ascii: " ") else { return nil }
        let phrase = line[13..<end]
        let standard = HTTPResponseStatus(statusCode: code).reasonPhrase
        if phrase.elementsEqual(standard.utf8) { return nil }
        return String(String.UnicodeScalarView(phrase.map { Unicode.Scalar($0) }))
    }
}
