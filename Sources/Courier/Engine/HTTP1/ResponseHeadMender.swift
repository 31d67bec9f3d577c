import NIOCore
import NIOHTTP1

/// Mends the HTTP/1.x response heads real servers send into heads NIO's strict decoder (llhttp,
/// built without its lenient flags) reads as a user agent should, before the decoder sees them:
///
/// - an obs-fold (a field line continued on the next line, which starts with a space or a tab)
///   becomes spaces, as RFC 9112 section 5.2 asks of a user agent;
/// - a line ended by LF alone gets its CR (RFC 9112 section 2.2 lets a recipient take a bare LF
///   as a line terminator; curl, browsers, Go's client and OkHttp do);
/// - a `Content-Length` whose value is a list of one number (`6, 6`), or that comes again with
///   the same number on another line, becomes one field with that number (RFC 9112 section 6.3).
///   Different numbers are left for the decoder to refuse.
///
/// A pure state machine over the bytes of a connection, in order: ``scan(_:)`` mends a buffer and
/// says how many of its last bytes it holds back until the next bytes say what they are. A fold
/// is rewritten in place, byte for byte; the other two (rare) rebuild the buffer. It looks only at
/// response heads: from ``expectHead()`` (each request) to the blank line that ends the final head
/// (an interim 1xx head is followed by another), then it passes every byte of the body through
/// untouched until the next ``expectHead()``.
///
/// On the way it keeps the final head's reason phrase when the server's is not the standard one
/// for its code (``reasonPhrase``): NIO's decoder makes the status from the code alone.
struct ResponseHeadMender {
    private enum Position: Equatable {
        /// In the status line of a head.
        case statusLine
        /// In a field line.
        case fieldLine
        /// Just after the line break of the status line (`afterField` false) or of a field line.
        case lineStart(afterField: Bool)
        /// A CR at the start of a line: the head ends at the LF that should follow.
        case blankLineCR
        /// Past the end of the final head: nothing is looked at.
        case body
    }

    /// The `Content-Length` fields of the head so far.
    private enum ContentLength: Equatable {
        case none
        /// One number, however many times it came.
        case value(UInt64)
        /// Numbers that differ, or a value that is not a list of numbers: nothing more is mended,
        /// and the decoder refuses the head.
        case conflict
    }

    /// An edit that moves bytes: its range in the buffer being scanned, and what replaces it.
    private struct Edit {
        var range: Range<Int>
        var replacement: [UInt8]
    }

    private var position = Position.statusLine
    /// The current status line as it came (`HTTP/1.1 200 OK` and its line break), up to
    /// ``statusLineLimit`` bytes: its code, and its reason phrase.
    private var statusLine: [UInt8] = []
    /// The final head's status code and reason phrase, when the phrase is not the standard one for
    /// the code (`200 Everything Fine`, `999 Weird`); nil for the standard phrase, which is what
    /// NIO's head already says, and until the final head has ended.
    private(set) var reasonPhrase: (code: Int, phrase: String)?
    private var contentLength = ContentLength.none
    /// Whether the last byte passed on (not held back) was a CR: a line break split between two
    /// reads is CRLF, not a bare LF.
    private var passedCR = false

    /// The longest status line kept whole: room for a reason phrase of 256 bytes. A longer one is
    /// left as NIO's decoder gives it (the standard phrase).
    static let statusLineLimit = 12 + 1 + 256 + 2
    /// The longest field line looked at as a `Content-Length` (name, colon, value, no line break);
    /// a longer one is left to the decoder. A line that may be one is held back whole until it ends.
    static let contentLengthLineLimit = 80
    private static let contentLengthName = Array("content-length:".utf8)

    /// Whether bytes are being looked at (a head is expected or under way).
    var isInHead: Bool { self.position != .body }

    /// The next bytes start a response head (a request went out).
    mutating func expectHead() {
        self.position = .statusLine
        self.statusLine.removeAll(keepingCapacity: true)
        self.reasonPhrase = nil
        self.contentLength = .none
        self.passedCR = false
    }

