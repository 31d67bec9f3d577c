import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Indents XML with Foundation's `XMLDocument` and colours the markup.
struct XMLFormatter {
    let style: OutputStyle

    /// The formatted text with a final line break, or nil when `data` is not well-formed XML.
    func format(_ data: Data) -> String? {
        var text: String
        if self.style.format {
            // Entities are shown as written, never loaded: with no options, libxml2 under
            // FoundationXML substitutes them, reading the files and fetching the URLs a server's
            // `<!ENTITY x SYSTEM "file:///…">` names (and a parameter entity can send a file's
            // text to a server of its choosing).
            guard let document = try? XMLDocument(data: data, options: [.nodeLoadExternalEntitiesNever]) else { return nil }
            text = document.xmlString(options: [.nodePrettyPrint])
        } else {
            guard let raw = String(data: data, encoding: .utf8) else { return nil }
            text = raw
        }
        if self.style.colors { text = Self.colorMarkup(text, style: self.style) }
        return text.hasSuffix("\n") ? text : text + "\n"
    }

    /// Paints every `<…>` tag, leaving text content alone.
    private static func colorMarkup(_ text: String, style: OutputStyle) -> String {
        var output = ""
        var tag = ""
        var inTag = false
        for character in text {
            if character == "<" && !inTag {
                inTag = true
                tag = "<"
            } else if inTag {
                tag.append(character)
                if character == ">" {
                    inTag = false
                    output += style.paint(tag, .blue)
                }
            } else {
                output.append(character)
            }
        }
        return output + tag
    }
}
