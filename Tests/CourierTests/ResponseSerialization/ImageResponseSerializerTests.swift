@testable import Courier
import Foundation
import HTTPTypes
import Testing

/// Minimal valid headers of each format, built byte by byte.
enum ImageFixture {
    static func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    static func le32(_ v: Int) -> [UInt8] { le16(v & 0xFFFF) + le16(v >> 16 & 0xFFFF) }

    static func png(_ w: Int, _ h: Int) -> [UInt8] {
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be32(13) + Array("IHDR".utf8) + be32(w) + be32(h)
            + [8, 6, 0, 0, 0] + [0, 0, 0, 0]
    }
    static func gif(_ w: Int, _ h: Int) -> [UInt8] { Array("GIF89a".utf8) + le16(w) + le16(h) + [0, 0, 0] }
    static func jpeg(_ w: Int, _ h: Int) -> [UInt8] {
        // SOI, APP0 (JFIF, 16 bytes), a fill byte, SOF0.
        [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF\u{0}".utf8) + [1, 1, 0, 0, 1, 0, 1, 0, 0]
            + [0xFF, 0xFF, 0xC0, 0x00, 0x11, 0x08] + [UInt8(h >> 8), UInt8(h & 0xFF), UInt8(w >> 8), UInt8(w & 0xFF)]
            + [3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]
    }
    static func bmp(_ w: Int, _ h: Int) -> [UInt8] {
        Array("BM".utf8) + le32(0) + le32(0) + le32(54) + le32(40) + le32(w) + le32(h) + le16(1) + le16(24) + Array(repeating: 0, count: 24)
    }
    static func ico(_ sizes: [Int]) -> [UInt8] {
        var bytes: [UInt8] = [0, 0, 1, 0] + le16(sizes.count)
        for s in sizes { bytes += [UInt8(s & 0xFF), UInt8(s & 0xFF), 0, 0] + le16(1) + le16(32) + le32(0) + le32(0) }
        return bytes
    }
    static func riff(_ chunk: String, _ payload: [UInt8]) -> [UInt8] {
        Array("RIFF".utf8) + le32(payload.count + 12) + Array("WEBP".utf8) + Array(chunk.utf8) + le32(payload.count) + payload
    }
    static func webpLossy(_ w: Int, _ h: Int) -> [UInt8] { riff("VP8 ", [0, 0, 0, 0x9D, 0x01, 0x2A] + le16(w) + le16(h) + [0, 0]) }
    static func webpLossless(_ w: Int, _ h: Int) -> [UInt8] {
        let bits = (w - 1) | (h - 1) << 14
        return riff("VP8L", [0x2F] + le32(bits))
    }
    static func webpExtended(_ w: Int, _ h: Int) -> [UInt8] {
        riff("VP8X", [0, 0, 0, 0] + Array(le32(w - 1).prefix(3)) + Array(le32(h - 1).prefix(3)))
    }
    static func tiff(_ w: Int, _ h: Int, bigEndian: Bool) -> [UInt8] {
        func u16(_ v: Int) -> [UInt8] { bigEndian ? [UInt8(v >> 8), UInt8(v & 0xFF)] : le16(v) }
        func u32(_ v: Int) -> [UInt8] { bigEndian ? be32(v) : le32(v) }
        let header: [UInt8] = bigEndian ? [0x4D, 0x4D, 0x00, 0x2A] : [0x49, 0x49, 0x2A, 0x00]
        // Width as SHORT (value left-justified), height as LONG.
        return header + u32(8) + u16(3) + u16(254) + u16(4) + u32(1) + u32(0) + u16(256) + u16(3) + u32(1) + u16(w) + [0, 0]
            + u16(257) + u16(4) + u32(1) + u32(h) + u32(0)
    }

    static let all: [(String, [UInt8], ImageFormat, Int, Int)] = [
        ("image/png", png(640, 480), .png, 640, 480),
        ("image/gif", gif(17, 3), .gif, 17, 3),
        ("image/jpeg", jpeg(1920, 1080), .jpeg, 1920, 1080),
        ("image/bmp", bmp(32, -16), .bmp, 32, 16),
        ("image/x-icon", ico([16, 0, 48]), .ico, 256, 256),
        ("image/webp", webpLossy(300, 200), .webp, 300, 200),
        ("image/webp", webpLossless(4096, 1), .webp, 4096, 1),
        ("image/webp", webpExtended(70_000, 3), .webp, 70_000, 3),
        ("image/tiff", tiff(123, 456, bigEndian: false), .tiff, 123, 456),
        ("image/tiff", tiff(789, 65_536, bigEndian: true), .tiff, 789, 65_536),
    ]
}

@Suite("ImageResponseSerializer")
struct ImageResponseSerializerTests {
    @Test func readsFormatAndPixelSizeOfEveryFormat() throws {
        for (type, bytes, format, width, height) in ImageFixture.all {
            let body = Data(bytes)
            let image = try #require(try ImageResponseSerializer().responseObject(for: Fixture.response(200, type), data: body))
            #expect(image.format == format, "\(type)")
            #expect(image.pixelWidth == width, "\(format)")
            #expect(image.pixelHeight == height, "\(format)")
            #expect(image.data == body)
            #expect(image.scale == 1)
        }
    }

