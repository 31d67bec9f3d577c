import Foundation
import HTTPTypes

extension HTTPResponse {
    /// The MIME type from `Content-Type`, its ASCII letters lower-cased (a type is a token), without
    /// parameters (`application/json`); nil when there is no `Content-Type` or it names no
    /// `type/subtype` pair (`text`, `text/`).
    public var mimeType: String? {
        guard let value = self.headerFields.value(of: .contentType) else { return nil }
        let type = value.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        let halves = type.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2, !halves[0].isEmpty, !halves[1].isEmpty else { return nil }
        return type.lowercasedASCII
    }

    /// The `charset` parameter of `Content-Type`, its ASCII letters lower-cased, unquoted, if any
    /// (the first, when there are several). A `;` or `=` inside a quoted string is part of its
    /// parameter's value, and `\x` in one stands for `x` (RFC 9110 section 5.6.4).
    public var textEncodingName: String? {
        guard let value = self.headerFields.value(of: .contentType),
              let charset = MediaTypeParameters.value(of: "charset", in: value), !charset.isEmpty
        else { return nil }
        return charset.lowercasedASCII
    }

    /// The `Content-Length`, or nil when absent or malformed (URLSession's -1 becomes nil).
    public var expectedContentLength: Int64? {
        guard let value = self.headerFields.value(of: .contentLength) else { return nil }
        // The common case parses directly; only an unusual value pays for trimming.
        return Int64(value) ?? Int64(value.trimmingCharacters(in: .whitespaces))
    }

    /// Whether the body is content-coded: a `Content-Encoding` names a coding other than
    /// `identity`. Its `Content-Length` counts the coded bytes, and the engine may hand on the
    /// decoded ones.
    var isContentCoded: Bool {
        guard self.headerFields.contains(.contentEncoding) else { return false }
        return !self.headerFields[values: .contentEncoding].allSatisfy { value in
            value.split(separator: ",").allSatisfy { $0.trimmingCharacters(in: .whitespaces).equalsLowercased("identity") }
        }
    }

    /// The length of the body as the task receives it, for progress: the `Content-Length` of a
    /// body that is not content-coded; nil (unknown) for a coded one, whose decoded bytes would
    /// count past it (progress past 100 %; URLSession reports an unknown length too).
    var expectedBodyLength: Int64? {
        self.isContentCoded ? nil : self.expectedContentLength
    }

    /// Whether a response with `status` has a body (RFC 9112 6.3): not a 1xx, 204 or 304 answer,
    /// nor any answer to HEAD, whatever its `Content-Length` says (a `HEAD`'s gives the length a
    /// `GET` would get, RFC 9110 9.3.2). NIO's decoder reads none for those.
    static func hasBody(status: Int, answeringHEAD: Bool) -> Bool {
        !answeringHEAD && status >= 200 && status != 204 && status != 304
    }

    /// What this response's body holds, for a task's progress: 0 when it has none
    /// (``hasBody(status:answeringHEAD:)``), else ``expectedBodyLength``, -1 when unknown.
    func expectedBodyLength(status: Int, answeringHEAD: Bool) -> Int64 {
        Self.hasBody(status: status, answeringHEAD: answeringHEAD) ? self.expectedBodyLength ?? -1 : 0
    }
}

extension HTTPFields {
    /// The names the `Connection` fields list (connection options, RFC 9110 7.6.1), for the
    /// fields a hop leaves out; empty at once when there is no `Connection` field, as there
    /// rarely is.
    var connectionOptions: Set<HTTPField.Name> {
        guard self.contains(.connection) else { return [] }
        var names: Set<HTTPField.Name> = []
        for value in self[values: .connection] {
            for option in value.split(separator: ",") {
                if let name = HTTPField.Name(option.trimmingSpaces()) { names.insert(name) }
            }
        }
        return names
    }

    /// The value `self[name]` gives (a repeated field's values joined), without what that costs
    /// when the field appears once or not at all: swift-http-types' subscript joins the values
    /// through a lazy sequence even for one field, which made reading `Content-Length` about
    /// 2 µs of every request.
    func value(of name: HTTPField.Name) -> String? {
        var found: String?
        for field in self where field.name == name {
            // Repeated: the subscript's joining (with `; ` for cookies) is the answer.
            if found != nil { return self[name] }
            found = field.value
        }
        return found
    }
}

/// The parameters of a media type (`text/plain; charset="utf-8"`), read as RFC 9110 sections
/// 5.6.6 and 8.3.1 have them, leniently: a parameter without `=` is skipped, white space around
/// names and `=` is allowed, and an unterminated quoted string runs to the end.
enum MediaTypeParameters {
    /// The value of the first parameter called `name` (lower-case ASCII), unquoted; nil when there
    /// is none.
    static func value(of name: StaticString, in field: String) -> String? {
        let bytes = Array(field.utf8)
        let semicolon = UInt8(ascii: ";"), equals = UInt8(ascii: "=")
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        let wanted = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        // The type and subtype end at the first `;`; each parameter follows one.
        var index = bytes.firstIndex(of: semicolon) ?? bytes.count
        while index < bytes.count {
            index += 1
            let nameStart = index
            while index < bytes.count, bytes[index] != equals, bytes[index] != semicolon { index += 1 }
            guard index < bytes.count, bytes[index] == equals else { continue }
            var parameterName = bytes[nameStart..<index]
            while let first = parameterName.first, isSpace(first) { parameterName = parameterName.dropFirst() }
            while let last = parameterName.last, isSpace(last) { parameterName = parameterName.dropLast() }
            index += 1
            while index < bytes.count, isSpace(bytes[index]) { index += 1 }
            let value: String
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                let quoted = HTTPToken.quotedString(bytes, openingAt: index)
                value = quoted.value
                index = quoted.end
                while index < bytes.count, bytes[index] != semicolon { index += 1 }
            } else {
                let start = index
                while index < bytes.count, bytes[index] != semicolon { index += 1 }
                var end = index
                while end > start, isSpace(bytes[end - 1]) { end -= 1 }
                value = String(decoding: bytes[start..<end], as: UTF8.self)
            }
            if parameterName.elementsEqual(wanted, by: { $0.lowercasedASCII == $1 }) { return value }
        }
        return nil
    }
}
