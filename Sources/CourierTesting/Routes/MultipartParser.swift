import Foundation

/// Splits a `multipart/form-data` body (RFC 7578) into its parts.
struct MultipartParser {
    /// One part: its form field name, its file name when it is a file, and its bytes.
    struct Part {
        var name: String
        var filename: String?
        var contentType: String?
        var body: [UInt8]
    }

    /// The boundary parameter of a `multipart/form-data` content type, or nil.
    static func boundary(contentType: String) -> String? {
        let parameters = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parameters.first?.lowercased() == "multipart/form-data" else { return nil }
        for parameter in parameters.dropFirst() where parameter.lowercased().hasPrefix("boundary=") {
            var value = parameter.dropFirst("boundary=".count)
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = value.dropFirst().dropLast() }
            return value.isEmpty ? nil : String(value)
        }
        return nil
    }

    /// The parts of `body`, or nil when it is not well-formed multipart data.
    static func parse(_ body: [UInt8], boundary: String) -> [Part]? {
        let delimiter = Array("--\(boundary)".utf8)
        guard var position = firstIndex(of: delimiter, in: body, from: 0) else { return nil }
        var parts: [Part] = []
        while true {
            position += delimiter.count
            // "--" after a delimiter closes the body.
            if body.count >= position + 2, body[position] == UInt8(ascii: "-"), body[position + 1] == UInt8(ascii: "-") {
                return parts
            }
            guard let headStart = skipLineBreak(body, position),
                let headEnd = firstIndex(of: Array("\r\n\r\n".utf8), in: body, from: headStart)
            else { return nil }
            let contentStart = headEnd + 4
            guard let next = firstIndex(of: Array("\r\n".utf8) + delimiter, in: body, from: headEnd + 2) else { return nil }
            let head = String(decoding: body[headStart..<headEnd], as: UTF8.self)
            guard var part = parseHead(head) else { return nil }
            part.body = next >= contentStart ? Array(body[contentStart..<next]) : []
            parts.append(part)
            position = next + 2
        }
    }

    private static func skipLineBreak(_ body: [UInt8], _ index: Int) -> Int? {
        guard body.count >= index + 2, body[index] == 13, body[index + 1] == 10 else { return nil }
        return index + 2
    }

    private static func parseHead(_ head: String) -> Part? {
        var part = Part(name: "", filename: nil, contentType: nil, body: [])
        var sawDisposition = false
        for line in head.split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "content-type" { part.contentType = value }
            guard name == "content-disposition" else { continue }
            sawDisposition = true
            for parameter in value.split(separator: ";").dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard pair.count == 2 else { continue }
                var parameterValue = pair[1]
                if parameterValue.hasPrefix("\""), parameterValue.hasSuffix("\""), parameterValue.count >= 2 {
                    parameterValue = String(parameterValue.dropFirst().dropLast())
                }
                switch pair[0].lowercased() {
                case "name": part.name = parameterValue
                case "filename": part.filename = parameterValue
                default: break
                }
            }
        }
        return sawDisposition ? part : nil
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        let first = needle[0]
        var index = start
        while index <= haystack.count - needle.count {
            if haystack[index] == first, haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
