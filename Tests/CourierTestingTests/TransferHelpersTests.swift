import Foundation
import NIOCore
import Testing

@testable import CourierTesting

/// The public helpers tests use to check transfers, and the pure pieces behind the transfer routes.
@Suite struct TransferHelpersTests {
    @Test func crc32MatchesTheStandardCheckValue() {
        #expect(CRC32.checksum(of: Array("123456789".utf8)).value == 0xCBF4_3926)
        #expect(CRC32.checksum(of: Array("123456789".utf8)).hex == "cbf43926")
        #expect(CRC32().hex == "00000000")
        #expect(CRC32.checksum(of: [UInt8]()).count == 0)
    }

    @Test func crc32DoesNotDependOnSlicing() {
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        var sliced = CRC32()
        var offset = 0
        for size in [1, 7, 4096, 65_536, 30_000] where offset < bytes.count {
            sliced.update(bytes[offset..<min(offset + size, bytes.count)])
            offset += size
        }
        sliced.update(bytes[min(offset, bytes.count)...])
        #expect(sliced == CRC32.checksum(of: bytes))
        #expect(sliced.count == bytes.count)
        // A sequence without contiguous storage goes through the same bytes.
        #expect(CRC32.checksum(of: bytes.lazy.map { $0 }) == CRC32.checksum(of: bytes))
        #expect(CRC32.checksum(of: Data(bytes)) == CRC32.checksum(of: bytes))
        #expect(CRC32.checksum(of: ByteBuffer(bytes: bytes).readableBytesView) == CRC32.checksum(of: bytes))
    }

    @Test func generatedFileBytesDoNotDependOnWhereTheyAreCut() {
        let file = TestServer.GeneratedFile(length: 10_000)
        let whole = file.bytes()
        #expect(whole.count == 10_000)
        for range in [0..<1, 3..<11, 7..<8, 8..<16, 5..<9_999, 9_990..<10_000, 4_000..<4_000] {
            #expect(file.bytes(range) == Array(whole[range]), "\(range)")
            #expect(file.crc32(range) == CRC32.checksum(of: whole[range]), "\(range)")
        }
        // A shorter file is a prefix of a longer one; another version has other bytes.
        #expect(TestServer.GeneratedFile(length: 100).bytes() == Array(whole.prefix(100)))
        #expect(TestServer.GeneratedFile(length: 100, version: "2").bytes() != Array(whole.prefix(100)))
        #expect(TestServer.GeneratedFile(length: 100, version: "").bytes() == Array(whole.prefix(100)))
        // Not a short cycle: no 8-byte word repeats in the first 10 000 bytes.
        let words = stride(from: 0, to: 10_000, by: 8).map { whole[$0..<$0 + 8] }
        #expect(Set(words.map(Array.init)).count == words.count)
    }

    @Test func generatedFileDescribesItsPathAndValidators() {
        let plain = TestServer.GeneratedFile(length: 1024)
        #expect(plain.path() == "/courier/file/1024")
        #expect(plain.path(["drop-after": "10"]) == "/courier/file/1024?drop-after=10")
        #expect(plain.etag == "\"file-1024-0000000000000000\"")
        #expect(plain.lastModified == "Sat, 01 Jan 2000 00:00:00 GMT")
        let versioned = TestServer.GeneratedFile(length: 1024, version: "a b&c")
        #expect(versioned.path(["rate": "100"]) == "/courier/file/1024?version=a%20b%26c&rate=100")
        #expect(versioned.etag != plain.etag)
        #expect(versioned.etag.hasPrefix("\"file-1024-"))
        #expect(versioned.lastModified != plain.lastModified)
        #expect(versioned.modificationDate > plain.modificationDate)
    }

    @Test func serverSentEventWireFormat() {
        let event = TestServer.ServerSentEvent.courier(2, of: 5)
        #expect(event == TestServer.ServerSentEvent(id: "2", event: "tick", data: "event 2\nof 5"))
        #expect(event.wireFormat == "id: 2\nevent: tick\ndata: event 2\ndata: of 5\n\n")
        #expect(TestServer.ServerSentEvent(data: "").wireFormat == "data: \n\n")
        // Lines end where a client ends them: CR LF (one `Character`), CR, LF, a mark after one.
        #expect(TestServer.ServerSentEvent(data: "a\r\nb\rc\n\u{301}d\n").wireFormat == "data: a\ndata: b\ndata: c\ndata: \u{301}d\ndata: \n\n")
        #expect(TestServer.ServerSentEvent.courierPrelude() == ": courier event stream\n\n")
        #expect(TestServer.ServerSentEvent.courierPrelude(retry: 1500) == ": courier event stream\nretry: 1500\n\n")
    }

