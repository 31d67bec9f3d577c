import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import Courier

/// The stream serializers without I/O, chunk by chunk.
@Suite("Stream serializers: text and JSON lines, whatever the chunks")
struct DataStreamSerializerTests {
    struct Item: Decodable, Sendable, Equatable { let id: Int }

    /// Every way of cutting `bytes` in two.
    static func cuts(of bytes: [UInt8]) -> [[ByteBuffer]] {
        (0...bytes.count).map { cut in [ByteBuffer(bytes: bytes[..<cut]), ByteBuffer(bytes: bytes[cut...])] }
    }

    @Test("A character split between chunks comes whole, at every cut; the strings add up to the text")
    func charactersSplitBetweenChunks() {
        let text = "a€b😀c\u{e9}d"
        for chunks in Self.cuts(of: Array(text.utf8)) {
            var serializer = StringStreamSerializer()
            var strings = chunks.flatMap { serializer.serialize($0) }
            strings += serializer.finish()
            #expect(strings.joined() == text, "\(chunks.map(\.readableBytes))")
            #expect(!strings.joined().contains("\u{FFFD}"))
        }
        // One byte at a time: nothing before a character is whole.
        var serializer = StringStreamSerializer()
        let strings = Array("😀".utf8).map { serializer.serialize(ByteBuffer(bytes: [$0])) }
        #expect(strings == [[], [], [], ["😀"]])
    }

    @Test("Bytes that are not UTF-8, and a character the body ends in, become U+FFFD")
    func badBytes() {
        var serializer = StringStreamSerializer()
        #expect(serializer.serialize(ByteBuffer(bytes: [0x61, 0xFF, 0x62])) == ["a\u{FFFD}b"])
        #expect(serializer.serialize(ByteBuffer(bytes: [0x63, 0xE2, 0x82])) == ["c"])
        #expect(serializer.finish() == ["\u{FFFD}"])
        #expect(serializer.finish() == [])
        // A stray continuation byte is not held back.
        var stray = StringStreamSerializer()
        #expect(stray.serialize(ByteBuffer(bytes: [0x61, 0x80])) == ["a\u{FFFD}"])
        #expect(StringStreamSerializer.completeEnd(of: [UInt8]()) == 0)
    }

    /// Bytes from every corner of the three encodings: byte-order marks (sometimes at the start),
    /// lead bytes of each length, continuation bytes, bytes no UTF-8 holds, surrogates' halves in
    /// UTF-16, ASCII.
    static func randomText(_ random: inout SeededGenerator) -> [UInt8] {
        let pieces: [[UInt8]] = [
            [0xEF, 0xBB, 0xBF], [0xFE, 0xFF], [0xFF, 0xFE], [0xFF, 0xFE, 0x00, 0x00], [0x00, 0x00, 0xFE, 0xFF],
            [0xC3], [0xA9], [0xE2], [0x82], [0xAC], [0xF0], [0x9F], [0x98], [0x80], [0xED], [0xA0], [0xF4], [0x90],
            [0xC0], [0xF8], [0xFF], [0xD8], [0x3D], [0xDE], [0x00], [0x61], [0x0A],
        ]
        func piece() -> [UInt8] { pieces.randomElement(using: &random)! }
        let start = Bool.random(using: &random) ? pieces[Int.random(in: 0..<5, using: &random)] : []
        return start + (0..<Int.random(in: 0...24, using: &random)).flatMap { _ in piece() }
    }

    /// Whatever the bytes (valid or not, in any of the encodings a mark names), the text is the
    /// same wherever the chunks are cut: a character, a mark or a bad byte is never read otherwise
    /// for arriving in two pieces.
    @Test("Any bytes give the same text wherever the chunks are cut")
    func anyBytesGiveTheSameTextWhereverCut() {
        func text(_ bytes: [UInt8], cuts: [Int]) -> [Unicode.Scalar] {
            var serializer = StringStreamSerializer()
            var strings = Cuts.pieces(of: bytes, at: cuts).flatMap { serializer.serialize(ByteBuffer(bytes: $0)) }
            strings += serializer.finish()
            return Array(strings.joined().unicodeScalars)
        }
        var random = SeededGenerator(seed: 0x2545_F491_4F6C_DD1D)
        for round in 0..<1_500 {
            let bytes = Self.randomText(&random)
            let whole = text(bytes, cuts: [])
            for cuts in Cuts.toTry(bytes.count, randomSets: 4, most: 4, using: &random) {
                let result = text(bytes, cuts: cuts)
                #expect(result == whole, "round \(round), cuts \(Cuts.describe(cuts, of: bytes.count)): \(bytes) gave \(result), whole \(whole)")
                if result != whole { return }
            }
        }
    }

