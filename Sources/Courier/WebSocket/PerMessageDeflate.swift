import CCourierZlib
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

    static func parse(_ values: [String]) -> Answer {
        let extensions = values.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !extensions.isEmpty else { return .none }
        guard extensions.count == 1 else { return .refused("the server chose several extensions: \(extensions.joined(separator: ", "))") }
        var parts = extensions[0].split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.removeFirst().lowercased() == "permessage-deflate" else {
            return .refused("the server chose the extension \(extensions[0]), which was not offered")
        }
        var parameters = PerMessageDeflateParameters()
        var seen = Set<String>()
        for part in parts {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let name = pair[0].lowercased()
            let value = pair.count > 1 ? pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) : nil
            guard seen.insert(name).inserted else { return .refused("permessage-deflate's \(name) given twice") }
            func bits() -> Int? { value.flatMap { Int($0) }.flatMap { (8...15).contains($0) ? $0 : nil } }
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

/// A message compressor and decompressor for one connection (RFC 7692, 7.2): raw deflate, each
/// message flushed to a byte boundary with its last four bytes (`00 00 FF FF`) left off. Not
/// Sendable: it lives in its connection's handler, on the loop.
final class PerMessageDeflate {
    private var deflater: OpaquePointer?
    private var inflater: OpaquePointer?
    let parameters: PerMessageDeflateParameters

    init(_ parameters: PerMessageDeflateParameters) {
        self.parameters = parameters
    }

    deinit {
        if let deflater { courier_deflater_free(deflater) }
        if let inflater { courier_inflater_free(inflater) }
    }

    private static let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    /// A message's payload, compressed; nil when zlib failed.
    func compress(_ payload: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer? {
        if self.deflater == nil {
            // zlib's raw deflate takes no 8-bit window: 9 is what it would use anyway.
            self.deflater = courier_deflater_make(Int32(-max(9, self.parameters.clientMaxWindowBits)))
        }
        guard let deflater = self.deflater else { return nil }
        var output = allocator.buffer(capacity: payload.readableBytes / 2 + 64)
        let input = Array(payload.readableBytesView)
        var offset = 0
        while true {
            if output.writableBytes < 64 { output.reserveCapacity(minimumWritableBytes: output.capacity) }
            let capacity = output.writableBytes
            var consumed = 0
            var produced = 0
            let status = input.withUnsafeBufferPointer { bytes in
                output.withUnsafeMutableWritableBytes { out in
                    courier_deflater_sync_flush(
                        deflater, bytes.baseAddress.map { $0 + offset }, input.count - offset, &consumed,
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), capacity, &produced)
                }
            }
            guard status >= 0 else { return nil }
            offset += consumed
            output.moveWriterIndex(forwardBy: produced)
            if offset == input.count, produced < capacity { break }
        }
        if self.parameters.clientNoContextTakeover {
            courier_deflater_free(deflater)
            self.deflater = nil
        }
        // The flush's empty block ends the output; the receiver adds it back.
        if output.readableBytes >= 4, Array(output.readableBytesView.suffix(4)) == Self.tail {
            output.moveWriterIndex(to: output.writerIndex - 4)
        }
        return output
    }

    enum DecompressionFailure: Error, Equatable {
        case tooBig
        case invalid
    }

    /// A message's payload, decompressed, at most `limit` bytes.
    func decompress(_ payload: ByteBuffer, limit: Int, allocator: ByteBufferAllocator) -> Result<ByteBuffer, DecompressionFailure> {
        if self.inflater == nil { self.inflater = courier_raw_inflater_make(15) }
        guard let inflater = self.inflater else { return .failure(.invalid) }
        let input = Array(payload.readableBytesView) + Self.tail
        var output = allocator.buffer(capacity: min(limit, max(256, payload.readableBytes * 4)) + 1)
        var offset = 0
        while true {
            if output.writableBytes < 256 { output.reserveCapacity(minimumWritableBytes: max(256, output.capacity)) }
            let capacity = output.writableBytes
            var consumed = 0
            var produced = 0
            let status = input.withUnsafeBufferPointer { bytes in
                output.withUnsafeMutableWritableBytes { out in
                    courier_inflater_run(
                        inflater, bytes.baseAddress! + offset, input.count - offset, &consumed,
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), capacity, &produced)
                }
            }
            // A stream the server ended (BFINAL) is not what RFC 7692 sends; zlib errors are invalid data.
            guard status == 0 else { return .failure(.invalid) }
            offset += consumed
            output.moveWriterIndex(forwardBy: produced)
            if output.readableBytes > limit { return .failure(.tooBig) }
            if offset == input.count, produced < capacity { break }
            if consumed == 0, produced == 0 { return .failure(.invalid) }
        }
        if self.parameters.serverNoContextTakeover {
            courier_inflater_free(inflater)
            self.inflater = nil
        }
        return .success(output)
    }
}
