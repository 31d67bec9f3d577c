import CompressNIO
import Foundation
import NIOCore

/// What `permessage-deflate` (RFC 7692) the server agreed to.
struct PerMessageDeflateParameters: Equatable, Sendable {
    /// The client resets its compressor after each message.
    var clientNoContextTakeover = false
    /// The server resets its compressor after each message.
    var serverNoContextTakeover = false
    /// The client's window (the server's `client_max_window_bits`), 8 to 15.
    var clientMaxWindowBits = 15
    /// The server's window, 8 to 15.
    var serverMaxWindowBits = 15

    /// The offer Courier sends: any server window, and it may cap the client's.
    static let offer = "permessage-deflate; client_max_window_bits"

    /// The server's answer, one `Sec-WebSocket-Extensions` value: nil when it names no extension,
    /// the parameters when it accepted `permessage-deflate` as offered, or why it cannot be taken.
    enum Answer: Equatable {
        /// No extension.
        case none
        case accepted(PerMessageDeflateParameters)
        /// Why the answer cannot be taken.
        case refused(String)
    }

    /// Reads the server's `Sec-WebSocket-Extensions` values. Refused, as RFC 7692 7 has the
    /// client fail them: another extension, or several; a parameter Courier does not know, given
    /// twice, or with a value that is not one (a value is a token or a closed quoted string, RFC
    /// 6455 9.1; a window is 8 to 15 in decimal without leading zeroes, RFC 7692 7.1.2).
    static func parse(_ values: [String]) -> Answer {
        let extensions = values.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !extensions.isEmpty else { return .none }
        guard extensions.count == 1 else { return .refused("the server chose several extensions: \(extensions.joined(separator: ", "))") }
        let parts = extensions[0].split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        // `;` alone has no part at all (empty pieces are dropped): it trapped here, on the loop.
        guard parts.first?.equalsLowercased("permessage-deflate") == true else {
            return .refused("the server chose the extension \(extensions[0]), which was not offered")
        }
        var parameters = PerMessageDeflateParameters()
        var seen = Set<String>()
        for part in parts.dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            // A blank part between semicolons (`permessage-deflate; ;`), or `=` with no name, has
            // no parameter name (RFC 6455 9.1: a token); it trapped here too.
            guard !part.hasPrefix("="), let name = pair.first?.lowercasedASCII else {
                return .refused("permessage-deflate's parameter '\(part)', which names none")
            }
            // A token or a quoted string (RFC 6455 9.1), read as the string's value: a quote
            // that is not closed, or anything after the closing one, is no value.
            var value = pair.count > 1 ? pair[1] : nil
            if let raw = value, raw.hasPrefix("\"") {
                let bytes = Array(raw.utf8)
                let quoted = HTTPToken.quotedString(bytes, openingAt: 0)
                guard quoted.isClosed, quoted.end == bytes.count else { return .refused("permessage-deflate's \(part)") }
                value = quoted.value
            }
            guard seen.insert(name).inserted else { return .refused("permessage-deflate's \(name) given twice") }
            // A window is 8 to 15 in decimal without leading zeroes (RFC 7692 7.1.2): `Int`
            // would also read `08` and `+9`.
            func bits() -> Int? {
                guard let value, let first = value.utf8.first, first != UInt8(ascii: "0"),
                    value.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), let bits = Int(value)
                else { return nil }
                return (8...15).contains(bits) ? bits : nil
            }
            switch name {
            case "client_no_context_takeover" where value == nil: parameters.clientNoContextTakeover = true
            case "server_no_context_takeover" where value == nil: parameters.serverNoContextTakeover = true
            case "server_max_window_bits":
                guard let bits = bits() else { return .refused("permessage-deflate's \(part)") }
                parameters.serverMaxWindowBits = bits
            case "client_max_window_bits":
                guard let bits = bits() else { return .refused("permessage-deflate's \(part)") }
                parameters.clientMaxWindowBits = bits
            default:
                return .refused("permessage-deflate's parameter \(part), which Courier does not know")
            }
        }
        return .accepted(parameters)
    }
}

/// A message compressor and decompressor for one connection (RFC 7692, 7.2): raw deflate with
/// compress-nio's `ZlibCompressor` and `ZlibDecompressor`, each message flushed to a byte boundary
/// with its last four bytes (`00 00 FF FF`) left off. Not Sendable: it lives in its connection's
/// handler, on the loop.
final class PerMessageDeflate {
    private var compressor: ZlibCompressor?
    private var decompressor: ZlibDecompressor?
    let parameters: PerMessageDeflateParameters

    init(_ parameters: PerMessageDeflateParameters) {
        self.parameters = parameters
    }

