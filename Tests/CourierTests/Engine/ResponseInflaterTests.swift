@testable import Courier
import CompressNIO
import NIOCore
import NIOHTTP1
import Testing

/// ``ResponseInflater``: a response body decompressed as it arrives, in any slicing, with its
/// guards (the ratio past the free size, trailing bytes, a body that ends early, data that does
/// not inflate).
@Suite("Engine: ResponseInflater")
struct ResponseInflaterTests {
    static let text = Array((0..<40_000).map { UInt8(truncatingIfNeeded: ($0 * 7919) % 251 < 180 ? 97 + $0 % 26 : $0 % 256) })

    static func compressed(_ bytes: [UInt8], _ algorithm: ZlibAlgorithm) throws -> [UInt8] {
        var input = ByteBuffer(bytes: bytes)
        return Array(try input.compress(with: algorithm, configuration: ZlibConfiguration()).readableBytesView)
    }

    static func head(_ coding: String) -> HTTPResponseHead {
        HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Encoding": coding])
    }

    /// Feeds `body` in pieces of `sizes` (cycling), then finishes; returns what came out.
    static func run(_ inflater: ResponseInflater, _ body: [UInt8], sizes: [Int]) throws(ResponseDecompressionError) -> [UInt8] {
        var output: [UInt8] = []
        var offset = 0
        var index = 0
        while offset < body.count {
            let size = min(sizes[index % sizes.count], body.count - offset)
            try inflater.inflate(ByteBuffer(bytes: body[offset..<offset + size]), allocator: ByteBufferAllocator()) {
                output += $0.readableBytesView
            }
            offset += size
            index += 1
        }
        try inflater.finish(allocator: ByteBufferAllocator())
        return output
    }

    @Test("gzip and zlib framing, told by the first bytes whichever coding the head names, in any slicing (a first piece of one byte too)")
    func framings() throws {
        for algorithm in [ZlibAlgorithm.gzip, .zlib] {
            let body = try Self.compressed(Self.text, algorithm)
            for coding in ["gzip", "deflate", "GZIP"] {
                for sizes in [[body.count], [1, 1, 2, 3], [1, 4096], [7]] {
                    let inflater = try #require(ResponseInflater.make(head: Self.head(coding), ratio: 100))
                    #expect(try Self.run(inflater, body, sizes: sizes) == Self.text, "\(algorithm) as \(coding), pieces \(sizes)")
                }
            }
        }
    }

    /// Raw deflate (no zlib wrapper), as PHP's `gzdeflate` sends it under `deflate`: RFC 9110
    /// 8.4.1.2 names such servers, and browsers, curl, urllib3 and undici decode it. It failed as
    /// corrupt data.
    @Test func rawDeflateIsTakenWhateverTheCodingsName() throws {
        let body = try Self.compressed(Self.text, .deflate)
        #expect(!ResponseInflater.isZlibHeader(UInt16(body[0]) << 8 | UInt16(body[1])))
        for coding in ["deflate", "gzip"] {
            for sizes in [[body.count], [1, 1, 2, 3], [1, 4096]] {
                let inflater = try #require(ResponseInflater.make(head: Self.head(coding), ratio: 100))
                #expect(try Self.run(inflater, body, sizes: sizes) == Self.text, "raw deflate as \(coding), pieces \(sizes)")
            }
        }
        // zlib headers: the common window and level bytes.
        for header: UInt16 in [0x7801, 0x785E, 0x789C, 0x78DA, 0x5885, 0x6881] {
            #expect(ResponseInflater.isZlibHeader(header), "\(String(header, radix: 16))")
        }
    }

