import Foundation

/// Re-indents JSON text (four spaces, HTTPie's layout) and colours it, keeping the document's own
/// key order and number spelling: it walks the text, it does not re-encode values.
struct JSONFormatter {
    let style: OutputStyle

    /// The formatted text with a final line break, or nil when `data` is not JSON.
    func format(_ data: Data) -> String? {
        guard (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) != nil,
            let text = String(data: data, encoding: .utf8)
        else { return nil }
        let indentUnit = self.style.format ? "    " : ""
        let newline = self.style.format ? "\n" : ""
        var output = ""
        var depth = 0
        let scalars = Array(text.unicodeScalars)
        var index = 0

        func indent() -> String { String(repeating: indentUnit, count: depth) }
        func nextSignificant(after position: Int) -> Unicode.Scalar? {
            var cursor = position
            while cursor < scalars.count {
                if !Self.isWhitespace(scalars[cursor]) { return scalars[cursor] }
                cursor += 1
            }
            return nil
        }

        while index < scalars.count {
            let scalar = scalars[index]
            switch scalar {
            case "\"":
                var end = index + 1
                while end < scalars.count && scalars[end] != "\"" {
                    end += scalars[end] == "\\" ? 2 : 1
                }
                var literal = String.UnicodeScalarView()
                literal.append(contentsOf: scalars[index...min(end, scalars.count - 1)])
                let isKey = nextSignificant(after: end + 1) == ":"
                output += self.style.paint(String(literal), isKey ? .blue : .yellow)
                index = end + 1
                continue
            case "{", "[":
                let closing: Unicode.Scalar = scalar == "{" ? "}" : "]"
                if nextSignificant(after: index + 1) == closing {
                    output += String(scalar) + String(closing)
                    var cursor = index + 1
                    while scalars[cursor] != closing { cursor += 1 }
                    index = cursor + 1
                    continue
                }
                depth += 1
                output += String(scalar) + newline + indent()
            case "}", "]":
                depth -= 1
                output += newline + indent() + String(scalar)
            case ",":
                output += "," + (self.style.format ? newline + indent() : "")
            case ":":
                output += self.style.format ? ": " : ":"
            case _ where Self.isWhitespace(scalar):
                if !self.style.format { output.unicodeScalars.append(scalar) }
            default:
                var end = index
                while end < scalars.count, !Self.isDelimiter(scalars[end]) { end += 1 }
                var literal = String.UnicodeScalarView()
                literal.append(contentsOf: scalars[index..<end])
                let word = String(literal)
                output += self.style.paint(word, ["true", "false", "null"].contains(word) ? .magenta : .cyan)
                index = end
                continue
            }
            index += 1
        }
        return output + "\n"
    }

    private static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar == " " || scalar == "\n" || scalar == "\r" || scalar == "\t"
    }

    private static func isDelimiter(_ scalar: Unicode.Scalar) -> Bool {
        Self.isWhitespace(scalar) || ",:]}[{\"".unicodeScalars.contains(scalar)
    }
}