    /// Looks at `bytes`, mending what it must. Returns how many of its last bytes must be held
    /// back and given again at the start of the next call (a line break whose fate the next byte
    /// decides, or a field line that may be a `Content-Length`); the bytes before them can go on.
    mutating func scan(_ bytes: inout ByteBuffer) -> Int {
        guard self.isInHead else { return 0 }
        var folds: [Range<Int>] = []
        var edits: [Edit] = []
        let holdBack = bytes.withUnsafeReadableBytes { self.scan($0, folds: &folds, edits: &edits) }
        // Written only when there is a fold (rare): the buffer is not copied otherwise.
        for fold in folds {
            for offset in fold { bytes.setInteger(UInt8(ascii: " "), at: bytes.readerIndex + offset) }
        }
        // Rarer still: a bare LF or a repeated Content-Length. Every edit lies before the bytes
        // held back, so their count from the end stays true.
        if !edits.isEmpty {
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
                        edits.append(Edit(range: index..<index, replacement: [UInt8(ascii: "\r")]))
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
                if afterField { self.fieldLineEnded(bytes, begin: lineBegin, folded: lineFolded, lineFeed: index - 1, edits: &edits) }
                if byte == UInt8(ascii: "\r") {
                    self.position = .blankLineCR
                } else if byte == UInt8(ascii: "\n") {
                    edits.append(Edit(range: index..<index, replacement: [UInt8(ascii: "\r")]))
                    self.headEnded()
                } else {
                    lineBegin = index
                    lineFolded = false
                    self.position = .fieldLine
                }
            case .blankLineCR:
                if byte == UInt8(ascii: "\n") {
                    self.headEnded()
                } else {
                    // Not a blank line after all; the decoder will say what is wrong with it.
                    lineBegin = nil
                    self.position = .fieldLine
                }
            }
            index += 1
        }
        let holdBack = self.holdBack(bytes, breakStart: breakStart, lineBegin: lineFolded ? nil : lineBegin)
        if holdBack < end { self.passedCR = bytes[end - holdBack - 1] == UInt8(ascii: "\r") }
        return holdBack
    }

    /// How many of the scanned bytes' last bytes to hold back, with the position set to where
    /// they will be scanned from again. A field line held back whole is scanned again from a line
    /// start with nothing before it to mend (the line before it was mended when it began).
    private mutating func holdBack(_ bytes: UnsafeRawBufferPointer, breakStart: Int, lineBegin: Int?) -> Int {
        let end = bytes.count
        switch self.position {
        case .lineStart(afterField: true):
            // A field line ended at the very end: the next byte says whether it goes on (a fold)
            // and whether a bare LF needs its CR. Hold back its line break, or the whole line
            // when it may be a Content-Length to mend.
            if let lineBegin, Self.mayBeContentLength(bytes, from: lineBegin, to: breakStart) {
                self.position = .lineStart(afterField: false)
                return end - lineBegin
            }
            self.position = .fieldLine
            return end - breakStart
        case .fieldLine:
            if let lineBegin, Self.mayBeContentLength(bytes, from: lineBegin, to: end) {
                self.position = .lineStart(afterField: false)
                return end - lineBegin
            }
            // A CR at the very end: the line break it starts may turn out to be a fold.
            return end > 0 && bytes[end - 1] == UInt8(ascii: "\r") ? 1 : 0
        default:
            return 0
        }
    }

    /// Whether the LF at `lineFeed` ends a line alone, with no CR before it (in these bytes, or the
    /// last byte passed on).
    private func isBare(_ bytes: UnsafeRawBufferPointer, lineFeed: Int) -> Bool {
        lineFeed > 0 ? bytes[lineFeed - 1] != UInt8(ascii: "\r") : !self.passedCR
    }

    /// Whether the bytes of a field line from `begin` to `end` (no line break) may be, or be the
    /// start of, a `Content-Length` field short enough to be looked at.
    private static func mayBeContentLength(_ bytes: UnsafeRawBufferPointer, from begin: Int, to end: Int) -> Bool {
        guard end - begin <= Self.contentLengthLineLimit else { return false }
        for (offset, expected) in Self.contentLengthName.enumerated() where begin + offset < end {
            let byte = bytes[begin + offset]
            if (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 != expected : byte != expected { return false }
        }
        return true
    }

    /// A field line that began at `begin` (nil: in bytes already passed on) has ended at the LF at
    /// `lineFeed`, and no fold continues it: it gets its CR if its LF is bare, and a
    /// `Content-Length` is made one field with one number.
    private mutating func fieldLineEnded(_ bytes: UnsafeRawBufferPointer, begin: Int?, folded: Bool, lineFeed: Int, edits: inout [Edit]) {
        let bare = self.isBare(bytes, lineFeed: lineFeed)
        let contentEnd = bare ? lineFeed : lineFeed - 1
        if let begin, !folded, self.contentLength != .conflict, contentEnd - begin >= Self.contentLengthName.count,
           Self.mayBeContentLength(bytes, from: begin, to: contentEnd) {
            let valueStart = begin + Self.contentLengthName.count
            let number = Self.sameNumber(in: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<contentEnd]))
            switch (self.contentLength, number) {
            case (.none, .some(let number)):
                self.contentLength = .value(number.value)
                if number.count > 1 {
                    edits.append(Edit(range: valueStart..<contentEnd, replacement: Array(" \(number.value)".utf8)))
                }
            case (.value(let first), .some(let number)) where number.value == first:
                // The same number again: the line goes, its line break with it.
                edits.append(Edit(range: begin..<(lineFeed + 1), replacement: []))
                return
            default:
                self.contentLength = .conflict
            }
        }
        if bare { edits.append(Edit(range: lineFeed..<lineFeed, replacement: [UInt8(ascii: "\r")])) }
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

    /// The blank line ended a head: an interim (1xx other than 101) head is followed by another.
    private mutating func headEnded() {
        // Over the array's bytes: slices of the array itself would retain it, on every response.
        self.statusLine.withUnsafeBufferPointer { line in
            let code = Self.code(in: line)
            if let code, (100..<200).contains(code), code != 101 {
                self.position = .statusLine
                self.statusLine.removeAll(keepingCapacity: true)
                self.contentLength = .none
            } else {
                self.reasonPhrase = code.flatMap { code in Self.unusualReasonPhrase(in: line, code: code).map { (code, $0) } }
                self.position = .body
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