    @Test("JSON lines: values across chunks, CRLF, blank lines, a last line without its newline")
    func jsonLines() throws {
        let body = Array("{\"id\":1}\n\r\n{\"id\":2}\r\n   \n{\"id\":3}".utf8)
        for chunks in Self.cuts(of: body) {
            var serializer = DecodableStreamSerializer(Item.self)
            var items = try chunks.flatMap { try serializer.serialize($0) }
            items += try serializer.finish()
            #expect(items == [Item(id: 1), Item(id: 2), Item(id: 3)], "\(chunks.map(\.readableBytes))")
        }
    }

    @Test("A line that does not decode is a typed error naming it, with its bytes and the decoder's error")
    func aBadLine() throws {
        var serializer = DecodableStreamSerializer(Item.self)
        let error = #expect(throws: CourierError.self) {
            try serializer.serialize(ByteBuffer(string: "{\"id\":\"two\"}\n{\"id\":3}\n"))
        }
        #expect(error?.code == .responseSerializationFailed)
        #expect(error?.message.contains("line 1") == true)
        #expect(error?.data == Data("{\"id\":\"two\"}".utf8))
        #expect(error?.underlyingError is DecodingError)
    }

    /// The values of the lines before a bad one are handed out first, also when they came in the
    /// same chunk: the chunk's good values are returned and the failure kept (``DecodableStreamSerializer/takeFailure()``),
    /// or thrown by the next call for a caller that does not ask for it.
    @Test("The values before a bad line in the same chunk come first, then the failure")
    func valuesBeforeABadLineComeFirst() throws {
        var serializer = DecodableStreamSerializer(Item.self)
        #expect(try serializer.serialize(ByteBuffer(string: "{\"id\":1}\n{\"id\":\"two\"}\n{\"id\":3}\n")) == [Item(id: 1)])
        let failure = serializer.takeFailure()
        #expect(failure?.message.contains("line 2") == true)
        #expect(failure?.data == Data("{\"id\":\"two\"}".utf8))
        #expect(serializer.takeFailure() == nil, "handed over once")
        // Without `takeFailure`: the next call throws it.
        var other = DecodableStreamSerializer(Item.self)
        #expect(try other.serialize(ByteBuffer(string: "{\"id\":1}\n{\"id\":\"two\"}\n")) == [Item(id: 1)])
        let thrown = #expect(throws: CourierError.self) { try other.finish() }
        #expect(thrown?.message.contains("line 2") == true)
    }

    @Test("A line longer than the bound fails instead of filling memory, in one chunk or many")
    func anEndlessLine() throws {
        var serializer = DecodableStreamSerializer(Item.self, maximumLineLength: 8)
        #expect(throws: Never.self) { try serializer.serialize(ByteBuffer(string: "{\"id\":1}\n{\"id\"")) }
        let error = #expect(throws: CourierError.self) { try serializer.serialize(ByteBuffer(string: ":22222")) }
        #expect(error?.code == .responseSerializationFailed)
        #expect(error?.message.contains("runs over 8 bytes") == true)
        // Whole in one chunk, the same line fails the same way; a line of 8 bytes and its CRLF,
        // cut between CR and LF, does not.
        var whole = DecodableStreamSerializer(Item.self, maximumLineLength: 8)
        let wholeError = #expect(throws: CourierError.self) { try whole.serialize(ByteBuffer(string: "{\"id\":22222}\n")) }
        #expect(wholeError?.message.contains("line 1 of the streamed body runs over 8 bytes") == true)
        var exact = DecodableStreamSerializer(Item.self, maximumLineLength: 8)
        #expect(try exact.serialize(ByteBuffer(string: "{\"id\":1}\r")) == [])
        #expect(try exact.serialize(ByteBuffer(string: "\n")) == [Item(id: 1)])
    }

    /// Whatever the chunks, a stream of lines with a bad one (not a value, or over the bound)
    /// gives the values before it, then fails naming it, as ``SerializedStream`` reads it.
    @Test("Values and the failure after them are the same wherever the chunks are cut", arguments: [
        ("{\"id\":1}\n{\"id\":2}\r\n{\"id\":\"x\"}\n{\"id\":4}\n", Int.max),
        ("{\"id\":1}\n{\"id\":2}\r\n{\"id\":1234567890}\n{\"id\":4}\n", 12),
    ])
    func valuesAndFailureWhereverCut(_ body: String, maximumLineLength: Int) {
        func read(_ chunks: [ByteBuffer]) -> ([Item], String?) {
            var serializer = DecodableStreamSerializer(Item.self, maximumLineLength: maximumLineLength)
            var items: [Item] = []
            do throws(CourierError) {
                for chunk in chunks {
                    if let failure = serializer.takeFailure() { throw failure }
                    items += try serializer.serialize(chunk)
                }
                if let failure = serializer.takeFailure() { throw failure }
                items += try serializer.finish()
                return (items, nil)
            } catch {
                return (items, error.message)
            }
        }
        let bytes = Array(body.utf8)
        for chunks in Self.cuts(of: bytes) + [bytes.map { ByteBuffer(bytes: [$0]) }] {
            let (items, failure) = read(chunks)
            #expect(items == [Item(id: 1), Item(id: 2)], "\(chunks.map(\.readableBytes))")
            #expect(failure?.contains("line 3 of the streamed body") == true, "\(chunks.map(\.readableBytes)): \(failure ?? "no failure")")
        }
    }

    @Test("Passthrough hands on each chunk as it came")
    func passthrough() throws {
        var serializer = PassthroughStreamSerializer()
        #expect(serializer.serialize(ByteBuffer(string: "ab")) == [Data("ab".utf8)])
        #expect(serializer.serialize(ByteBuffer()) == [Data()])
        #expect(try serializer.finish().isEmpty)
    }
}

