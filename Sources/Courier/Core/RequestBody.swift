import Foundation
import NIOCore

/// The body of a request: nothing, bytes in memory, a file read in chunks, or an asynchronous
/// stream of chunks with a known or unknown length.
///
/// A body of unknown length goes out with `Transfer-Encoding: chunked`; every other body sets
/// `Content-Length`. A stream can be read once: a redirect that must resend the body (307, 308)
/// fails when the body was a stream, rather than sending an empty one. A body made by
/// ``replayableStream(length:_:)`` makes a fresh stream for each send, so it survives such a
/// redirect.
public struct RequestBody: Sendable {
    /// How long a streamed body is.
    public enum Length: Sendable, Hashable {
        /// Exactly this many bytes.
        case known(Int64)
        /// Not known in advance: sent chunked.
        case unknown
    }

    /// A stream of body chunks.
    public typealias Stream = any AsyncSequence<ByteBuffer, any Error> & Sendable

    enum Storage: Sendable {
        case empty
        case data(Data)
        case file(URL)
        case stream(Stream, Length)
        case replayableStream(@Sendable () -> Stream, Length)
    }

    let storage: Storage

    init(_ storage: Storage) { self.storage = storage }

    /// No body.
    public static let empty = RequestBody(.empty)

    /// Bytes in memory.
    public static func data(_ data: Data) -> RequestBody { RequestBody(.data(data)) }

    /// The contents of a file, read in chunks as they are sent and never held whole.
    public static func file(_ url: URL) -> RequestBody { RequestBody(.file(url)) }

    /// Chunks from an asynchronous sequence, sent as they come with back-pressure.
    /// - Parameters:
    ///   - stream: The chunks. It is iterated once.
    ///   - length: The total length when known; `.unknown` sends the body chunked.
    public static func stream(_ stream: some AsyncSequence<ByteBuffer, any Error> & Sendable, length: Length) -> RequestBody {
        RequestBody(.stream(stream, length))
    }

    /// Chunks from a fresh asynchronous sequence each time the body is sent (the first time, and
    /// again for a redirect that keeps the body).
    /// - Parameters:
    ///   - length: The total length when known; `.unknown` sends the body chunked.
    ///   - makeStream: Makes the chunks; called once per send, on an engine thread.
    public static func replayableStream(
        length: Length,
        _ makeStream: @escaping @Sendable () -> some AsyncSequence<ByteBuffer, any Error> & Sendable
    ) -> RequestBody {
        RequestBody(.replayableStream({ makeStream() }, length))
    }

    /// Whether there is no body.
    public var isEmpty: Bool {
        switch self.storage {
        case .empty: true
        case .data(let data): data.isEmpty
        case .file, .stream, .replayableStream: false
        }
    }

    /// The bytes of an in-memory body, else nil.
    public var data: Data? {
        if case .data(let data) = self.storage { return data }
        return nil
    }

    /// The file of a file body, else nil.
    public var fileURL: URL? {
        if case .file(let url) = self.storage { return url }
        return nil
    }

    /// Whether the body can be sent a second time (for a redirect that keeps the body).
    public var isReplayable: Bool {
        if case .stream = self.storage { return false }
        return true
    }

    /// The length when it is known without reading: in-memory bytes, a file's size, a stream's
    /// declared length. `nil` for a chunked stream or a file that cannot be examined.
    public var knownLength: Int64? {
        switch self.storage {
        case .empty: return 0
        case .data(let data): return Int64(data.count)
        case .file(let url):
            guard let size = try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber else { return nil }
            return size.int64Value
        case .stream(_, .known(let length)), .replayableStream(_, .known(let length)): return length
        case .stream(_, .unknown), .replayableStream(_, .unknown): return nil
        }
    }
}
