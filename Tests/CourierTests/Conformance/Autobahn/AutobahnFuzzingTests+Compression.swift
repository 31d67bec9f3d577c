// Ported from the Autobahn testsuite's fuzzing server cases 12.x and 13.x
// (autobahntestsuite/autobahntestsuite/case/case12_x_x.py; https://github.com/crossbario/autobahn-testsuite),
// Copyright (c) Tavendo GmbH / Crossbar.io (typedef int GmbH), licensed under the Apache License,
// Version 2.0.

@testable import Courier
import CourierTesting
import Foundation
import Testing

/// 12.x and 13.x: `permessage-deflate` (RFC 7692). The server sends compressed messages one at a
/// time (each in one frame, or in frames of the case's auto-fragment size), each echoed compressed
/// before the next goes; it inflates the client's with the window it allowed the client and,
/// after `client_no_context_takeover`, a context reset for each message, so a client that keeps a
/// larger window or its context refers back where the server cannot follow.
///
/// Courier offers `permessage-deflate; client_max_window_bits` (no `server_*` parameter), which
/// is Autobahn's `PerMessageDeflateOffer(acceptMaxWindowBits = True)`: 13.x's server answers are
/// then the `client_*` ones (13.1 none, 13.2 `client_no_context_takeover`, 13.3 and 13.4
/// `client_max_window_bits` 9 and 15, 13.5 and 13.6 both; 13.7's answer to this offer is 13.5's).
/// RFC 7692 7.1.1.1 also lets a server answer `server_no_context_takeover` unasked, which
/// Courier accepts: those rows are 13.1's sizes with it.
extension AutobahnFuzzingTests {
    /// Autobahn's `MSG_SIZES` (payload size, auto-fragment size), by subcase.
    static let messageSizes: [Int: (size: Int, fragmentSize: Int)] = [
        1: (16, 0), 3: (256, 0), 5: (4096, 0), 9: (65536, 0), 11: (8192, 256), 14: (65536, 256),
    ]

    /// Text in the place of Autobahn's `data1.json` (a report's JSON): 160 KiB of records. Each
    /// names a random token of its own and its parent's, 24 records (some 4 KiB) back: a
    /// compressor finds those repeats only past a window of 512 bytes (9 bits), which the server's
    /// inflater then cannot follow into an earlier message.
    static let jsonData: [UInt8] = {
        var text = "[\n"
        var index = 0
        let behaviors = ["OK", "NON-STRICT", "FAILED", "INFORMATIONAL"]
        var random: UInt64 = 0x9E37_79B9_7F4A_7C15
        var tokens: [String] = []
        while text.utf8.count < 160 << 10 {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            tokens.append(String(random >> 1, radix: 36))
            let parent = index >= 24 ? tokens[index - 24] : "none"
            text += "  {\"case\": \(index), \"id\": \"\(index % 13).\(index % 7).\(index % 5)\", \"behavior\": \"\(behaviors[index % 4])\", "
            text += "\"token\": \"\(tokens[index])\", \"parent\": \"\(parent)\", "
            text += "\"duration\": \((index &* 37) % 1000), \"agent\": \"Courier/\(index % 3)\", \"remoteCloseCode\": \(1000 + index % 12)},\n"
            index += 1
        }
        return Array(text.utf8)
    }()

    /// Bytes in the place of Autobahn's `lena512.bmp`: 160 KiB of a gradient with noise.
    static let imageData: [UInt8] = {
        var state: UInt32 = 2_463_534_242
        return (0..<(160 << 10)).map { index in
            state ^= state << 13
            state ^= state >> 17
            state ^= state << 5
            return UInt8(truncatingIfNeeded: (index % 512 + index / 512) / 4 + Int(state & 0x7))
        }
    }()

    /// A 12.x/13.x case: `count` messages of `size` bytes taken in turn from `data` (wrapping
    /// round, as `sendOne` does), each echoed before the next goes.
    static func compressionRow(
        _ id: String, data: [UInt8], binary: Bool, subcase: Int, compression: Server.Compression, count: Int = 10
    ) -> Row {
        let (size, fragmentSize) = Self.messageSizes[subcase]!
        return Self.compressionRow(id, data: data, binary: binary, size: size, fragmentSize: fragmentSize, compression: compression, count: count)
    }

    static func compressionRow(
        _ id: String, data: [UInt8], binary: Bool, size: Int, fragmentSize: Int, compression: Server.Compression, count: Int
    ) -> Row {
        var messages: [[UInt8]] = []
        var pointer = 0
        for _ in 0..<count {
            let end = pointer + size
            messages.append(end <= data.count ? Array(data[pointer..<end]) : Array(data[pointer...] + data[..<(end - data.count)]))
            pointer = end % data.count
        }
        let expected = messages.map { Event.message($0, binary: binary) }
        let sent = messages
        return Row(id: id, expectation: ok(expected), compression: compression) { server in
            for (index, message) in sent.enumerated() {
                await server.sendCompressedMessage(message, binary: binary, fragmentSize: fragmentSize)
                guard await server.wait(until: { $0.events.count > index || $0.isConnectionClosed }),
                    server.events.count > index, server.events[index] == expected[index]
                else { return }
            }
        }
    }

    static let defaultDeflate = Server.Compression(response: "permessage-deflate")

    /// 12.1.x (text) and 12.2.x (binary) with the default offer and answer.
    static let compressedPayloadRows: [Row] = [(1, jsonData, false), (2, imageData, true)].flatMap { group, data, binary in
        Self.messageSizes.keys.sorted().map { subcase in
            compressionRow("12.\(group).\(subcase)", data: data, binary: binary, subcase: subcase, compression: defaultDeflate)
        }
    }