/// The stream serializers over sockets, on every transport.
@Suite("Stream serializers: over every transport")
struct SerializedStreamTests {
    struct Line: Decodable, Sendable { let id: Int; let url: String }

    @Test("httpbin's /stream/5 decoded one value a line, and read as text", arguments: Transport.allCases)
    func decodedAndText(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let lines = try await manager.stream(Request(url: server.url("/stream/5")))
            var ids: [Int] = []
            for try await line in lines.decoded(Line.self) {
                ids.append(line.id)
                #expect(line.url.hasSuffix("/stream/5"))
            }
            #expect(ids == [0, 1, 2, 3, 4])
            let text = try await manager.stream(Request(url: server.url("/stream/3")))
            var joined = ""
            for try await string in text.strings { joined += string }
            #expect(joined.split(separator: "\n").count == 3)
            #expect(joined.hasSuffix("}\n"))
        }
    }

    /// The two values before a bad line arrive in the same chunk as it (a body of 36 bytes): the
    /// stream hands them out, then ends with the failure naming the line.
    @Test("The values before a bad line come out of the stream before its failure", arguments: Transport.direct)
    func valuesBeforeABadLineComeOutOfTheStream(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            // `{"id":1}\n{"id":2}\nnot json\n{"id":4}\n`
            let stream = try await manager.stream(Request(url: server.url("/base64/eyJpZCI6MX0KeyJpZCI6Mn0Kbm90IGpzb24KeyJpZCI6NH0K")))
            var items: [DataStreamSerializerTests.Item] = []
            let error = await #expect(throws: CourierError.self) {
                for try await item in stream.decoded(DataStreamSerializerTests.Item.self) { items.append(item) }
            }
            #expect(items == [DataStreamSerializerTests.Item(id: 1), DataStreamSerializerTests.Item(id: 2)])
            #expect(error?.code == .responseSerializationFailed)
            #expect(error?.message.contains("line 3") == true, "\(String(describing: error))")
            #expect(error?.request?.url == stream.request.url)
        }
    }

    @Test("A body that is not JSON lines ends the stream with the serializer's typed error and cancels the request", arguments: Transport.direct)
    func aSerializerFailureCancels(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let log = TaskNotificationLog()
            let stream = try await manager.stream(Request(url: server.url("/stream-bytes/2097152?chunk_size=4096&seed=3")))
            var values = 0
            let error = await #expect(throws: CourierError.self) {
                for try await _ in stream.decoded(Line.self) { values += 1 }
            }
            #expect(values == 0)
            #expect(error?.code == .responseSerializationFailed)
            #expect(error?.response?.status == .ok)
            #expect(error?.request?.url == stream.request.url)
            // The request was cancelled: the task ends, with the cancellation, without the rest of the body.
            #expect(await log.wait(for: .taskDidComplete, of: stream.task))
            #expect(stream.task.error?.code == .cancelled)
        }
    }

    /// A body that breaks off mid-line: the transfer's error is thrown once, then the iteration is
    /// over. (The next call read the cut-off line as a whole last value and serialized it.)
    @Test(arguments: Transport.direct)
    func aBodyThatBreaksOffEndsTheIterationAfterItsError(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let stream = try await manager.stream(Request(url: server.url("/courier/truncated/10")))
            var iterator = stream.decoded(Int.self).makeAsyncIterator()
            var thrown: CourierError?
            do { _ = try await iterator.next() } catch { thrown = error as? CourierError }
            #expect(thrown != nil)
            #expect(thrown?.code != .responseSerializationFailed, "\(String(describing: thrown))")
            var afterwards: Result<Int?, CourierError>
            do { afterwards = .success(try await iterator.next()) } catch { afterwards = .failure(error as! CourierError) }
            #expect(try afterwards.get() == nil)
        }
    }
}
