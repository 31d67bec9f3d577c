@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import NIOEmbedded
import Testing

/// Response heads NIO's strict decoder refuses but a user agent reads, as curl, browsers, Go's
/// client and OkHttp read them: lines ended by LF alone (RFC 9112 2.2), also in a chunked body's
/// framing (as curl and OkHttp read it), a `Content-Length` listed (`6, 6`) or repeated with one
/// number, and one beside `Transfer-Encoding: chunked` (RFC 9112 6.3). ``ResponseHeadMender`` alone, with the bytes cut anywhere; then in front of NIO's decoder
/// on an `EmbeddedChannel`; then over a socket. Different numbers are still refused
/// (`HTTP1ParserErrorTests`).
@Suite("HTTP/1.1 heads mended: bare LF, a repeated Content-Length, Content-Length with chunked")
struct HTTP1HeadMendingTests {
    /// Runs `text` through a mender in pieces cut at `cuts` (a new head expected at each offset
    /// of `expectHeadAt`), giving back what it passes on.
    static func mend(_ text: String, cuts: [Int] = [], expectHeadAt: Set<Int> = [0]) -> String {
        String(decoding: Self.mend(bytes: Array(text.utf8), cuts: cuts, expectHeadAt: expectHeadAt), as: UTF8.self)
    }

    /// ``mend(_:cuts:expectHeadAt:)`` for bytes that need not be UTF-8.
    static func mend(bytes: [UInt8], cuts: [Int] = [], expectHeadAt: Set<Int> = [0]) -> [UInt8] {
        var mender = ResponseHeadMender()
        var output: [UInt8] = []
        var held: [UInt8] = []
        var start = 0
        for end in cuts + [bytes.count] where end >= start {
            if expectHeadAt.contains(start) { mender.expectHead() }
            var buffer = ByteBuffer(bytes: held + bytes[start..<end])
            let holdBack = mender.scan(&buffer)
            let passed = Array(buffer.readableBytesView)
            output += passed.dropLast(holdBack)
            held = Array(passed.suffix(holdBack))
            start = end
        }
        return output + held
    }

    /// Every cut of `text` in two, and one byte at a time, gives `mended`.
    static func expectMendedWherever(_ text: String, is mended: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(Self.mend(text) == mended, sourceLocation: sourceLocation)
        let count = text.utf8.count
        for cut in 1..<count {
            let result = Self.mend(text, cuts: [cut])
            #expect(result == mended, "cut at \(cut): \(result.debugDescription)", sourceLocation: sourceLocation)
        }
        #expect(Self.mend(text, cuts: Array(1..<count)) == mended, "a byte at a time", sourceLocation: sourceLocation)
    }

    @Test func aBareLineFeedGetsItsCarriageReturnOnEveryLineOfTheHead() {
        Self.expectMendedWherever(
            "HTTP/1.1 200 OK\nA: b\nContent-Length: 4\n\nx\ny\n",
            is: "HTTP/1.1 200 OK\r\nA: b\r\nContent-Length: 4\r\n\r\nx\ny\n")
        // Mixed line ends, and a status line with a phrase of its own.
        Self.expectMendedWherever(
            "HTTP/1.0 200 Fine Indeed\r\nA: b\nC: d\r\n\n",
            is: "HTTP/1.0 200 Fine Indeed\r\nA: b\r\nC: d\r\n\r\n")
        // CRLF throughout is passed on as it came.
        let proper = "HTTP/1.1 204 No Content\r\nA: b\r\n\r\n"
        Self.expectMendedWherever(proper, is: proper)
    }

    @Test func aFoldWithBareLineFeedsIsOneLine() {
        Self.expectMendedWherever(
            "HTTP/1.1 200 OK\nX-Folded: one\n two\nContent-Length: 0\n\n",
            is: "HTTP/1.1 200 OK\r\nX-Folded: one  two\r\nContent-Length: 0\r\n\r\n")
    }