    @Test(arguments: Self.compressedPayloadRows)
    func compressedPayloads(_ row: Row) async throws { try await Self.run(row) }

    /// The server's answers of 13.x to Courier's offer, and the unasked `server_no_context_takeover`.
    static let deflateAnswers: [(String, Server.Compression)] = [
        ("13.1", defaultDeflate),
        ("13.2", Server.Compression(response: "permessage-deflate; client_no_context_takeover", clientNoContextTakeover: true)),
        ("13.3", Server.Compression(response: "permessage-deflate; client_max_window_bits=9", clientMaxWindowBits: 9)),
        ("13.4", Server.Compression(response: "permessage-deflate; client_max_window_bits=15", clientMaxWindowBits: 15)),
        ("13.5", Server.Compression(
            response: "permessage-deflate; client_no_context_takeover; client_max_window_bits=9", clientNoContextTakeover: true, clientMaxWindowBits: 9)),
        ("13.6", Server.Compression(
            response: "permessage-deflate; client_no_context_takeover; client_max_window_bits=15", clientNoContextTakeover: true, clientMaxWindowBits: 15)),
        ("13.7", Server.Compression(
            response: "permessage-deflate; client_no_context_takeover; client_max_window_bits=9", clientNoContextTakeover: true, clientMaxWindowBits: 9)),
    ]

    static let compressionParameterRows: [Row] =
        Self.deflateAnswers.flatMap { group, compression in
            [1, 5, 9, 11].map { subcase in
                compressionRow("\(group).\(subcase)", data: jsonData, binary: false, subcase: subcase, compression: compression)
            }
        }
        + [1, 5, 9, 11].map { subcase in
            compressionRow(
                "13.1.\(subcase) with server_no_context_takeover", data: jsonData, binary: false, subcase: subcase,
                compression: Server.Compression(response: "permessage-deflate; server_no_context_takeover", serverNoContextTakeover: true))
        }

    @Test(arguments: Self.compressionParameterRows)
    func compressionParameters(_ row: Row) async throws { try await Self.run(row) }

    /// Not Autobahn's (13.x asks for 9 or 15 bits): a server that allows the client a window of
    /// 8 bits (256 bytes, RFC 7692 7.1.2.2) and inflates with one. The same 300 random bytes go
    /// twice: a compressor that reached further back than 256 bytes would send the second as a
    /// reference 300 bytes back into the first, which the server cannot follow. zlib has no raw
    /// 8-bit window; Courier compresses with 9 bits, whose matches zlib keeps within 250 bytes
    /// (its window less 262 of look-ahead), so the server follows every one.
    @Test func clientWindowOfEightBits() async throws {
        var random: UInt64 = 0x2545_F491_4F6C_DD1D
        let data: [UInt8] = (0..<300).map { _ in
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: random >> 33)
        }
        let compression = Server.Compression(response: "permessage-deflate; client_max_window_bits=8", clientMaxWindowBits: 8)
        try await Self.run(
            Self.compressionRow("client_max_window_bits=8", data: data, binary: true, size: 300, fragmentSize: 0, compression: compression, count: 2))
    }

    // MARK: The maximum message size under compression

    /// Not Autobahn's: the client's maximum message size for the rows below.
    static let compressedMaximum = 100_000

    /// `count` random bytes, the same for the same `seed`.
    static func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededGenerator(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    /// Not Autobahn's: random bytes of exactly the maximum message size, which grow when deflated
    /// (zlib's stored blocks), received compressed in one frame or in frames of 16 KiB, then
    /// echoed compressed to the server, which inflates them. Each closed with 1009 on its way in:
    /// the frame and the message were held to the maximum as compressed, not as inflated.
    static let maximumSizeRows: [Row] = [0, 16 << 10].map { fragmentSize -> Row in
        var row = compressionRow(
            "random bytes of the maximum size, \(fragmentSize == 0 ? "one frame" : "frames of 16 KiB")",
            data: randomBytes(2 * compressedMaximum, seed: 1_009), binary: true, size: compressedMaximum, fragmentSize: fragmentSize,
            compression: defaultDeflate, count: 2)
        row.maximumMessageSize = compressedMaximum
        return row
    }

    @Test(arguments: Self.maximumSizeRows)
    func incompressibleMessagesOfTheMaximumSize(_ row: Row) async throws { try await Self.run(row) }

    /// Not Autobahn's: what a peer cannot make Courier hold. Random bytes of twice the maximum
    /// (more compressed than a message of the maximum takes) close with 1009 before anything is
    /// inflated, in one frame (the frame decoder's bound) or in frames of 16 KiB (the message's);
    /// 1.6 MB of zeros, a bomb of a few KiB compressed, closes with 1009 once inflated past the
    /// maximum.
    static let tooBigRows: [Row] = {
        let random = randomBytes(2 * compressedMaximum, seed: 1_010)
        var rows = [0, 16 << 10].map { fragmentSize -> Row in
            Row(
                id: "random bytes of twice the maximum, \(fragmentSize == 0 ? "one frame" : "frames of 16 KiB")", expectation: ok([], failure(1009)),
                compression: defaultDeflate, maximumMessageSize: compressedMaximum
            ) { server in
                await server.sendCompressedMessage(random, binary: true, fragmentSize: fragmentSize)
            }
        }
        rows.append(
            Row(id: "a deflate bomb", expectation: ok([], failure(1009)), compression: defaultDeflate, maximumMessageSize: compressedMaximum) { server in
                await server.sendCompressedMessage([UInt8](repeating: 0, count: 16 * compressedMaximum), binary: true)
            })
        return rows
    }()

    @Test(arguments: Self.tooBigRows)
    func compressedMessagesOverTheMaximum(_ row: Row) async throws { try await Self.run(row) }
}
