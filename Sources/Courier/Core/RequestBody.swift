import Foundation
import HTTPTypes
import NIOCore

/// The body of a request: nothing, bytes in memory, a file read in chunks, or an asynchronous
/// stream of chunks with a known or unknown length.
///
/// A body of unknown length goes out with `Transfer-Encoding: chunked`; every other body sets
/// `Content-Length`. A stream can be read once: a redirect that must resend the body (307, 308)
/// is not followed when the body was a stream, and the redirect response itself is the answer
/// (OkHttp's rule), rather than the request sent again with an empty body. A body made by
/// ``replayableStream(length:trailers:_:)`` makes a fresh stream for each send, so it survives
/// such a redirect.
///
/// Any body can carry trailer fields (``trailers``), sent after its last byte: the trailer
/// section of a chunked body over HTTP/1.1, a trailing HEADERS frame over HTTP/2.
///
/// ```swift
/// let body = RequestBody.data(payload, trailers: [HTTPField.Name("Courier-Checksum")!: "crc32=\(checksum)"])
/// ```
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

    /// Trailer fields sent after the body's last byte (RFC 9110 6.5), or nil for none.
    ///
    /// They go with the body wherever it is sent: each resend (a retry, a 307 or 308 redirect)
    /// sends them again, and a redirect that drops the body (303) drops them. A body with trailer
    /// fields goes out over HTTP/1.1 with `Transfer-Encoding: chunked` even when its length is
    /// known (its `Content-Length` is not sent), its fields in the chunked body's trailer section,
    /// and their names announced in a `Trailer` header field (RFC 9110 6.6.2); over HTTP/2 they
    /// are a HEADERS frame with END_STREAM after the last DATA.
    ///
    /// HTTP forbids some fields in a trailer (RFC 9110 6.5.1): those that frame the message
    /// (`Content-Length`, `Transfer-Encoding`), route it (`Host`), modify or authenticate the
    /// request (`Authorization`, `Cache-Control`, `Expect`, `Range`, `TE`, the conditionals…), or
    /// say how to process the body (`Content-Encoding`, `Content-Type`, `Content-Range`,
    /// `Trailer`), and HTTP/1.1's connection fields. A task whose body names one fails with
    /// ``CourierError/Code/invalidRequest`` before a connection is used, and nothing is sent
    /// (``forbiddenTrailerFieldNames`` lists them). An empty set of fields is the same as nil.
    public var trailers: HTTPFields?

    init(_ storage: Storage, trailers: HTTPFields? = nil) {
        self.storage = storage
        self.trailers = trailers
    }

    /// No body.
    public static let empty = RequestBody(.empty)

    /// Bytes in memory.
    /// - Parameters:
    ///   - data: The bytes.
    ///   - trailers: Trailer fields sent after them (``trailers``); none by default.
    public static func data(_ data: Data, trailers: HTTPFields? = nil) -> RequestBody {
        RequestBody(.data(data), trailers: trailers)
    }

    /// The contents of a file, read in chunks as they are sent and never held whole.
    /// - Parameters:
    ///   - url: The file: a `file:` URL (`URL(fileURLWithPath:)`); any other fails the task with
    ///     ``CourierError/Code/bodyReadFailed`` before anything is sent.
    ///   - trailers: Trailer fields sent after its last byte (``trailers``); none by default.
    public static func file(_ url: URL, trailers: HTTPFields? = nil) -> RequestBody {
        RequestBody(.file(url), trailers: trailers)
    }

    /// Chunks from an asynchronous sequence, sent as they come with back-pressure.
    /// - Parameters:
    ///   - stream: The chunks. It is iterated once.
    ///   - length: The total length when known; `.unknown` sends the body chunked. A negative
    ///     length fails the task with ``CourierError/Code/invalidRequest`` before anything is sent.
    ///   - trailers: Trailer fields sent after the last chunk (``trailers``); none by default.
    public static func stream(
        _ stream: some AsyncSequence<ByteBuffer, any Error> & Sendable, length: Length, trailers: HTTPFields? = nil
    ) -> RequestBody {
        RequestBody(.stream(stream, length), trailers: trailers)
    }

    /// Chunks from a fresh asynchronous sequence each time the body is sent (the first time, and
    /// again for a redirect that keeps the body).
    /// - Parameters:
    ///   - length: The total length when known; `.unknown` sends the body chunked. A negative
    ///     length fails the task with ``CourierError/Code/invalidRequest`` before anything is sent.
    ///   - trailers: Trailer fields sent after the last chunk, each time (``trailers``); none by
    ///     default.
    ///   - makeStream: Makes the chunks; called once per send, on an engine thread.
    public static func replayableStream(
        length: Length,
        trailers: HTTPFields? = nil,
        _ makeStream: @escaping @Sendable () -> some AsyncSequence<ByteBuffer, any Error> & Sendable
    ) -> RequestBody {
        RequestBody(.replayableStream({ makeStream() }, length), trailers: trailers)
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

    /// The body's bytes as a sequence of chunks, for an engine other than ``NIOEngine`` to send or
    /// copy: an in-memory body is one chunk, a file is read in chunks as they are taken, an empty
    /// body gives none. A ``stream(_:length:trailers:)`` body gives its own sequence, which can be
    /// iterated once, whatever the number of calls; a ``replayableStream(length:trailers:_:)``
    /// body makes a fresh sequence on each call. ``trailers`` are not part of it.
    public func makeChunks() -> Stream {
        switch self.storage {
        case .empty:
            return AsyncThrowingStream<ByteBuffer, any Error> { $0.finish() }
        case .data(let data):
            return AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                continuation.yield(ByteBuffer(bytes: data))
                continuation.finish()
            }
        case .file(let url):
            return FileChunks(url: url, size: self.knownLength ?? 0)
        case .stream(let stream, _):
            return stream
        case .replayableStream(let makeStream, _):
            return makeStream()
        }
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
            guard case .readable(let size) = Self.examine(file: url) else { return nil }
            return size
        case .stream(_, .known(let length)), .replayableStream(_, .known(let length)): return length
        case .stream(_, .unknown), .replayableStream(_, .unknown): return nil
        }
    }
}