    @Test func formatComesFromBytesNotHeader() throws {
        let image = try ImageResponseSerializer().responseObject(for: Fixture.response(200, "image/jpeg"), data: Data(ImageFixture.png(2, 2)))
        #expect(image?.format == .png)
    }

    @Test func imageScale() throws {
        var serializer = ImageResponseSerializer()
        serializer.imageScale = 2
        let image = try #require(try serializer.responseObject(for: Fixture.response(200, "image/png"), data: Data(ImageFixture.png(200, 100))))
        #expect(image.scale == 2 && image.width == 100 && image.height == 50)
        serializer.imageScale = 0
        #expect(try serializer.responseObject(for: Fixture.response(200, "image/png"), data: Data(ImageFixture.png(2, 2)))?.scale == 1)
    }

    @Test(arguments: [
        "image/tiff", "image/jpeg", "image/gif", "image/png", "image/ico", "image/x-icon", "image/bmp", "image/x-bmp",
        "image/x-xbitmap", "image/x-win-bitmap", "image/webp", "image/vnd.microsoft.icon", "IMAGE/PNG; q=1",
    ])
    func acceptsAFNetworkingImageTypes(_ type: String) throws {
        #expect(try ImageResponseSerializer().responseObject(for: Fixture.response(200, type), data: Data(ImageFixture.gif(1, 1))) != nil)
    }

    @Test func refusesOtherTypes() {
        #expect { try ImageResponseSerializer().responseObject(for: Fixture.response(200, "image/svg+xml"), data: Data(ImageFixture.gif(1, 1))) } throws: {
            ($0 as? CourierError)?.code == .unacceptableContentType
        }
    }

    /// AFNetworking's `AFImageResponseSerializer` decodes the body under a refused status (not
    /// under a refused content type): the image comes beside the status error.
    @Test func badStatusStillParsesBodyBesideError() throws {
        let image = try #require(try RefusedStatus.objectBesideError(ImageResponseSerializer(), Fixture.response(404, "image/png"), Data(ImageFixture.png(48, 32))))
        #expect(image.format == .png && image.pixelWidth == 48 && image.pixelHeight == 32)
    }

    /// A body that is not an image under a refused status: the status error, with the
    /// serialization error under it.
    @Test func badStatusAndNotAnImageChainTheSerializationError() {
        RefusedStatus.parseErrorUnderStatus(ImageResponseSerializer(), Fixture.response(410, "image/png"), Fixture.data("<html>gone</html>"))
    }

    /// A refused content type under a refused status is not decoded.
    @Test func badStatusAndBadContentTypeDoNotParse() {
        RefusedStatus.notParsedWhenTypeRefused(ImageResponseSerializer(), Fixture.response(500, "text/html"), Data(ImageFixture.gif(1, 1)))
    }

