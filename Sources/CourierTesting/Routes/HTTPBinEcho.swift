import Foundation
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// The JSON documents httpbin answers with, built from a request with httpbin's field names.
enum HTTPBinEcho {
    /// `args`: each query name to its value, or to an array of values when repeated.
    static func args(_ request: IncomingRequest) -> [String: Any] {
        grouped(request.queryItems)
    }

    /// `headers`: each header name to its value; repeated headers are joined with `,`.
    static func headers(_ request: IncomingRequest) -> [String: String] {
        fields(request.head.headers)
    }

    /// Each field name (title-cased) to its value; repeated fields are joined with `,`.
    static func fields(_ fields: HTTPHeaders) -> [String: String] {
        var headers: [String: String] = [:]
        var names: [String: String] = [:]  // lowercased → first spelling seen
        for (name, value) in fields {
            let key = names[name.lowercased(), default: titleCased(name)]
            names[name.lowercased()] = key
            headers[key] = headers[key].map { "\($0),\(value)" } ?? value
        }
        return headers
    }

    /// `/get`'s document: `args`, `headers`, `origin`, `url`.
    static func get(_ request: IncomingRequest) -> [String: Any] {
        ["args": args(request), "headers": headers(request), "origin": request.origin, "url": request.url]
    }

    /// `/post`'s (and `/anything`'s) document: `/get`'s plus `data`, `files`, `form`, `json`,
    /// `method` when asked, and `trailers` (like `headers`) when the body ended with trailer fields.
    static func withBody(_ request: IncomingRequest, includeMethod: Bool = false) -> [String: Any] {
        var document = get(request)
        var form: [(name: String, value: String)] = []
        var files: [(name: String, value: String)] = []
        var data = ""
        var json: Any = NSNull()
        let bytes = Array(request.body.readableBytesView)
        let contentType = request.header("Content-Type") ?? ""
        let mediaType = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""

        if mediaType == "application/x-www-form-urlencoded" {
            form = FormURLEncoding.parse(String(decoding: bytes, as: UTF8.self))
        } else if let boundary = MultipartParser.boundary(contentType: contentType),
            let parts = MultipartParser.parse(bytes, boundary: boundary)
        {
            for part in parts {
                if part.filename != nil {
                    files.append((part.name, textOrDataURL(part.body, contentType: part.contentType)))
                } else {
                    form.append((part.name, String(decoding: part.body, as: UTF8.self)))
                }
            }
        } else {
            data = textOrDataURL(bytes, contentType: "application/octet-stream")
            if !bytes.isEmpty, let parsed = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) {
                json = parsed
            }
        }
        document["data"] = data
        document["form"] = grouped(form)
        document["files"] = grouped(files)
        document["json"] = json
        if includeMethod { document["method"] = request.head.method.rawValue }
        if let trailers = request.trailers, !trailers.isEmpty { document["trailers"] = fields(trailers) }
        return document
    }

    /// A complete JSON reply.
    static func reply(_ document: Any, status: HTTPResponseStatus = .ok, headers: HTTPHeaders = [:]) -> Reply {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        return .complete(status, headers, ByteBuffer(data: encode(document)))
    }

    /// `document` as pretty-printed JSON with sorted keys and a final newline.
    static func encode(_ document: Any) -> Data {
        var data = (try? JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed])) ?? Data("{}".utf8)
        data.append(UInt8(ascii: "\n"))
        return data
    }

    /// Pairs grouped by name: a single value as a string, repeated ones as an array.
    static func grouped(_ pairs: [(name: String, value: String)]) -> [String: Any] {
        var values: [String: [String]] = [:]
        for (name, value) in pairs { values[name, default: []].append(value) }
        return values.mapValues { $0.count == 1 ? $0[0] as Any : $0 as Any }
    }

    /// UTF-8 text as is; other bytes as a `data:` URL with base64, as httpbin does.
    static func textOrDataURL(_ bytes: [UInt8], contentType: String?) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        return "data:\(contentType ?? "application/octet-stream");base64,\(Data(bytes).base64EncodedString())"
    }

    /// `content-type` → `Content-Type`.
    static func titleCased(_ name: String) -> String {
        name.split(separator: "-", omittingEmptySubsequences: false)
            .map { $0.prefix(1).uppercased() + $0.dropFirst().lowercased() }
            .joined(separator: "-")
    }
}