    /// A raw deflate body whose last bytes inflate past the piece zlib writes into: zlib takes
    /// those bytes whole (no trailer follows them, as gzip's and zlib's follow) and keeps their
    /// output for the next call. Nothing asked for it once the input was taken, and a valid body
    /// failed at its end as truncated (a zlib-level reproduction: 70 of these 256 lengths of
    /// zeros, given in one piece, kept output back).
    @Test func rawDeflateOutputHeldByZlibAfterTheLastInputIsDelivered() throws {
        for count in (1 << 14)..<((1 << 14) + 256) {
            let zeros = [UInt8](repeating: 0, count: count)
            let body = try Self.compressed(zeros, .deflate)
            let inflater = try #require(ResponseInflater.make(head: Self.head("deflate"), ratio: 100))
            #expect(try Self.run(inflater, body, sizes: [body.count]) == zeros, "\(count) zeros in \(body.count) bytes")
        }
    }

    /// Several gzip members one after the other are one gzip body (RFC 1952 2.2; PHP's
    /// `gzencode(a) . gzencode(b)`, appended log chunks): each is decoded, in any slicing, also
    /// when a member ends at a piece's end or a piece holds one byte of the next. Undici, urllib3
    /// and Go read them all; Courier failed with "bytes follow the end of the compressed stream".
    @Test func gzipMembersOneAfterTheOtherAreOneBody() throws {
        let first = Array(Self.text.prefix(10_000)), second = Array(Self.text.suffix(5_000)), third: [UInt8] = [1, 2, 3]
        let one = try Self.compressed(first, .gzip), two = try Self.compressed(second, .gzip), three = try Self.compressed(third, .gzip)
        let body = one + two + three
        for sizes in [[body.count], [one.count, two.count, three.count], [one.count + 1, 1, 4096], [1, 1, 2, 3], [7]] {
            let inflater = try #require(ResponseInflater.make(head: Self.head("gzip"), ratio: 100))
            #expect(try Self.run(inflater, body, sizes: sizes) == first + second + third, "pieces \(sizes)")
        }
        // What follows a member and is no member is still trailing data; a cut member is truncated.
        for (input, sizes, reason) in [
            (one + [0x1f], [one.count, 1], ResponseDecompressionError.Reason.trailingData),
            (one + [0x1f, 0x8c, 0, 0], [one.count + 4], .trailingData),
            (one + Array(two.prefix(20)), [one.count, 20], .truncated),
        ] {
            let inflater = try #require(ResponseInflater.make(head: Self.head("gzip"), ratio: 100))
            #expect(throws: ResponseDecompressionError(reason)) { _ = try Self.run(inflater, input, sizes: sizes) }
        }
    }

    @Test("Other codings, and none, are left alone")
    func otherCodings() {
        #expect(ResponseInflater.make(head: Self.head("br"), ratio: 100) == nil)
        #expect(ResponseInflater.make(head: HTTPResponseHead(version: .http1_1, status: .ok), ratio: 100) == nil)
    }

    /// The codings are listed as they were applied (RFC 9110 8.4): the last is outside. Before,
    /// the first was read, and `identity, gzip` came to the caller still compressed while `gzip,
    /// br` was fed to zlib (and failed as corrupt).
    @Test("The codings applied are read, wherever identity stands; one the engine does not decode leaves the body alone")
    func codingOrder() {
        for value in ["identity, gzip", "gzip, identity", "identity,deflate", "identity, x-gzip", "gzip, gzip", "deflate, identity, gzip"] {
            #expect(ResponseInflater.make(head: Self.head(value), ratio: 100) != nil, "\(value)")
        }
        for value in ["gzip, br", "br, gzip", "identity", "identity, br", "gzip, gzip, br"] {
            #expect(ResponseInflater.make(head: Self.head(value), ratio: 100) == nil, "\(value)")
        }
    }