extension RequestBody {
    /// What a file a body is read from turns out to be, looked at before anything is sent.
    enum FileExamination {
        /// A regular file the process may read, of this size.
        case readable(size: Int64)
        /// Why it cannot be sent, in words that name the path, with the file system's error.
        case refused(String, underlyingError: (any Error)?)
    }

    /// Looks at the file at `url`, a symbolic link followed (its own size is its target path's
    /// length, which the file's bytes then exceeded): only a regular file that can be read is
    /// sent. A directory, a device (`/dev/null` and `/dev/zero` say 0 bytes), a pipe (opening
    /// one blocks until a writer comes) or a socket is refused, and so is a file the process may
    /// not read, before the request's head goes out: the server saw a complete empty upload
    /// before the body failed. A URL that is not a `file:` URL is refused too: its path was read
    /// as a local one, so `https://example.com/etc/hosts` uploaded this machine's `/etc/hosts`.
    static func examine(file url: URL) -> FileExamination {
        guard url.isFileURL else { return .refused("\(url.absoluteString) is not a file URL", underlyingError: nil) }
        let path = url.resolvingSymlinksInPath().path
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            return .refused("there is no file at \(url.path)", underlyingError: error)
        }
        let type = attributes[.type] as? FileAttributeType
        if type == .typeDirectory { return .refused("\(url.path) is a directory, not a file", underlyingError: nil) }
        guard type == .typeRegular, let size = (attributes[.size] as? NSNumber)?.int64Value else {
            return .refused("\(url.path) is not a regular file (a device, a pipe or a socket)", underlyingError: nil)
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            return .refused("\(url.path) cannot be read (permission denied)", underlyingError: nil)
        }
        return .readable(size: size)
    }

    /// The size of the body file at `url`, or the error that refuses it for `request`
    /// (``examine(file:)``).
    static func sizeOfBodyFile(at url: URL, for request: Request) throws(CourierError) -> Int64 {
        switch Self.examine(file: url) {
        case .readable(let size):
            return size
        case .refused(let reason, let underlyingError):
            throw CourierError(.bodyReadFailed, "\(request.summary): the body file cannot be sent: \(reason)", request: request, underlyingError: underlyingError)
        }
    }
}