    @Test func anInterimHeadAndTheFinalOneAreBothMended() {
        Self.expectMendedWherever(
            "HTTP/1.1 100 Continue\n\nHTTP/1.1 200 OK\nContent-Length: 2\nContent-Length: 2\n\nok",
            is: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        // A Content-Length in an interim head does not count against the final one's.
        Self.expectMendedWherever(
            "HTTP/1.1 103 Early Hints\r\nContent-Length: 1\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            is: "HTTP/1.1 103 Early Hints\r\nContent-Length: 1\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    }

    @Test func aRepeatedContentLengthOfOneNumberIsOneField() {
        // On two lines (any case): the second goes.
        Self.expectMendedWherever(
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nA: b\r\ncontent-LENGTH:3 \r\n\r\nabc",
            is: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nA: b\r\n\r\nabc")
        // As a list: one number is left.
        Self.expectMendedWherever(
            "HTTP/1.1 200 OK\r\nContent-Length: 3, 3,3\r\n\r\nabc",
            is: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
        // Both, with bare LFs.
        Self.expectMendedWherever(
            "HTTP/1.1 200 OK\nContent-Length:\t10 , 10\nContent-Length: 10\nZ: y\n\n0123456789",
            is: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nZ: y\r\n\r\n0123456789")
    }

    @Test func differentNumbersOrOtherValuesAreLeftForTheDecoderToRefuse() {
        for text in [
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc",
            "HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabc",
            "HTTP/1.1 200 OK\r\nContent-Length: 3,\r\n\r\nabc",
            "HTTP/1.1 200 OK\r\nContent-Length: 3 3\r\n\r\nabc",
            "HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\nabc",
            "HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\nContent-Length: 3\r\n\r\nabc",
        ] {
            Self.expectMendedWherever(text, is: text)
        }
        // After a conflict nothing more is mended: the decoder sees every number.
        Self.expectMendedWherever(
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\nContent-Length: 3\r\n\r\nabc",
            is: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\nContent-Length: 3\r\n\r\nabc")
    }

    @Test func fieldsThatOnlyLookLikeContentLengthAreLeftAlone() {
        let text = "HTTP/1.1 200 OK\r\nContent-Lengths: 3\r\nX-Content-Length: 3\r\nContent-Length: 3\r\nContent-Length-X: 3, 3\r\n\r\nabc"
        Self.expectMendedWherever(text, is: text)
        // A folded Content-Length is not read as one: the decoder says what it makes of it.
        let folded = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n 3\r\n\r\nabc"
        Self.expectMendedWherever(folded, is: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3   3\r\n\r\nabc")
    }

    @Test func theBodyAndTheNextHeadAreLookedAtOnlyAsTheyShouldBe() {
        let second = "HTTP/1.1 200 OK\nContent-Length: 0\nContent-Length: 0\n\n"
        let text = "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nContent-Length: 1\n\n\n" + second
        let at = text.utf8.count - second.utf8.count
        #expect(Self.mend(text, cuts: [at], expectHeadAt: [0, at])
            == "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nContent-Length: 1\n\n\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        // Without a new request, nothing after the first head is looked at.
        #expect(Self.mend(text, cuts: [at], expectHeadAt: [0]) == text)
    }

    @Test func aContentLengthBesideChunkedIsRemovedAndTheConnectionIsNotUsedAgain() {
        // Before or after the coding, once or twice, any number or none: the coding frames the body.
        for (text, mended) in [
            ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
             "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
            ("HTTP/1.1 200 OK\nTransfer-Encoding: gzip, Chunked \nA: b\ncontent-length: 5, 6\nContent-Length: x\n\n",
             "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked \r\nA: b\r\n\r\n"),
        ] {
            Self.expectMendedWherever(text, is: mended)
        }
        var mender = ResponseHeadMender()
        mender.expectHead()
        var buffer = ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n")
        #expect(mender.scan(&buffer) == 0)
        #expect(mender.droppedContentLength)
        mender.expectHead()
        #expect(!mender.droppedContentLength)
        buffer = ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
        #expect(mender.scan(&buffer) == 0)
        #expect(!mender.droppedContentLength)
    }

    @Test func aCodingOtherThanChunkedLastIsLeftForTheDecoderToRefuse() {
        for text in [
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: identity\r\n\r\nhello",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\nContent-Length: 5\r\n\r\nhello",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: notchunked\r\nContent-Length: 5\r\n\r\nhello",
        ] {
            Self.expectMendedWherever(text, is: text)
        }
    }

    @Test func aHeadHeldBackPastTheLimitKeepsItsFramingAsItCame() {
        // Framing fields, then more than the limit of other fields before the head ends: held
        // back no further, the framing is left to the decoder (which refuses it); the bare LFs
        // still get their CRs.
        let padding = String(repeating: "X-Pad: \(String(repeating: "p", count: 90))\r\n", count: ResponseHeadMender.framingHoldLimit / 90)
        let text = "HTTP/1.1 200 OK\nContent-Length: 3\nContent-Length: 3\n" + padding + "\r\nabc"
        let mended = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n" + padding + "\r\nabc"
        let cut = text.utf8.count - 10
        #expect(Self.mend(text, cuts: [cut]) == mended)
        // In one read, nothing is held back: it is mended.
        #expect(Self.mend(text) == "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n" + padding + "\r\nabc")
    }

    static let chunkedHead = "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n"
    static let chunkedHeadMended = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

    @Test func aChunkedBodysLineBreaksGetTheirCarriageReturnsAndItsDataIsUntouched() {
        // Size lines (with an extension, in capitals), the break after each chunk's data (data
        // that holds LFs of its own), the last chunk, a trailer and the blank line.
        Self.expectMendedWherever(
            Self.chunkedHead + "3\nabc\n4;ext=1\nd\ne\n\nA\n0123456789\r\n0\nTrailer: x\n\n",
            is: Self.chunkedHeadMended + "3\r\nabc\r\n4;ext=1\r\nd\ne\n\r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n")
        // Proper framing goes on as it came, and nothing after the body is looked at.
        let proper = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe\nlo\r\n0\r\n\r\nnext\n\n"
        Self.expectMendedWherever(proper, is: proper)
        Self.expectMendedWherever(
            Self.chunkedHead + "2\nok\n0\n\n3\nnot\n",
            is: Self.chunkedHeadMended + "2\r\nok\r\n0\r\n\r\n3\nnot\n")
    }

    @Test func aChunkedBodyTheDecoderWillRefuseIsLeftAsItCame() {
        for (body, mended) in [
            ("zz\nabc\n", "zz\nabc\n"),
            ("3\nabcX\n0\n\n", "3\r\nabcX\n0\n\n"),
            (" 3\nabc\n", " 3\nabc\n"),
            ("12345678901234567\nabc\n", "12345678901234567\nabc\n"),
        ] {
            Self.expectMendedWherever(Self.chunkedHead + body, is: Self.chunkedHeadMended + mended)
        }
        // Bodies that are empty whatever the head says; a body that is not chunked.
        for head in ["HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
                     "HTTP/1.1 101 Switching Protocols\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"] {
            Self.expectMendedWherever(head + "3\nabc\n0\n\n", is: head + "3\nabc\n0\n\n")
        }
    }

    /// A response as servers send them, well or badly: line ends CRLF or LF, fields among them
    /// folds and framing fields, a body framed by a length or chunked.
    static func randomResponse(_ random: inout SeededGenerator) -> String {
        func lineEnd() -> String { Bool.random(using: &random) ? "\r\n" : "\n" }
        var head = (Bool.random(using: &random) ? "HTTP/1.1 200 OK" : "HTTP/1.0 201 Made") + lineEnd()
        if Int.random(in: 0..<4, using: &random) == 0 { head = "HTTP/1.1 100 Continue" + lineEnd() + lineEnd() + head }
        let chunked = Bool.random(using: &random)
        let body = String(repeating: "x\n", count: Int.random(in: 0..<6, using: &random))
        var fields = ["A: b", "X-Long: " + String(repeating: "v", count: Int.random(in: 0..<120, using: &random)), "Fold: one"]
        if chunked {
            fields.append(Bool.random(using: &random) ? "Transfer-Encoding: chunked" : "transfer-encoding: gzip, Chunked")
            if Bool.random(using: &random) { fields.append("Content-Length: 99") }
        } else {
            let length = body.utf8.count
            fields.append(["Content-Length: \(length)", "content-length: \(length), \(length)", "Content-Length:\(length) "][Int.random(in: 0..<3, using: &random)])
            if Bool.random(using: &random) { fields.append("CONTENT-LENGTH: \(length)") }
        }
        fields.shuffle(using: &random)
        for field in fields {
            head += field + lineEnd()
            if field == "Fold: one" { head += " two" + lineEnd() }
        }
        head += lineEnd()
        guard chunked else { return head + body }
        var chunks = ""
        var rest = Substring(body)
        while !rest.isEmpty {
            let size = Int.random(in: 1...rest.count, using: &random)
            chunks += String(size, radix: 16) + (Bool.random(using: &random) ? ";e=1" : "") + lineEnd() + rest.prefix(size) + lineEnd()
            rest = rest.dropFirst(size)
        }
        return head + chunks + "0" + lineEnd() + (Bool.random(using: &random) ? "T: v" + lineEnd() : "") + lineEnd()
    }

    @Test func randomResponsesCutAtRandomAreMendedAsWhole() {
        var random = SeededGenerator(seed: 0x9E37_79B9_7F4A_7C15)
        for round in 0..<400 {
            let text = Self.randomResponse(&random)
            let whole = Self.mend(text)
            let count = text.utf8.count
            for _ in 0..<8 {
                let cuts = (0..<Int.random(in: 1...4, using: &random)).map { _ in Int.random(in: 1..<count, using: &random) }.sorted()
                let result = Self.mend(text, cuts: cuts)
                #expect(result == whole, "round \(round), cuts \(cuts): \(text.debugDescription)")
                if result != whole { return }
            }
            // What the decoder reads of the final head: every line break is CRLF, and one
            // Content-Length at most.
            let heads = whole.components(separatedBy: "\r\n\r\n")
            let head = heads[whole.hasPrefix("HTTP/1.1 100") ? 1 : 0]
            #expect(!head.replacingOccurrences(of: "\r\n", with: "").contains("\n"), "round \(round): \(whole.debugDescription)")
            #expect(head.lowercased().components(separatedBy: "content-length").count <= 2, "round \(round): \(whole.debugDescription)")
        }
    }

    /// Bytes a broken or hostile server might send: either the pieces of a response (status
    /// lines, framing fields and their values, chunk sizes and extensions, line breaks of every
    /// kind, folds, bytes that are not ASCII) in any order, or a response as servers send them
    /// (``randomResponse(_:)``, which reaches a chunked body's states) with pieces put in, bytes
    /// taken out and bytes changed.
    static func randomGarbage(_ random: inout SeededGenerator) -> [UInt8] {
        let pieces: [[UInt8]] = [
            "HTTP/1.1 200 OK", "HTTP/1.1 100 Continue", "HTTP/1.0 304 ", "HTTP/1.1 204", "\r\n", "\n", "\r", "\r\n\r\n", "\n\n",
            "Content-Length", "content-length", "Transfer-Encoding", "chunked", "Chunked", "gzip", "Location", ":", ": ", " ",
            "\t", ",", ", ", "0", "3", "5", "6, 6", "18446744073709551616", "ff", "abc", ";e=1", "x", "T: v",
        ].map { Array($0.utf8) } + [[0xC3, 0xA9], [0xFF], [0x00], [0x80, 0x0A]]
        func piece() -> [UInt8] { pieces[Int.random(in: 0..<pieces.count, using: &random)] }
        guard Bool.random(using: &random) else {
            return (0..<Int.random(in: 1...80, using: &random)).flatMap { _ in piece() }
        }
        var bytes = Array(Self.randomResponse(&random).utf8)
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let at = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0: bytes.insert(contentsOf: piece(), at: at)
            case 1: bytes.removeSubrange(at..<min(at + Int.random(in: 1...5, using: &random), bytes.count))
            default: bytes[at] = Array("\r\n \t:;0a".utf8).randomElement(using: &random)!
            }
            if bytes.isEmpty { bytes = piece() }
        }
        return bytes
    }

    /// Whatever the bytes, the mender neither traps nor mends them differently for where the reads
    /// cut them: what the decoder gets never depends on how TCP split the response.
    @Test func garbageIsMendedTheSameWhereverItIsCut() {
        var random = SeededGenerator(seed: 0xD1B5_4A32_D192_ED03)
        for round in 0..<2_000 {
            let bytes = Self.randomGarbage(&random)
            let whole = Self.mend(bytes: bytes)
            for cuts in Cuts.toTry(bytes.count, randomSets: 6, most: 5, using: &random) {
                let result = Self.mend(bytes: bytes, cuts: cuts)
                #expect(
                    result == whole,
                    """
                    round \(round), cuts \(Cuts.describe(cuts, of: bytes.count)): \(String(decoding: bytes, as: UTF8.self).debugDescription) \
                    gave \(String(decoding: result, as: UTF8.self).debugDescription), whole \(String(decoding: whole, as: UTF8.self).debugDescription)
                    """)
                if result != whole { return }
            }
        }
    }

    @Test func theValueIsReadAsAListOfOneNumber() {
        func read(_ value: String) -> String? {
            Array(value.utf8).withUnsafeBytes { ResponseHeadMender.sameNumber(in: $0) }.map { "\($0.value)×\($0.count)" }
        }
        #expect(read("0") == "0×1")
        #expect(read(" 42 ") == "42×1")
        #expect(read("42,42") == "42×2")
        #expect(read("\t7 ,  7 , 007") == "7×3")
        #expect(read("999999999999999999") == "999999999999999999×1")
        for refused in ["", " ", ",", "1,", ",1", "1,,1", "1 2", "1, 2", "+1", "1.0", "0x1", "9999999999999999999"] {
            #expect(read(refused) == nil, "\(refused.debugDescription)")
        }
    }

    // MARK: - In front of NIO's decoder

    @Test(arguments: [
        "HTTP/1.1 200 OK\nContent-Length: 3\n\nabc",
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
        "HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\nabc",
        "HTTP/1.1 200 Fine\nContent-Length: 3,3\ncontent-length: 3\nX-A: b\n\nabc",
        "HTTP/1.1 200 OK\r\nContent-Length: 30\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\nTransfer-Encoding: chunked\nContent-Length: 3\n\n3\r\nabc\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n1;a=b\na\n2\nbc\n0\nX-Checksum: 1\n\n",
    ])
    func theDecoderReadsTheMendedHeadAndItsBody(_ response: String) throws {
        let setup = try HopHandlerTests.Setup()
        let (_, recorder) = try setup.run(Request(url: HopHandlerTests.url))
        _ = try setup.written()
        // In two reads, cut inside the head, and the connection stays open for the next request.
        let bytes = Array(response.utf8)
        try setup.channel.writeInbound(ByteBuffer(bytes: bytes[..<20]))
        try setup.channel.writeInbound(ByteBuffer(bytes: bytes[20...]))
        #expect(recorder.snapshot.error == nil, "\(String(describing: recorder.snapshot.error))")
        #expect(recorder.snapshot.status == 200)
        #expect(recorder.snapshot.body == "abc")
        #expect(recorder.snapshot.completions == 1)
        // A head that had both Content-Length and Transfer-Encoding ends its connection.
        #expect(setup.channel.isActive == !(response.contains("Transfer-Encoding") && response.contains("Content-Length")))
    }

    // MARK: - Location

    /// A `Location` sent with raw bytes outside ASCII: a Latin-1 `é` (E9) and a UTF-8 one (C3 A9).
    static func rawLocationHead(lineEnd: String = "\r\n", name: String = "Location") -> [UInt8] {
        Array("HTTP/1.1 302 Found\(lineEnd)X-Name: caf".utf8) + [0xE9] + Array("\(lineEnd)\(name): /caf".utf8) + [0xE9]
            + Array("?q=".utf8) + [0xC3, 0xA9] + Array("\(lineEnd)Content-Length: 0\(lineEnd)\(lineEnd)".utf8)
    }

    @Test(arguments: ["Location", "location", "LOCATION"])
    func aLocationsBytesOutsideASCIIArePercentEncodedWhereverTheReadsCutIt(_ name: String) {
        let head = Self.rawLocationHead(name: name)
        // Only the `Location` value: another field's byte is left as it came.
        let mended = Array("HTTP/1.1 302 Found\r\nX-Name: caf".utf8) + [0xE9] + Array("\r\n\(name): /caf%E9?q=%C3%A9\r\nContent-Length: 0\r\n\r\n".utf8)
        #expect(Self.mend(bytes: head) == mended)
        for cut in 1..<head.count {
            #expect(Self.mend(bytes: head, cuts: [cut]) == mended, "cut at \(cut)")
        }
        #expect(Self.mend(bytes: head, cuts: Array(1..<head.count)) == mended, "a byte at a time")
        // With bare line feeds, mended too.
        let bare = Self.rawLocationHead(lineEnd: "\n", name: name)
        #expect(Self.mend(bytes: bare, cuts: Array(1..<bare.count)) == mended, "bare LFs, a byte at a time")
    }

    /// A `Location` continued by an obs-fold is still held back until it ends: its bytes outside
    /// ASCII, before and after the fold, are encoded wherever the reads cut it. (Found by
    /// ``garbageIsMendedTheSameWhereverItIsCut()``: a folded line was passed on at the first cut
    /// after its fold, unencoded.)
    @Test func aFoldedLocationIsPercentEncodedWhereverTheReadsCutIt() {
        let head = Array("HTTP/1.1 302 Found\r\nLocation: /caf".utf8) + [0xE9] + Array("\r\n\t?q=".utf8) + [0xC3, 0xA9]
            + Array("\r\nContent-Length: 0\r\n\r\n".utf8)
        let mended = Array("HTTP/1.1 302 Found\r\nLocation: /caf%E9  \t?q=%C3%A9\r\nContent-Length: 0\r\n\r\n".utf8)
        #expect(Self.mend(bytes: head) == mended)
        for cut in 1..<head.count {
            #expect(Self.mend(bytes: head, cuts: [cut]) == mended, "cut at \(cut)")
        }
        #expect(Self.mend(bytes: head, cuts: Array(1..<head.count)) == mended, "a byte at a time")
    }

    @Test func aLocationInASCIIIsPassedOnAsItCame() {
        let proper = "HTTP/1.1 301 Moved\r\nLocation: /caf%C3%A9?q=1\r\nLocationish: \u{E9}\r\nContent-Length: 0\r\n\r\n"
        Self.expectMendedWherever(proper, is: proper)
    }

    /// Followed over a socket: the server gets its own bytes back, encoded, not U+FFFD.
    @Test func aRedirectToALatin1LocationReachesTheServersBytes() async throws {
        let script: ScriptedHTTPServer.Script = { _, request, _ in
            request == 0 ? .respondBytes(Self.rawLocationHead()) : .respond("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        }
        try await ScriptedHTTPServer.with(script) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let response = try await manager.response(method: .get, urlString: "start", serializer: DataResponseSerializer())
                #expect(response.value == Data("ok".utf8))
                #expect(server.receivedHeads.last?.hasPrefix("GET /caf%E9?q=%C3%A9 HTTP/1.1\r\n") == true, "\(server.receivedHeads.last ?? "")")
            }
        }
    }

    // MARK: - Over a socket

    @Test func overASocketMendedHeadsAreReadAndTheConnectionIsKept() async throws {
        let script: ScriptedHTTPServer.Script = { _, request, _ in
            switch request {
            case 0: .respond("HTTP/1.1 200 OK\nContent-Length: 2\nX-Line: bare\n\nok")
            case 1: .respond("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Line: twice\r\nContent-Length: 2\r\n\r\nok")
            case 2: .respond("HTTP/1.1 100 Continue\n\nHTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nX-Line: listed\r\n\r\nok")
            case 3: .respond("HTTP/1.1 200 OK\nX-Line: chunks\nTransfer-Encoding: chunked\n\n1\no\n1;x\nk\n0\n\n")
            default: .respond("HTTP/1.1 200 OK\r\nContent-Length: 9\r\nX-Line: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
            }
        }
        try await ScriptedHTTPServer.with(script) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                for expected in ["bare", "twice", "listed", "chunks", "chunked", "bare"] {
                    let response = try await manager.response(method: .get, urlString: "a", serializer: DataResponseSerializer())
                    #expect(response.value == Data("ok".utf8), "\(expected)")
                    #expect(response.response.headerFields[HTTPField.Name("X-Line")!] == expected)
                    let length = response.response.headerFields[values: .contentLength]
                    #expect(length == (expected.hasPrefix("chunk") ? [] : ["2"]), "\(expected)")
                }
                // The response with both Content-Length and Transfer-Encoding ended its
                // connection: the last request went on a new one.
                #expect(server.connectionCount == 2)
            }
        }
    }
}