    @Test func truncatedHeadersAreTypedErrorsWithData() {
        for (type, bytes, format, _, _) in ImageFixture.all {
            // Every prefix shorter than the bytes the size is read from fails cleanly.
            for length in 1..<bytes.count {
                let body = Data(bytes.prefix(length))
                do {
                    let image = try ImageResponseSerializer().responseObject(for: Fixture.response(200, type), data: body)
                    // Some prefixes are complete headers already (trailing bytes unused): then the size must be right.
                    #expect(image?.format == format)
                } catch {
                    #expect(error.code == .responseSerializationFailed)
                    #expect(error.data == body)
                }
            }
        }
        // The smallest truncations of PNG and JPEG named in the issue.
        for body in [Data(ImageFixture.png(1, 1).prefix(20)), Data(ImageFixture.jpeg(1, 1).prefix(25)), Data([0xFF, 0xD8, 0xFF])] {
            #expect { try ImageResponseSerializer().responseObject(for: Fixture.response(200, "image/png"), data: body) } throws: { error in
                (error as? CourierError)?.message.contains("truncated") == true
            }
        }
    }

    @Test func notAnImage() {
        for body in [Fixture.data("<html>"), Data([0, 0, 0, 0]), Data([0x89, 0x50])] {
            #expect { try ImageResponseSerializer().responseObject(for: Fixture.response(200, "image/png"), data: body) } throws: { error in
                (error as? CourierError)?.code == .responseSerializationFailed && (error as? CourierError)?.data == body
            }
        }
    }

    @Test func zeroSizesAndBadStructuresAreRejected() {
        let bad: [[UInt8]] = [
            ImageFixture.png(0, 10), ImageFixture.gif(0, 0), ImageFixture.ico([]),
            Array(ImageFixture.png(1, 1).prefix(12)) + Array("IDAT".utf8) + Array(repeating: 0, count: 12),
            [0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02],  // scan before frame
            [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x00, 0xFF, 0xC0],  // segment length < 2
            ImageFixture.riff("VP8 ", [0, 0, 0, 0, 0, 0, 1, 0, 1, 0]),  // no start code
            ImageFixture.riff("ABCD", [0, 0, 0, 0]),
            [0x49, 0x49, 0x2A, 0x00] + ImageFixture.le32(0x7FFF_FFFF),  // IFD far past the end
        ]
        for bytes in bad {
            #expect(ImageHeader.parse(Data(bytes)) == nil, "\(bytes.prefix(8))")
        }
    }

    /// Sizes no valid file has: a BMP whose width is not positive, or whose height is `Int32.min`
    /// (its magnitude, 2³¹, traps converting to a 32-bit `Int` on watchOS; a negative width was read
    /// as its magnitude), and a PNG side of 2³¹ or more (the specification's bound; accepted on
    /// 64-bit platforms only).
    @Test func sizesPastTheFormatsBoundsAreRejected() {
        func bmp(width: UInt32, height: UInt32) -> [UInt8] {
            Array("BM".utf8) + ImageFixture.le32(0) + ImageFixture.le32(0) + ImageFixture.le32(54) + ImageFixture.le32(40)
                + ImageFixture.le32(Int(width)) + ImageFixture.le32(Int(height)) + ImageFixture.le16(1) + ImageFixture.le16(24)
        }
        for bytes in [
            bmp(width: 0x8000_0000, height: 1), bmp(width: UInt32(bitPattern: -5), height: 1), bmp(width: 1, height: 0x8000_0000),
            ImageFixture.png(0x8000_0000, 1), ImageFixture.png(1, 0xFFFF_FFFF),
        ] {
            #expect(ImageHeader.parse(Data(bytes)) == nil, "\(bytes)")
        }
        #expect(ImageHeader.parse(Data(bmp(width: 3, height: UInt32(bitPattern: -7))))?.pixelHeight == 7)
        #expect(ImageHeader.parse(Data(ImageFixture.png(0x7FFF_FFFF, 1)))?.pixelWidth == 0x7FFF_FFFF)
    }

    /// Files decoders show that the header reader refused: an OS/2 2.x bitmap (a 16- or 64-byte
    /// header, 32-bit sizes where Windows keeps them), a JPEG with stray bytes before a marker
    /// (libjpeg skips them), and an icon whose entry says 0 (256) over a PNG of 512 pixels.
    @Test func filesDecodersShowAreRead() throws {
        for headerSize in [16, 64] {
            let os2 = Array("BM".utf8) + ImageFixture.le32(0) + ImageFixture.le32(0) + ImageFixture.le32(14 + headerSize)
                + ImageFixture.le32(headerSize) + ImageFixture.le32(300) + ImageFixture.le32(200) + ImageFixture.le16(1) + ImageFixture.le16(24)
            let header = try #require(ImageHeader.parse(Data(os2 + Array(repeating: 0, count: headerSize - 12))), "\(headerSize)")
            #expect(header.format == .bmp && header.pixelWidth == 300 && header.pixelHeight == 200)
        }
        var jpeg = ImageFixture.jpeg(640, 480)
        jpeg.insert(contentsOf: [0x00, 0x12, 0x34], at: 20)  // after APP0, before the fill byte and SOF0
        #expect(ImageHeader.parse(Data(jpeg)).map { [$0.pixelWidth, $0.pixelHeight] } == [640, 480])
        var icon: [UInt8] = [0, 0, 1, 0] + ImageFixture.le16(2)
        icon += [16, 16, 0, 0] + ImageFixture.le16(1) + ImageFixture.le16(32) + ImageFixture.le32(0) + ImageFixture.le32(0)
        icon += [0, 0, 0, 0] + ImageFixture.le16(1) + ImageFixture.le16(32) + ImageFixture.le32(33) + ImageFixture.le32(38)
        icon += ImageFixture.png(512, 512)
        #expect(ImageHeader.parse(Data(icon)).map { [$0.pixelWidth, $0.pixelHeight] } == [512, 512])
    }

    /// More files decoders show: a JPEG with a stray `FF 00` pair before a marker (libjpeg discards
    /// it; its "length" sent the walk past the frame header), and Apple's "iPhone-optimized" PNG,
    /// whose `CgBI` chunk comes before IHDR (ImageIO decodes it). And an icon whose embedded PNG
    /// is 65,536 pixels a side: its area is compared in 64 bits (it overflowed, a trap, where `Int`
    /// is 32 bits; on this 64-bit machine the test shows only that such an icon reads).
    @Test func strayPairsIPhonePNGsAndHugeIconEntriesAreRead() throws {
        var jpeg = ImageFixture.jpeg(640, 480)
        jpeg.insert(contentsOf: [0xFF, 0x00], at: 20)
        #expect(ImageHeader.parse(Data(jpeg)).map { [$0.pixelWidth, $0.pixelHeight] } == [640, 480])
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let cgbi = signature + ImageFixture.be32(4) + Array("CgBI".utf8) + [0x50, 0, 0x20, 6] + [0, 0, 0, 0]
            + Array(ImageFixture.png(57, 58).dropFirst(8))
        let header = try #require(ImageHeader.parse(Data(cgbi)))
        #expect(header.format == .png && header.pixelWidth == 57 && header.pixelHeight == 58)
        var icon: [UInt8] = [0, 0, 1, 0] + ImageFixture.le16(2)
        icon += [16, 16, 0, 0] + ImageFixture.le16(1) + ImageFixture.le16(32) + ImageFixture.le32(0) + ImageFixture.le32(0)
        icon += [0, 0, 0, 0] + ImageFixture.le16(1) + ImageFixture.le16(32) + ImageFixture.le32(33) + ImageFixture.le32(38)
        icon += ImageFixture.png(65_536, 65_536)
        #expect(ImageHeader.parse(Data(icon)).map { [$0.pixelWidth, $0.pixelHeight] } == [65_536, 65_536])
    }

    @Test func emptyBodyGivesNothing() throws {
        #expect(try ImageResponseSerializer().responseObject(for: Fixture.response(200, "image/png"), data: Data()) == nil)
        #expect(try ImageResponseSerializer().responseObject(for: Fixture.response(204), data: nil) == nil)
    }

    @Test func headerParsingOfDataSlices() {
        // A slice keeps the indices of its parent: parsing must not assume they start at 0.
        let padded = Data([1, 2, 3] + ImageFixture.gif(5, 6))
        #expect(ImageHeader.parse(padded.dropFirst(3))?.pixelWidth == 5)
    }

    /// AFNetworking inflates images of a megapixel at most; a larger one is decoded when drawn,
    /// so that a small file naming a huge size cannot make the serializer allocate its bitmap
    /// (inflating is done with UIKit only; the rule is checked everywhere).
    @Test func onlyImagesOfAMegapixelAtMostAreInflated() throws {
        let header = { (width: Int, height: Int) in ImageHeader(format: .png, pixelWidth: width, pixelHeight: height) }
        #expect(ResponseImage.isSmallEnoughToInflate(header(1024, 1024)))
        #expect(ResponseImage.isSmallEnoughToInflate(header(4000, 200)))
        #expect(!ResponseImage.isSmallEnoughToInflate(header(1025, 1024)))
        #expect(!ResponseImage.isSmallEnoughToInflate(header(30000, 30000)))
        #expect(!ResponseImage.isSmallEnoughToInflate(header(Int.max, 2)), "no overflow")
        let huge = try #require(ImageHeader.parse(Data(ImageFixture.png(30000, 30000))))
        #expect(!ResponseImage.isSmallEnoughToInflate(huge))
    }
}