    @Test func byteRangeForms() {
        #expect(ByteRangeRequest.parse("bytes=0-9", length: 100) == .partial(first: 0, last: 9))
        #expect(ByteRangeRequest.parse("bytes=90-", length: 100) == .partial(first: 90, last: 99))
        #expect(ByteRangeRequest.parse("bytes=-10", length: 100) == .partial(first: 90, last: 99))
        #expect(ByteRangeRequest.parse("bytes=-1000", length: 100) == .partial(first: 0, last: 99))
        #expect(ByteRangeRequest.parse("bytes=50-5000", length: 100) == .partial(first: 50, last: 99))
        #expect(ByteRangeRequest.parse("bytes=99999999999999999999999-", length: 100) == .unsatisfiable)
        #expect(ByteRangeRequest.parse("bytes=100-", length: 100) == .unsatisfiable)
        #expect(ByteRangeRequest.parse("bytes=-0", length: 100) == .unsatisfiable)
        #expect(ByteRangeRequest.parse("bytes=0-", length: 0) == .unsatisfiable)
        // Malformed, multiple or foreign ranges are ignored: the whole representation.
        for ignored in ["bytes=9-0", "bytes=a-b", "bytes=0-1,5-6", "items=0-1", "bytes=--1", "bytes=+1-2"] {
            #expect(ByteRangeRequest.parse(ignored, length: 100) == .whole, "\(ignored)")
        }
    }

    @Test func ifRangeComparesStrongly() {
        let date = Date(timeIntervalSince1970: 946_684_800)
        let etag = "\"v1\""
        func evaluate(_ ifRange: String?) -> ByteRangeRequest {
            ByteRangeRequest.evaluate(range: "bytes=0-0", ifRange: ifRange, length: 10, etag: etag, lastModified: date)
        }
        #expect(evaluate(nil) == .partial(first: 0, last: 0))
        #expect(evaluate("\"v1\"") == .partial(first: 0, last: 0))
        #expect(evaluate("Sat, 01 Jan 2000 00:00:00 GMT") == .partial(first: 0, last: 0))
        #expect(evaluate("\"v2\"") == .whole)
        #expect(evaluate("W/\"v1\"") == .whole)
        #expect(evaluate("Sat, 01 Jan 2000 00:00:01 GMT") == .whole)
        #expect(evaluate("yesterday") == .whole)
        #expect(ByteRangeRequest.evaluate(range: nil, ifRange: "\"v1\"", length: 10, etag: etag, lastModified: date) == .whole)
    }

    @Test func streamedBodyWaitsForWritabilityAndPace() {
        let allocator = ByteBufferAllocator()
        var body = StreamedBody(.file(seed: 0, offset: 3), length: 100_000, ending: .drop)
        guard case .waitForWritable = body.next(isWritable: false, allocator: allocator) else { Issue.record("wrote while unwritable"); return }
        guard case .write(let first) = body.next(isWritable: true, allocator: allocator) else { Issue.record("no write"); return }
        #expect(first.readableBytes == StreamedBody.chunkSize)
        #expect(Array(first.readableBytesView) == TestServer.GeneratedFile(length: 3 + 65_536).bytes(3..<(3 + 65_536)))
        guard case .write(let second) = body.next(isWritable: true, allocator: allocator) else { Issue.record("no write"); return }
        #expect(second.readableBytes == 100_000 - 65_536)
        guard case .finish(.drop) = body.next(isWritable: true, allocator: allocator) else { Issue.record("did not finish"); return }

        // 200 bytes a second: 10 bytes a 50 ms tick.
        var paced = StreamedBody(.pattern, length: 25, bytesPerSecond: 200)
        var sizes: [Int] = []
        var ticks = 0
        loop: while true {
            switch paced.next(isWritable: true, allocator: allocator) {
            case .write(let chunk): sizes.append(chunk.readableBytes)
            case .scheduleTick:
                ticks += 1
                guard case .waitForTick = paced.next(isWritable: true, allocator: allocator) else { Issue.record("no wait"); return }
                paced.tickElapsed()
            case .finish(let ending):
                #expect(ending == .complete)
                break loop
            case .waitForWritable, .waitForTick:
                Issue.record("unexpected wait")
                return
            }
        }
        #expect(sizes == [10, 10, 5])
        #expect(ticks == 2)
    }
}