    private static let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    /// A message's payload, compressed; nil when zlib failed.
    func compress(_ payload: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer? {
        do {
            // zlib's raw deflate takes no 8-bit window: 9 is what it would use anyway.
            let compressor =
                try self.compressor
                ?? ZlibCompressor(algorithm: .deflate, configuration: ZlibConfiguration(windowSize: Int32(max(9, self.parameters.clientMaxWindowBits))))
            self.compressor = compressor
            var input = payload
            var output = allocator.buffer(capacity: payload.readableBytes / 2 + 64)
            // Everything in, then the flush; zlib finishes a flush on a later call when the output
            // filled up, so it is done only once it left room.
            while true {
                if output.writableBytes < 64 { output.reserveCapacity(minimumWritableBytes: max(64, output.capacity)) }
                let before = (input.readableBytes, output.readableBytes)
                do {
                    try compressor.deflate(from: &input, to: &output, flush: .sync)
                } catch let error as CompressNIOError where error == .bufferOverflow {
                    // zlib had nothing left to do: the flush was complete.
                }
                if input.readableBytes == 0, output.writableBytes > 0 { break }
                if before == (input.readableBytes, output.readableBytes) {
                    // No progress: done if all went in, else zlib is stuck.
                    guard input.readableBytes == 0 else { throw CompressNIOError.internalError }
                    break
                }
            }
            if self.parameters.clientNoContextTakeover { try compressor.reset() }
            // The flush's empty block ends the output; the receiver adds it back.
            if output.readableBytesView.suffix(4).elementsEqual(Self.tail) {
                output.moveWriterIndex(to: output.writerIndex - 4)
            }
            // An empty message after others: zlib's flush had nothing new to write, and an empty
            // payload would make the receiver inflate the tail alone, which is no valid block
            // (Python websockets closed with 1002, tornado dropped the connection). RFC 7692
            // 7.2.3.6: an empty message is the one byte 0x00, an empty stored block without its
            // tail.
            if output.readableBytes == 0 { output.writeInteger(UInt8(0)) }
            return output
        } catch {
            self.compressor = nil
            return nil
        }
    }

    /// The most bytes a message of `size` bytes may take compressed, which bounds what a peer's
    /// compressed message may hold before it is inflated (frame and message alike): the
    /// maximum message size applies to the message as inflated, and data that does not compress
    /// grows a little (zlib's stored blocks, 5 bytes a block). (Bounded by the maximum itself, a
    /// message of random bytes of the maximum size closed with 1009.)
    ///
    /// The slack is zlib's conservative bound, for any of its settings: an eighth and a
    /// sixty-fourth more, plus a few bytes, which holds fixed-code blocks (`Z_FIXED`, 9-bit
    /// literals) and the short stored blocks of a low memory level (Python websockets suggests 4:
    /// blocks of 1 KiB). A bomb still fails once inflated past the maximum
    /// (``decompress(_:limit:allocator:)``). At most 2³² − 1, what a `ByteBuffer` holds.
    static func compressedBound(_ size: Int) -> Int {
        let size = min(max(0, size), Int(UInt32.max))
        return min(size + (size >> 3) + (size >> 6) + 64, Int(UInt32.max))
    }

    enum DecompressionFailure: Error, Equatable {
        case tooBig
        case invalid
    }

    /// How many bytes the output may grow by when it is full, holding `readable` of at most
    /// `limit`: it doubles, but never past one byte over the limit (which tells a message too big)
    /// nor past what a `ByteBuffer` holds (swift-nio stops the process on a capacity of 2³²).
    static func growth(capacity: Int, readable: Int, limit: Int) -> Int {
        let limit = min(limit, Int(UInt32.max) - 1)
        return max(1, min(max(256, capacity), limit + 1 - readable))
    }

    /// A message's payload, decompressed, at most `limit` bytes.
    ///
    /// A message may end its DEFLATE stream with a final block (RFC 7692 7.2.3.3): what follows
    /// it is only the flush's tail, and the next message starts a new stream.
    func decompress(_ payload: ByteBuffer, limit: Int, allocator: ByteBufferAllocator) -> Result<ByteBuffer, DecompressionFailure> {
        let decompressor: ZlibDecompressor
        do {
            decompressor = try self.decompressor ?? ZlibDecompressor(algorithm: .deflate, windowSize: 15)
        } catch {
            return .failure(.invalid)
        }
        self.decompressor = decompressor
        // An empty payload (some servers send one for an empty message) is an empty message:
        // inflating the tail alone would fail, and the context has nothing to learn from it.
        if payload.readableBytes == 0 { return .success(allocator.buffer(capacity: 0)) }
        var input = payload
        input.writeBytes(Self.tail)
        let limit = min(limit, Int(UInt32.max) - 1)
        var output = allocator.buffer(capacity: min(limit, max(256, payload.readableBytes * 4)) + 1)
        var streamEnded = false
        while true {
            if output.writableBytes < 256 {
                output.reserveCapacity(minimumWritableBytes: Self.growth(capacity: output.capacity, readable: output.readableBytes, limit: limit))
            }
            let before = (input.readableBytes, output.readableBytes)
            do {
                try decompressor.inflate(from: &input, to: &output)
                // A call that returns leaves input only when the stream ended (a final block):
                // what is left may only be the tail this function added, after zero bytes.
                if input.readableBytes > 0 {
                    guard input.readableBytesView.dropLast(Self.tail.count).allSatisfy({ $0 == 0 }) else { return self.failed(.invalid) }
                    streamEnded = true
                    input.moveReaderIndex(forwardBy: input.readableBytes)
                }
            } catch let error as CompressNIOError where error == .bufferOverflow || error == .inputBufferOverflow {
                // The output is full (it grows), or zlib wants more input than the message has.
            } catch {
                return self.failed(.invalid)
            }
            if output.readableBytes > limit { return self.failed(.tooBig) }
            if input.readableBytes == 0, output.writableBytes > 0 { break }
            if before == (input.readableBytes, output.readableBytes) { return self.failed(.invalid) }
        }
        if streamEnded || self.parameters.serverNoContextTakeover {
            do { try decompressor.reset() } catch { return self.failed(.invalid) }
        }
        return .success(output)
    }

    /// A failed decompression leaves the stream where zlib stopped: the next message starts a new one.
    private func failed(_ failure: DecompressionFailure) -> Result<ByteBuffer, DecompressionFailure> {
        self.decompressor = nil
        return .failure(failure)
    }
}
