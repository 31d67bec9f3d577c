import NIOCore
import NIOHTTP1

/// Replaces each obs-fold (a field line continued on the next line, which starts with a space or
/// a tab) in an HTTP/1.x response head with spaces, as RFC 9112 section 5.2 asks of a user agent,
/// so that NIO's decoder (which rejects folded lines) reads the field as one line.
///
/// A pure state machine over the bytes of a connection, in order: ``scan(_:)`` rewrites a
/// buffer in place, byte for byte (the line break before the continuation becomes spaces, so
/// nothing moves and no count changes), and says how many of its last bytes it holds back. It
/// looks only at response heads: from ``expectHead()`` (each request) to the blank line that ends
/// the final head (an interim 1xx head is followed by another), then it passes every byte of the
/// body through untouched until the next ``expectHead()``.
///
/// On the way it keeps the final head's reason phrase when the server's is not the standard one
/// for its code (``reasonPhrase``): NIO's decoder makes the status from the code alone.
struct ResponseHeadUnfolder {
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

    private var position = Position.statusLine
    /// The current status line as it came (`HTTP/1.1 200 OK` and its line break), up to
    /// ``statusLineLimit`` bytes: its code, and its reason phrase.
    private var statusLine: [UInt8] = []
    /// The final head's status code and reason phrase, when the phrase is not the standard one for
    /// the code (`200 Everything Fine`, `999 Weird`); nil for the standard phrase, which is what
    /// NIO's head already says, and until the final head has ended.
    private(set) var reasonPhrase: (code: Int, phrase: String)?

    /// The longest status line kept whole: room for a reason phrase of 256 bytes. A longer one is
    /// left as NIO's decoder gives it (the standard phrase).
    static let statusLineLimit = 12 + 1 + 256 + 2

    /// Whether bytes are being looked at (a head is expected or under way).
    var isInHead: Bool { self.position != .body }

    /// The next bytes start a response head (a request went out).
    mutating func expectHead() {
        self.position = .statusLine
        self.statusLine.removeAll(keepingCapacity: true)
        self.reasonPhrase = nil
    }

    /// Looks at `bytes`, rewriting obs-folds in place. Returns how many of its last bytes must be
    /// held back and given again at the start of the next call (at most two: a line break whose
    /// fate the next byte decides); the bytes before them can go on.
    mutating func scan(_ bytes: inout ByteBuffer) -> Int {
        guard self.isInHead else { return 0 }
        var folds: [Range<Int>] = []
        let holdBack = bytes.withUnsafeReadableBytes { self.scan($0, folds: &folds) }
        // Written only when there is a fold (rare): the buffer is not copied otherwise.
        for fold in folds {
            for offset in fold { bytes.setInteger(UInt8(ascii: " "), at: bytes.readerIndex + offset) }
        }
        return holdBack
    }

    private mutating func scan(_ bytes: UnsafeRawBufferPointer, folds: inout [Range<Int>]) -> Int {
        let end = bytes.count
        var index = 0
        // Where the line break before the current line start began (CR or LF).
        var breakStart = 0
        while index < end {
            let byte = bytes[index]
            switch self.position {
            case .body:
                return 0
            case .statusLine, .fieldLine:
                if self.position == .statusLine, self.statusLine.count < Self.statusLineLimit { self.statusLine.append(byte) }
                if byte == UInt8(ascii: "\n") {
                    breakStart = index > 0 && bytes[index - 1] == UInt8(ascii: "\r") ? index - 1 : index
                    self.position = .lineStart(afterField: self.position == .fieldLine)
                }
            case .lineStart(let afterField):
                if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t"), afterField {
                    // obs-fold: the line break becomes spaces, the line goes on.
                    folds.append(breakStart..<index)
                    self.position = .fieldLine
                } else if byte == UInt8(ascii: "\r") {
                    self.position = .blankLineCR
                } else if byte == UInt8(ascii: "\n") {
                    self.headEnded()
                } else {
                    self.position = .fieldLine
                }
            case .blankLineCR:
                if byte == UInt8(ascii: "\n") {
                    self.headEnded()
                } else {
                    // Not a blank line after all; the decoder will say what is wrong with it.
                    self.position = .fieldLine
                }
            }
            index += 1
        }
        // A line break at the very end may turn out to be a fold: hold it back, and look at it
        // again with the bytes that follow (from the position before it).
        switch self.position {
        case .lineStart(let afterField) where afterField:
            self.position = .fieldLine
            return end - breakStart
        case .fieldLine where end > 0 && bytes[end - 1] == UInt8(ascii: "\r"):
            return 1
        default:
            return 0
        }
    }

    /// The blank line ended a head: an interim (1xx other than 101) head is followed by another.
    private mutating func headEnded() {
        // Over the array's bytes: slices of the array itself would retain it, on every response.
        self.statusLine.withUnsafeBufferPointer { line in
            let code = Self.code(in: line)
            if let code, (100..<200).contains(code), code != 101 {
                self.expectHead()
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
