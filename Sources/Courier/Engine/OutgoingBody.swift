import Foundation

/// A request body as the NIO engine's transports send it: nothing, bytes in memory, or chunks
/// read as the connection takes them (files are read by ``FileChunks``).
enum OutgoingBody {
    case empty
    case data(Data)
    case stream(RequestBody.Stream, length: RequestBody.Length)

    /// The body of `request`; a body file that cannot be read, or a trailer field HTTP forbids
    /// (``RequestBody/checkedTrailers(of:)``), or a stream declared negative in length, or a body
    /// on a `TRACE` request, fails here, before anything is sent.
    init(_ request: Request) throws(CourierError) {
        _ = try RequestBody.checkedTrailers(of: request)
        switch request.body.storage {
        case .empty:
            self = .empty
        case .data(let data):
            self = data.isEmpty ? .empty : .data(data)
        case .file(let url):
            // The size is read now, for Content-Length; the reader checks the file still has it.
            let size = try RequestBody.sizeOfBodyFile(at: url, for: request)
            self = .stream(FileChunks(url: url, size: size), length: .known(size))
        case .stream(let stream, let length):
            try Self.check(length, of: request)
            self = .stream(stream, length: length)
        case .replayableStream(let makeStream, let length):
            try Self.check(length, of: request)
            self = .stream(makeStream(), length: length)
        }
        // RFC 9110 9.3.8: "A client MUST NOT send content in a TRACE request" (AHC refuses it
        // too); a stream of unknown length may have some. The method (a string) is compared only
        // for a request with a body.
        if self.length != .known(0), request.method == .trace {
            throw CourierError(.invalidRequest, "\(request.summary): a TRACE request cannot carry a body (RFC 9110 9.3.8)", request: request)
        }
    }

    /// Refuses a stream declared negative in length: it went out as `Content-Length: -5` (a head
    /// every server refuses, or reads as it likes), and only then failed, as a length mismatch.
    private static func check(_ length: RequestBody.Length, of request: Request) throws(CourierError) {
        if case .known(let bytes) = length, bytes < 0 {
            throw CourierError(
                .invalidRequest, "\(request.summary): the body stream's declared length is negative (\(bytes)); nothing was sent",
                request: request)
        }
    }

    var length: RequestBody.Length {
        switch self {
        case .empty: .known(0)
        case .data(let data): .known(Int64(data.count))
        case .stream(_, let length): length
        }
    }
}
