import Foundation
import HTTPTypes

/// One part of a multipart form: its header fields and where its body comes from.
struct MultipartPart: Sendable {
    /// Where a part's bytes come from when the body is sent.
    enum Content: Sendable {
        /// Bytes in memory.
        case data(Data)
        /// A regular file, read when its turn comes; `size` is what it measured when appended.
        case file(URL, size: Int64)
        /// A stream of exactly `length` bytes; `makeStream` is called once per send. When
        /// `replayable` is false it hands back the same one-shot stream each time.
        case stream(makeStream: @Sendable () -> RequestBody.Stream, length: Int64, replayable: Bool)
    }

    var headers: HTTPFields
    var content: Content

    /// The length of the body, in bytes.
    var bodyLength: Int64 {
        switch self.content {
        case .data(let data): Int64(data.count)
        case .file(_, let size): size
        case .stream(_, let length, _): length
        }
    }

    /// Whether the part can be sent a second time.
    var isReplayable: Bool {
        if case .stream(_, _, let replayable) = self.content { return replayable }
        return true
    }

    /// The part as error messages name it: by its `Content-Disposition`, else its fields.
    var summary: String {
        if let disposition = self.headers[.contentDisposition] { return "the part '\(disposition)'" }
        return "the part with the fields '\(self.headers.map { "\($0.name): \($0.value)" }.joined(separator: "; "))'"
    }

    /// The header block: each field as `Name: value` and a line break, then an empty line. A
    /// value goes out as the bytes it was made of (a legacy file name in Latin-1 or Shift JIS
    /// given as bytes): `value` decodes them as UTF-8, and turned each invalid byte into U+FFFD.
    var headerBlock: [UInt8] {
        var bytes: [UInt8] = []
        for field in self.headers {
            bytes += field.name.rawName.utf8
            bytes += ": ".utf8
            field.withUnsafeBytesOfValue { bytes += $0 }
            bytes += "\r\n".utf8
        }
        bytes += "\r\n".utf8
        return bytes
    }

    /// The `Content-Disposition` of a form field, with a file name when there is one.
    ///
    /// A quote, carriage return or line feed in the name or file name would end the quoted string
    /// or the header early, so they are written `%22`, `%0D` and `%0A`, as browsers write them
    /// (the HTML standard's multipart/form-data encoding algorithm).
    static func contentDisposition(name: String, fileName: String?) -> String {
        var value = "form-data; name=\"" + Self.escaped(name) + "\""
        if let fileName {
            value += "; filename=\"" + Self.escaped(fileName) + "\""
        }
        return value
    }

    /// The header fields of a form field: its disposition and, when given, its media type.
    static func headers(name: String, fileName: String?, mimeType: String?) -> HTTPFields {
        var headers = HTTPFields()
        headers.append(HTTPField(name: .contentDisposition, value: Self.contentDisposition(name: name, fileName: fileName)))
        if let mimeType {
            headers.append(HTTPField(name: .contentType, value: mimeType))
        }
        return headers
    }

    private static func escaped(_ text: String) -> String {
        // Bytes, not characters: a quote that a combining mark follows is one `Character` with
        // it, and would pass a check of characters unescaped.
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }) else {
            return text
        }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "%22"
            case "\r": result += "%0D"
            case "\n": result += "%0A"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
