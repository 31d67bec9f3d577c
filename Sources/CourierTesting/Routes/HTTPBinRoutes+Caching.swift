import Foundation
import NIOCore
import NIOHTTP1

extension HTTPBinRoutes {
    /// The entity tags listed in an `If-Match` or `If-None-Match` value, quotes and `W/` removed.
    static func entityTags(_ value: String) -> [String] {
        value.split(separator: ",").map { tag in
            var tag = tag.trimmingCharacters(in: .whitespaces)
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            if tag.hasPrefix("\""), tag.hasSuffix("\""), tag.count >= 2 { tag = String(tag.dropFirst().dropLast()) }
            return tag
        }
    }

    /// `/etag/{etag}`: 304 when `If-None-Match` names it (or `*`), 412 when `If-Match` does not,
    /// else `/get`'s document with `ETag`.
    static func etag(_ etag: String, _ request: IncomingRequest) -> Reply {
        let headers: HTTPHeaders = ["ETag": "\"\(etag)\""]
        if let ifNoneMatch = request.header("If-None-Match") {
            let tags = entityTags(ifNoneMatch)
            if tags.contains(etag) || tags.contains("*") { return .complete(.notModified, headers, ByteBuffer()) }
        } else if let ifMatch = request.header("If-Match") {
            let tags = entityTags(ifMatch)
            if !tags.contains(etag), !tags.contains("*") { return .complete(.preconditionFailed, [:], ByteBuffer()) }
        }
        return HTTPBinEcho.reply(HTTPBinEcho.get(request), headers: headers)
    }

    /// `/range/{n}`: `n` bytes of `abc…z` repeated (at most 100 KiB), honouring a single-range
    /// `Range` (206, or 416 when unsatisfiable) unless an `If-Range` names another entity.
    static func range(_ count: Substring, _ request: IncomingRequest) -> Reply {
        guard let count = integer(count), count <= 100 * 1024 else { return .badRequest("number of bytes must be in the range (0, 102400]") }
        let etag = "range\(count)"
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz".utf8)
        let body = (0..<count).map { alphabet[$0 % alphabet.count] }
        var headers: HTTPHeaders = [
            "ETag": "\"\(etag)\"", "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream",
        ]
        var useRange = true
        if let ifRange = request.header("If-Range"), !entityTags(ifRange).contains(etag) { useRange = false }
        guard useRange, let rangeHeader = request.header("Range") else {
            return .complete(.ok, headers, ByteBuffer(bytes: body))
        }
        guard let (first, last) = byteRange(rangeHeader, length: count) else {
            headers.replaceOrAdd(name: "Content-Range", value: "bytes */\(count)")
            return .complete(.rangeNotSatisfiable, headers, ByteBuffer())
        }
        headers.replaceOrAdd(name: "Content-Range", value: "bytes \(first)-\(last)/\(count)")
        return .complete(.partialContent, headers, ByteBuffer(bytes: body[first...last]))
    }

    /// The inclusive bounds of `bytes=a-b`, `bytes=a-` or `bytes=-n` within `length`, or nil.
    static func byteRange(_ header: String, length: Int) -> (Int, Int)? {
        guard header.hasPrefix("bytes="), length > 0 else { return nil }
        let spec = header.dropFirst("bytes=".count).split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        if parts[0].isEmpty {
            guard let suffix = Int(parts[1]), suffix > 0 else { return nil }
            return (max(0, length - suffix), length - 1)
        }
        guard let first = Int(parts[0]), first < length else { return nil }
        if parts[1].isEmpty { return (first, length - 1) }
        guard let last = Int(parts[1]), last >= first else { return nil }
        return (first, min(last, length - 1))
    }

    /// `/cache`: 304 when the request is conditional, else `/get`'s document with `Last-Modified` and `ETag`.
    static func cache(_ request: IncomingRequest) -> Reply {
        if request.header("If-Modified-Since") != nil || request.header("If-None-Match") != nil {
            return .complete(.notModified, [:], ByteBuffer())
        }
        // With `Date` equal to `Last-Modified` (as httpbin behind gunicorn sends them), the
        // heuristic lifetime is 0: the response must be revalidated. Without `Date`, a client
        // counts from its own clock and finds it fresh for a tenth of the past second's fraction.
        let now = httpDate(Date())
        let headers: HTTPHeaders = [
            "Date": now,
            "Last-Modified": now,
            "ETag": "\"\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())\"",
        ]
        return HTTPBinEcho.reply(HTTPBinEcho.get(request), headers: headers)
    }

    /// `/cache/{n}`: `/get`'s document with `Cache-Control: public, max-age=n`.
    static func cacheFor(_ seconds: Substring, _ request: IncomingRequest) -> Reply {
        guard let seconds = integer(seconds) else { return .notFound }
        return HTTPBinEcho.reply(HTTPBinEcho.get(request), headers: ["Cache-Control": "public, max-age=\(seconds)"])
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
