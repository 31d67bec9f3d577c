import Foundation
import NIOFoundationCompat
import NIOCore
import NIOHTTP1

extension HTTPBinRoutes {
    /// A seconds value from a path or query, as a `TimeAmount` (fractions allowed, capped at `cap`).
    static func seconds(_ text: some StringProtocol, cap: Double = 10) -> TimeAmount? {
        guard let value = Double(text), value.isFinite, value >= 0 else { return nil }
        return .nanoseconds(Int64(min(value, cap) * 1_000_000_000))
    }

    /// `/delay/{s}`: `/anything`'s document after `s` seconds (at most 10).
    static func delay(_ text: Substring, _ request: IncomingRequest) -> Reply {
        guard let delay = seconds(text) else { return .badRequest("invalid delay") }
        return .delayed(delay, HTTPBinEcho.reply(HTTPBinEcho.withBody(request)))
    }

    /// Random bytes, from `?seed=` when given (then always the same bytes for one seed): each of
    /// the generator's words in turn, least significant byte first.
    ///
    /// Built on the server's event loop, which every test's server shares: a word at a time into
    /// the array's storage, since a byte-wise append of 10 MiB took over a second in a debug
    /// build and held up the PINGs, timers and answers of every other test on that loop.
    static func randomBytes(_ count: Int, _ request: IncomingRequest) -> [UInt8] {
        var generator = SeededGenerator(seed: request.queryValue("seed").flatMap { UInt64($0) } ?? .random(in: .min ... .max))
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let storage = UnsafeMutableRawBufferPointer(buffer)
            var offset = 0
            while count - offset >= 8 {
                storage.storeBytes(of: generator.next().littleEndian, toByteOffset: offset, as: UInt64.self)
                offset += 8
            }
            if offset < count {
                withUnsafeBytes(of: generator.next().littleEndian) { word in
                    for index in 0..<(count - offset) { storage[offset + index] = word[index] }
                }
            }
            initialized = count
        }
    }

    /// `/bytes/{n}`: `n` random bytes (at most 10 MiB), `seed` honoured.
    static func bytes(_ text: Substring, _ request: IncomingRequest) -> Reply {
        guard let count = integer(text) else { return .notFound }
        return .bytes(randomBytes(min(count, 10 << 20), request), contentType: "application/octet-stream")
    }

    /// `/stream/{n}`: `n` (at most 100) JSON documents, one a line, sent chunked.
    static func stream(_ text: Substring, _ request: IncomingRequest) -> Reply {
        guard let count = integer(text) else { return .notFound }
        var document = HTTPBinEcho.get(request)
        let chunks = (0..<min(count, 100)).map { id -> ByteBuffer in
            document["id"] = id
            var line = (try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            line.append(UInt8(ascii: "\n"))
            return ByteBuffer(data: line)
        }
        return .paced(.ok, ["Content-Type": "application/json"], chunks: chunks, interval: .zero)
    }

    /// `/stream-bytes/{n}?chunk_size=&seed=`: `n` random bytes (at most 10 MiB) sent chunked in
    /// chunks of `chunk_size` (10 KiB by default).
    static func streamBytes(_ text: Substring, _ request: IncomingRequest) -> Reply {
        guard let count = integer(text) else { return .notFound }
        let chunkSize = max(1, request.queryValue("chunk_size").flatMap { Int($0) } ?? 10 * 1024)
        let bytes = randomBytes(min(count, 10 << 20), request)
        let chunks = stride(from: 0, to: bytes.count, by: chunkSize).map {
            ByteBuffer(bytes: bytes[$0..<min($0 + chunkSize, bytes.count)])
        }
        return .paced(.ok, ["Content-Type": "application/octet-stream"], chunks: chunks, interval: .zero)
    }

    /// `/drip?duration=2&numbytes=10&code=200&delay=0`: after `delay` seconds, `numbytes` asterisks
    /// spread over `duration` seconds, with `Content-Length`.
    static func drip(_ request: IncomingRequest) -> Reply {
        guard let duration = seconds(request.queryValue("duration") ?? "2", cap: 60),
            let delay = seconds(request.queryValue("delay") ?? "0"),
            let count = Int(request.queryValue("numbytes") ?? "10"), (0...(10 << 20)).contains(count),
            let code = Int(request.queryValue("code") ?? "200"), (100...599).contains(code)
        else { return .badRequest("invalid drip parameters") }
        let headers: HTTPHeaders = ["Content-Type": "application/octet-stream", "Content-Length": String(count)]
        let star = ByteBuffer(string: "*")
        let interval = count > 0 ? TimeAmount.nanoseconds(duration.nanoseconds / Int64(count)) : .zero
        let reply = Reply.paced(HTTPResponseStatus(statusCode: code), headers, chunks: Array(repeating: star, count: count), interval: interval)
        return delay == .zero ? reply : .delayed(delay, reply)
    }
}
