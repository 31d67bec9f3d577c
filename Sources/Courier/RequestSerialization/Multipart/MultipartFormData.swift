import Foundation
import HTTPTypes
import NIOCore

/// A `multipart/form-data` body (RFC 7578) built part by part: form fields, files, in-memory data
/// and streams (AFNetworking's `AFMultipartFormData`).
///
/// ```swift
/// var form = MultipartFormData()
/// form.appendPart(withForm: Data("Ada".utf8), name: "name")
/// try form.appendPart(withFileURL: URL(fileURLWithPath: "/tmp/avatar.png"), name: "avatar")
/// // Content-Type: multipart/form-data; boundary=Boundary+…, and form.contentLength bytes
/// let request = Request(method: .post, url: URL(string: "https://example.com/profile")!,
///                       headerFields: [.contentType: form.contentType], body: form.body)
/// ```
///
/// Usually you do not make one yourself: ``HTTPRequestSerializer/multipartFormRequest(method:urlString:parameters:constructingBodyWith:)``
/// and ``HTTPSessionManager/post(_:parameters:headers:boundary:constructingBodyWith:progress:success:failure:)``
/// hand one to a closure that appends the parts.
///
/// The body is produced as it is sent: a file is checked when it is appended, opened only when its
/// turn comes and read in large chunks, never held in memory and never copied to a temporary
/// file. Its length is known up front (``contentLength``), so the request goes out with a
/// `Content-Length`; a file that has changed size by the time it is read fails the body with
/// ``CourierError/Code/bodyReadFailed`` rather than sending a body of the wrong length.
///
/// The layout is AFNetworking's: the first part opens with `--boundary` and a line break, each
/// later one with a line break, `--boundary` and a line break; each part's header fields are
/// written `Name: value` with a line break, then an empty line, then the part's bytes; the body
/// ends with a line break and `--boundary--` and a line break.
public struct MultipartFormData: Sendable {
    /// The boundary between parts: `Boundary+` and sixteen random hex digits, or the one given to
    /// ``init(boundary:)``.
    public var boundary: String { self.boundaryValue.value }

    let boundaryValue: MultipartBoundary
    private(set) var parts: [MultipartPart] = []
    /// The parts' share of ``contentLength``: each one's delimiter, header block and body, added
    /// as it is appended (summed afresh on each append, a form of many files took time in the
    /// square of their number to build).
    private var partsLength: Int64 = 0
    /// How many bytes a file is read in at a time.
    var chunkLength = MultipartBodyStream.defaultChunkLength
    /// The pace set by ``throttleBandwidth(withPacketSize:delay:)``, if any.
    var throttle: MultipartThrottle?

    /// An empty form with a fresh random boundary.
    public init() {
        self.boundaryValue = .random()
    }

    /// An empty form with a boundary of your choosing (Alamofire's `MultipartFormData(boundary:)`),
    /// for bodies that must come out byte for byte the same: tests, and uploads whose signature
    /// covers the body.
    ///
    /// ```swift
    /// var form = try MultipartFormData(boundary: "courier-test-boundary")
    /// form.appendPart(withForm: Data("Ada".utf8), name: "name")
    /// // form.contentType == "multipart/form-data; boundary=courier-test-boundary"
    /// ```
    ///
    /// The boundary must not occur in any part's bytes; Courier does not scan the parts for it
    /// (files are read only as the body is sent), so choose one that cannot.
    /// - Parameter boundary: 1 to 70 characters allowed by RFC 2046 §5.1.1: letters, digits and
    ///   `'()+_,-./:=?` and space, not ending with a space.
    /// - Throws: ``CourierError/Code/invalidRequest`` for an empty, too long or ill-formed boundary.
    public init(boundary: String) throws(CourierError) {
        guard let value = MultipartBoundary(validating: boundary) else {
            throw CourierError(
                .invalidRequest,
                "invalid multipart boundary \"\(boundary)\": RFC 2046 allows 1 to 70 letters, digits, spaces and '()+_,-./:=? characters, not ending with a space")
        }
        self.boundaryValue = value
    }

    /// Whether no part has been appended.
    public var isEmpty: Bool { self.parts.isEmpty }

    /// The `Content-Type` of the body: `multipart/form-data; boundary=…`.
    ///
    /// A boundary that is not an HTTP token (one with a space or any of `(),/:=?`, which
    /// ``init(boundary:)`` allows) is written in quotes, as RFC 2046 §5.1.1 requires:
    /// `boundary="signed upload:1"`. Without them a parser such as Go's `mime.ParseMediaType`
    /// rejects the header, or one that stops at the space reads a shorter boundary.
    public var contentType: String { "multipart/form-data; boundary=" + self.boundaryValue.headerParameterValue }

    /// The exact length of the body in bytes, from the parts' sizes: delimiters, header blocks and
    /// bodies. Zero for an empty form, which has no body at all.
    public var contentLength: Int64 {
        guard !self.parts.isEmpty else { return 0 }
        let boundary = self.boundaryValue
        // The first part opens with the initial delimiter, which lacks the encapsulation
        // delimiter's leading line break that `partsLength` counted for it.
        let firstDelimiterShortfall = Int64(boundary.initialDelimiter.count - boundary.encapsulationDelimiter.count)
        return firstDelimiterShortfall + self.partsLength + Int64(boundary.closeDelimiter.count)
    }

    /// Whether the body can be sent again, as a redirect that keeps the body (307, 308) needs:
    /// true unless a part was appended from a one-shot stream.
    public var isReplayable: Bool { self.parts.allSatisfy(\.isReplayable) }

    /// The body, of length ``contentLength``; each send makes a fresh stream of the parts. An
    /// empty form gives ``RequestBody/empty``.
    public var body: RequestBody {
        guard !self.parts.isEmpty else { return .empty }
        let stream = MultipartBodyStream(parts: self.parts, boundary: self.boundaryValue, chunkLength: self.chunkLength)
        if let throttle {
            return self.body(of: ThrottledChunks(base: stream, throttle: throttle))
        }
        return self.body(of: stream)
    }

    private func body(of chunks: some AsyncSequence<ByteBuffer, any Error> & Sendable) -> RequestBody {
        if self.isReplayable {
            return .replayableStream(length: .known(self.contentLength)) { chunks }
        }
        return .stream(chunks, length: .known(self.contentLength))
    }

    mutating func append(_ part: MultipartPart) {
        self.partsLength += Int64(self.boundaryValue.encapsulationDelimiter.count + part.headerBlock.count) + part.bodyLength
        self.parts.append(part)
    }

    /// `request` carrying this form: its body, `Content-Type` and `Content-Length` (AFNetworking's
    /// `requestByFinalizingMultipartFormData`). An empty form leaves the request as it is.
    func finalizing(_ request: Request) -> Request {
        guard !self.parts.isEmpty else { return request }
        var request = request
        request.headerFields[.contentType] = self.contentType
        request.headerFields[.contentLength] = String(self.contentLength)
        request.body = self.body
        return request
    }
}