    /// Stacked codings (`gzip, gzip`, `deflate, gzip`, or a field each) are undone in reverse, as
    /// curl and browsers undo them, in any slicing. Courier handed them over still coded.
    @Test func stackedCodingsAreUndoneInReverse() throws {
        let zlib = try Self.compressed(Self.text, .zlib)
        let cases: [(HTTPResponseHead, [UInt8])] = [
            (Self.head("gzip, gzip"), try Self.compressed(try Self.compressed(Self.text, .gzip), .gzip)),
            (Self.head("deflate, gzip"), try Self.compressed(zlib, .gzip)),
            (HTTPResponseHead(version: .http1_1, status: .ok, headers: HTTPHeaders([("Content-Encoding", "deflate"), ("Content-Encoding", "gzip")])), try Self.compressed(zlib, .gzip)),
            (Self.head("gzip, deflate, gzip, deflate, gzip"), try (0..<5).reduce(Self.text) { body, layer in try Self.compressed(body, layer % 2 == 0 ? .gzip : .zlib) }),
        ]
        for (head, body) in cases {
            for sizes in [[body.count], [1, 1, 2, 3], [1, 4096], [7]] {
                let inflater = try #require(ResponseInflater.make(head: head, ratio: 100))
                #expect(try Self.run(inflater, body, sizes: sizes) == Self.text, "\(head.headers["Content-Encoding"]), pieces \(sizes)")
            }
        }
        // The ratio bounds the decoded body, whatever layer it grows in.
        let bomb = try Self.compressed(try Self.compressed([UInt8](repeating: 0, count: 1 << 20), .gzip), .gzip)
        let inflater = try #require(ResponseInflater.make(head: Self.head("gzip, gzip"), ratio: 100, freeSize: 0))
        #expect(throws: ResponseDecompressionError(.limit(ratio: 100))) { _ = try Self.run(inflater, bomb, sizes: [bomb.count]) }
        // An inner layer that does not inflate is corrupt, one cut short truncated.
        let plainInside = try #require(ResponseInflater.make(head: Self.head("gzip, gzip"), ratio: 100))
        #expect(throws: ResponseDecompressionError.self) { _ = try Self.run(plainInside, try Self.compressed(Self.text, .gzip), sizes: [100]) }
    }

    /// More than five codings (curl's `MAX_ENCODE_STACK`) fail as curl fails them
    /// (`CURLE_BAD_CONTENT_ENCODING`), at the body's first byte: a head with no body passes.
    @Test func moreThanFiveCodingsAreRefused() throws {
        let six = Array(repeating: "gzip", count: 6).joined(separator: ", ")
        let body = try (0..<6).reduce(Self.text) { body, _ in try Self.compressed(body, .gzip) }
        let inflater = try #require(ResponseInflater.make(head: Self.head(six), ratio: 100))
        #expect(throws: ResponseDecompressionError(.tooManyCodings(6))) { _ = try Self.run(inflater, body, sizes: [body.count]) }
        let empty = try #require(ResponseInflater.make(head: Self.head(six), ratio: 100))
        #expect(try Self.run(empty, [], sizes: [1]) == [])
        // `identity` is no layer.
        let five = try #require(ResponseInflater.make(head: Self.head("identity, " + Array(repeating: "gzip", count: 5).joined(separator: ", ")), ratio: 100))
        let fiveBody = try (0..<5).reduce(Self.text) { body, _ in try Self.compressed(body, .gzip) }
        #expect(try Self.run(five, fiveBody, sizes: [fiveBody.count]) == Self.text)
    }

    @Test("An empty body is left as it is")
    func emptyBody() throws {
        let inflater = try #require(ResponseInflater.make(head: Self.head("gzip"), ratio: 100))
        #expect(try Self.run(inflater, [], sizes: [1]) == [])
    }

