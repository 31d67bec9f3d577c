import CompressNIO
import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Compresses request bodies with gzip or deflate, for servers known to accept
/// `Content-Encoding` on requests (Alamofire's `DeflateRequestCompressor`). Opt-in: add one to a
/// session's interceptor, or to one request's.
///
/// ```swift
/// manager.interceptor = Interceptor(interceptors: [RequestCompressor(encoding: .gzip)])
/// ```
///
/// A body is compressed only when all of these hold: it is not empty and not known to be smaller
/// than ``minimumSize``; the request has no `Content-Encoding` of its own (or
/// ``duplicateHeaderBehavior`` is ``DuplicateHeaderBehavior/replace``); its `Content-Type` is
/// not a format that is compressed already (images, audio, video, archives; SVG is compressed);
/// ``shouldCompress`` agrees; and the origin never refused a compressed body. In-memory bodies
/// are compressed at once; files and streams as they are sent (chunked, their length unknown: the
/// task's upload progress counts compressed bytes against a total of -1).
///
/// HTTP has no way to ask a server beforehand whether it takes compressed bodies: a server that
/// does not answers 415 (Unsupported Media Type). The compressor then stops compressing for that
/// origin and, as a retrier, sends the request again uncompressed, when its body can be sent
/// twice.
public final class RequestCompressor: RequestInterceptor, Sendable {
    /// A content coding Courier can produce.
    public struct Encoding: Sendable, Hashable, CustomStringConvertible {
        /// The `Content-Encoding` token.
        public let name: String
        /// compress-nio's name for the framing.
        let algorithm: ZlibAlgorithm

        /// gzip (RFC 1952).
        public static let gzip = Encoding(name: "gzip", algorithm: .gzip)
        /// deflate: the zlib format (RFC 1950) over deflate (RFC 1951), as HTTP means it.
        public static let deflate = Encoding(name: "deflate", algorithm: .zlib)

        public var description: String { self.name }
    }

    /// What to do with a request that has a `Content-Encoding` of its own (Alamofire's
    /// `DuplicateHeaderBehavior`).
    public enum DuplicateHeaderBehavior: Sendable, Hashable {
        /// Send the body as it is, under its own `Content-Encoding` (the default).
        case skip
        /// Compress the body as for any request and set `Content-Encoding` to the compressor's,
        /// for a field that did not describe the body.
        case replace
        /// Fail the request before it is sent: its error is
        /// ``CourierError/Code/requestAdaptationFailed`` with a ``DuplicateHeaderError`` under it
        /// (Alamofire's default).
        case error
    }

    /// The request already had a `Content-Encoding` and the compressor was told to refuse it
    /// (``DuplicateHeaderBehavior/error``).
    public struct DuplicateHeaderError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The request's own `Content-Encoding`.
        public let contentEncoding: String

