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
            try serializer.serialize(ByteBuffer(string: "{\"id\":1}\n{\"id\":\"two\"}\n"))
        }
        #expect(error?.code == .responseSerializationFailed)
        #expect(error?.message.contains("line 2") == true)
        #expect(error?.data == Data("{\"id\":\"two\"}".utf8))
        #expect(error?.underlyingError is DecodingError)
    }

    @Test("A line longer than the bound fails instead of filling memory")
    func anEndlessLine() {
        var serializer = DecodableStreamSerializer(Item.self, maximumLineLength: 8)
        #expect(throws: Never.self) { try serializer.serialize(ByteBuffer(string: "{\"id\":1}\n{\"id\"")) }
        let error = #expect(throws: CourierError.self) { try serializer.serialize(ByteBuffer(string: ":22222")) }
        #expect(error?.code == .responseSerializationFailed)
        #expect(error?.message.contains("runs over 8 bytes") == true)
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
}
