import Foundation
import NIOCore
import NIOHTTP1

/// `/courier/upload`: takes a request body of any size and method, and answers with its size and
/// CRC-32 as JSON. The handler folds each chunk in as it arrives; the bytes themselves are never
/// kept, so memory stays flat whatever the upload's size.
struct UploadSink {
    /// The path the handler routes here, unless a custom route claims it.
    static let path = "/courier/upload"

    private var crc = CRC32()

    /// Folds in one chunk of the body.
    mutating func consume(_ chunk: ByteBuffer) {
        chunk.withUnsafeReadableBytes { self.crc.update($0) }
    }

    /// `{"chunked", "content_length", "content_type", "crc32", "method", "size"}`, and
    /// `trailers` (each name to its value) when the body ended with trailer fields.
    func reply(to request: IncomingRequest) -> Reply {
        let encodings = request.head.headers[canonicalForm: "Transfer-Encoding"].map { $0.lowercased() }
        var document: [String: Any] = [
            "size": self.crc.count,
            "crc32": self.crc.hex,
            "method": request.head.method.rawValue,
            "content_type": request.header("Content-Type") as Any? ?? NSNull(),
            "content_length": request.header("Content-Length").flatMap { Int($0) } as Any? ?? NSNull(),
            "chunked": encodings.contains("chunked"),
        ]
        if let trailers = request.trailers, !trailers.isEmpty { document["trailers"] = HTTPBinEcho.fields(trailers) }
        return HTTPBinEcho.reply(document)
    }
}