        public var description: String {
            "the request has a Content-Encoding of its own (\(self.contentEncoding)); the compressor refuses to encode it again"
        }
    }

    /// The coding applied.
    public let encoding: Encoding
    /// Bodies known to be smaller are sent as they are. 1 KiB by default.
    public let minimumSize: Int
    /// What a request with a `Content-Encoding` of its own gets: ``DuplicateHeaderBehavior/skip``
    /// by default.
    public let duplicateHeaderBehavior: DuplicateHeaderBehavior
    /// A last word on each request that passed the other checks; `true` by default.
    public let shouldCompress: @Sendable (Request) -> Bool
    private let refusingOrigins = NIOLockedValueBox(RefusingOrigins())

    /// How many origins that refused a compressed body are remembered: past it the one that
    /// refused longest ago is forgotten (its next compressed body is refused once more and sent
    /// again as it is), so that a compressor that lives for months keeps a bounded list.
    public static let rememberedOriginLimit = 1024

    /// The origins that refused, in the order they did.
    struct RefusingOrigins {
        private(set) var origins: Set<String> = []
        private var order = CircularBuffer<String>()

        mutating func insert(_ origin: String, limit: Int = RequestCompressor.rememberedOriginLimit) {
            guard self.origins.insert(origin).inserted else { return }
            self.order.append(origin)
            while self.order.count > limit { self.origins.remove(self.order.removeFirst()) }
        }

        func contains(_ origin: String) -> Bool { self.origins.contains(origin) }
    }

    /// A compressor.
    /// - Parameters:
    ///   - encoding: gzip (the default) or deflate.
    ///   - minimumSize: Bodies known to be smaller are sent as they are.
    ///   - duplicateHeaderBehavior: What a request with a `Content-Encoding` of its own gets: sent
    ///     as it is (the default), compressed with the field replaced, or failed.
    ///   - shouldCompress: A last word on each request.
    public init(
        encoding: Encoding = .gzip, minimumSize: Int = 1024, duplicateHeaderBehavior: DuplicateHeaderBehavior = .skip,
        shouldCompress: @escaping @Sendable (Request) -> Bool = { _ in true }
    ) {
        self.encoding = encoding
        self.minimumSize = minimumSize
        self.duplicateHeaderBehavior = duplicateHeaderBehavior
        self.shouldCompress = shouldCompress
    }

    /// The origins (`scheme://host:port`) that refused a compressed body; they get bodies as they
    /// are. At most ``rememberedOriginLimit``, the latest to refuse.
    public var refusingOriginList: Set<String> { self.refusingOrigins.withLockedValue { $0.origins } }

    public func adapt(_ request: Request, using context: AdaptationContext) async throws -> Request {
        if let existing = request.headerFields[.contentEncoding] {
            switch self.duplicateHeaderBehavior {
            case .skip: return request
            case .error: throw DuplicateHeaderError(contentEncoding: existing)
            case .replace: break
            }
        }
        guard self.wantsToCompress(request) else { return request }
        var compressed = request
        switch request.body.storage {
        case .empty:
            return request
        case .data(let data):
            compressed.body = .data(try Deflater.compress(data, algorithm: self.encoding.algorithm))
        case .file(let url):
            let size = try RequestBody.sizeOfBodyFile(at: url, for: request)
            let algorithm = self.encoding.algorithm
            compressed.body = .replayableStream(length: .unknown) { CompressedChunks(upstream: FileChunks(url: url, size: size), algorithm: algorithm) }
        case .replayableStream(let makeStream, _):
            let algorithm = self.encoding.algorithm
            compressed.body = .replayableStream(length: .unknown) { CompressedChunks(upstream: makeStream(), algorithm: algorithm) }
        case .stream(let stream, _):
            compressed.body = .stream(CompressedChunks(upstream: stream, algorithm: self.encoding.algorithm), length: .unknown)
        }
        // The trailer fields stay the body's.
        compressed.body.trailers = request.body.trailers
        compressed.headerFields[.contentEncoding] = self.encoding.name
        compressed.headerFields[.contentLength] = nil
        context.logger.trace("compressed the request body", metadata: ["courier.content-encoding": "\(self.encoding.name)"])
        return compressed
    }

    public func retry(_ attempt: FailedAttempt) async throws -> RetryDecision {
        guard attempt.error == nil, attempt.response?.status == .unsupportedMediaType,
            attempt.request.headerFields.value(of: .contentEncoding) == self.encoding.name,
            attempt.retryCount(for: .compressionRefused) == 0, let origin = Self.origin(of: attempt.request.url)
        else { return .doNotRetry }
        self.refusingOrigins.withLockedValue { $0.insert(origin) }
        attempt.logger.debug("the server refused a compressed body: sending it as it is", metadata: ["courier.origin": "\(origin)"])
        return .retry(reason: .compressionRefused)
    }

    /// False: the compressor retries only a 415 to a compressed body.
    public var retriesSerializationFailures: Bool { false }

    private func wantsToCompress(_ request: Request) -> Bool {
        guard !request.body.isEmpty else { return false }
        // Every kind of body whose length is known: data, a file, a stream that declared one
        // (zero is empty).
        if let length = request.body.knownLength, length == 0 || length < Int64(self.minimumSize) { return false }
        if let type = request.headerFields.value(of: .contentType), Self.isCompressedAlready(type) { return false }
        if let origin = Self.origin(of: request.url), self.refusingOrigins.withLockedValue({ $0.contains(origin) }) { return false }
        return self.shouldCompress(request)
    }

    /// Media types whose bytes are compressed already: compressing them again costs time and saves nothing.
    static func isCompressedAlready(_ contentType: String) -> Bool {
        let type = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercasedASCII } ?? ""
        if type == "image/svg+xml" { return false }
        if type.hasPrefix("image/") || type.hasPrefix("audio/") || type.hasPrefix("video/") { return true }
        return [
            "application/zip", "application/gzip", "application/x-gzip", "application/x-bzip2", "application/x-xz", "application/zstd",
            "application/x-7z-compressed", "application/x-rar-compressed", "application/vnd.rar", "font/woff", "font/woff2",
        ].contains(type)
    }

    static func origin(of url: URL) -> String? {
        ProtectionSpace(url: url).map { "\($0.urlScheme)://\($0.host):\($0.port)" }
    }
}