    @Test("A body that grows past the ratio, ends early, has bytes after its end, or does not inflate fails with its reason")
    func guards() throws {
        let zeros = try Self.compressed([UInt8](repeating: 0, count: 1 << 20), .gzip)
        let body = try Self.compressed(Self.text, .gzip)
        let cases: [([UInt8], [Int], ResponseDecompressionError.Reason)] = [
            (zeros, [zeros.count], .limit(ratio: 100)),
            (zeros, [3], .limit(ratio: 100)),
            (Array(body.prefix(body.count - 4)), [100], .truncated),
            ([0x1f], [1], .truncated),
            (body + [1, 2, 3], [body.count + 3], .trailingData),
            (body + [1, 2, 3], [body.count, 3], .trailingData),
        ]
        for (input, sizes, reason) in cases {
            // No free size: the ratio is checked from the first byte.
            let inflater = try #require(ResponseInflater.make(head: Self.head("gzip"), ratio: 100, freeSize: 0))
            #expect(throws: ResponseDecompressionError(reason)) { _ = try Self.run(inflater, input, sizes: sizes) }
        }
        let corrupt = try #require(ResponseInflater.make(head: Self.head("gzip"), ratio: 100))
        let error = #expect(throws: ResponseDecompressionError.self) {
            _ = try Self.run(corrupt, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff], sizes: [20])
        }
        guard case .corrupt = error?.reason else {
            Issue.record("a block of a type deflate does not have is corrupt data, not \(String(describing: error))")
            return
        }
    }

    /// A body that compresses better than the ratio is decoded while its output stays within the
    /// free size (nginx sent a 1 MB JSON array of zeros at 227 to 1, and the default refused it),
    /// and refused once it grows past it; `.max` sets no limit at all.
    @Test("The ratio applies only past the free size")
    func freeSize() throws {
        let megabyte = [UInt8](repeating: 0, count: 1 << 20)
        let zeros = try Self.compressed(megabyte, .gzip)
        #expect(zeros.count * 100 < megabyte.count, "the body must compress better than the ratio")
        // The default free size (8 MiB) takes it, in any slicing.
        for sizes in [[zeros.count], [3], [1, 100]] {
            let inflater = try #require(ResponseInflater.make(head: Self.head("gzip"), ratio: 100))
            #expect(try Self.run(inflater, zeros, sizes: sizes) == megabyte, "\(sizes)")
        }
        // Output up to the free size passes; one byte more than it, past the ratio, does not.
        let exact = try #require(ResponseInflater.make(head: Self.head("gzip"), ratio: 100, freeSize: 1 << 20))
        #expect(try Self.run(exact, zeros, sizes: [zeros.count]) == megabyte)
        let short = try #require(ResponseInflater.make(head: Self.head("gzip"), ratio: 100, freeSize: (1 << 20) - 1))
        #expect(throws: ResponseDecompressionError(.limit(ratio: 100))) { _ = try Self.run(short, zeros, sizes: [zeros.count]) }
        // Past the free size, a body within the ratio passes.
        let within = try #require(ResponseInflater.make(head: Self.head("gzip"), ratio: 2000, freeSize: 0))
        #expect(try Self.run(within, zeros, sizes: [zeros.count]) == megabyte)
        let unlimited = try #require(ResponseInflater.make(head: Self.head("gzip"), ratio: .max, freeSize: 0))
        #expect(try Self.run(unlimited, zeros, sizes: [1, 100]) == megabyte)
    }

    /// Which `Content-Range` values name the whole coded representation, the one kind of `206`
    /// body that is decoded.
    @Test(arguments: [
        ("bytes 0-99/100", true), ("bytes  0-0/1", true), ("Bytes 0-99/100", true), (" bytes 0-99/100", true),
        ("bytes 0-99/101", false), ("bytes 0-19/5000", false), ("bytes 10-99/100", false), ("bytes 0-99/*", false),
        ("bytes */100", false), ("bytes 0-/100", false), ("items 0-99/100", false), ("bytes 00-99/100", true), ("bytes 0--1/0", false), ("bytes +0-99/100", false),
        ("bytes 0-99/100/1", false), ("", false),
    ])
    func whichRangesAreTheWholeCoding(_ value: String, _ whole: Bool) {
        #expect(ResponseInflater.rangeIsTheWholeCoding(value) == whole, "\(value)")
    }
}
