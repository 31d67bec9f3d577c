import Foundation

/// Writes a body: indented and coloured JSON or XML when the style asks for it, a note instead of
/// binary bytes on a terminal, the bytes untouched otherwise.
struct BodyRenderer {
    let style: OutputStyle
    let console: Console

    func render(_ data: Data, contentType: String?) {
        if self.style.format || self.style.colors {
            let media = MediaKind(contentType: contentType, body: data)
            switch media {
            case .json:
                if let text = JSONFormatter(style: self.style).format(data) {
                    self.console.write(text)
                    return
                }
            case .xml:
                if let text = XMLFormatter(style: self.style).format(data) {
                    self.console.write(text)
                    return
                }
            case .other:
                break
            }
        }
        if self.style.terminal && BinaryCheck.isBinary(data) {
            self.console.write(BinaryCheck.note)
            return
        }
        self.console.write(data)
    }
}

/// Which formatter a body goes to.
enum MediaKind: Equatable {
    case json
    case xml
    case other

    init(contentType: String?, body: Data) {
        let media = contentType?.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        if media == "application/json" || media == "text/json" || media.hasSuffix("+json") || media == "application/javascript" && Self.startsLikeJSON(body) {
            self = .json
        } else if media == "application/xml" || media == "text/xml" || media.hasSuffix("+xml") {
            self = .xml
        } else if media.isEmpty || media == "text/plain", Self.startsLikeJSON(body) {
            self = .json
        } else {
            self = .other
        }
    }

    private static func startsLikeJSON(_ body: Data) -> Bool {
        guard let first = body.first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) else { return false }
        return first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
    }
}

/// HTTPie's rule for what not to print on a terminal.
enum BinaryCheck {
    static let note = """
        +-----------------------------------------+
        | NOTE: binary data not shown in terminal |
        +-----------------------------------------+
        """

    /// A NUL byte, or bytes that are not UTF-8, in the first 4 KiB. When the 4 KiB are only the
    /// start of the body, a character cut at their end (up to 3 bytes) is not counted.
    static func isBinary(_ data: Data) -> Bool {
        let prefix = data.prefix(4096)
        if prefix.contains(0) { return true }
        let cuttable = prefix.count < data.count ? min(3, prefix.count) : 0
        return !(0...cuttable).contains { String(data: prefix.dropLast($0), encoding: .utf8) != nil }
    }
}
