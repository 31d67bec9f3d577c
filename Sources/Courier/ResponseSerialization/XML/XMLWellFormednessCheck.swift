import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Checks that bytes are one well-formed XML document with `XMLParser`.
///
/// `XMLParser.parse()` on Linux returns `true` for some malformed input (`<a><b></a>`, an
/// unterminated `<a>`, an empty document), so the delegate's error and the element balance are
/// checked too.
final class XMLWellFormednessCheck: NSObject, XMLParserDelegate {
    private var depth = 0
    private var deepest = 0
    private var sawRoot = false
    private var rootClosed = false
    private var error: (any Error)?

    /// The parse error, or a description of what is wrong, or `nil` for a well-formed document.
    static func problem(in data: Data) -> (any Error)? {
        self.check(data).problem
    }

    /// ``problem(in:)``, and how deep the elements were nested (1 for a lone root).
    static func check(_ data: Data) -> (problem: (any Error)?, depth: Int) {
        let check = XMLWellFormednessCheck()
        let parser = XMLParser(data: data)
        parser.delegate = check
        parser.shouldResolveExternalEntities = false
        let finished = parser.parse()
        let problem: (any Error)? =
            if let error = check.error ?? parser.parserError { error }
            else if !finished { XMLProblem(description: "the XML parser stopped early") }
            else if !check.sawRoot { XMLProblem(description: "the document has no root element") }
            else if !check.rootClosed || check.depth != 0 { XMLProblem(description: "the root element is not closed") }
            else { nil }
        return (problem, check.deepest)
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName qName: String?,
        attributes attributeDict: [String: String] = [:]
    ) {
        if self.rootClosed {
            self.fail(parser, XMLProblem(description: "content after the root element"))
            return
        }
        self.sawRoot = true
        self.depth += 1
        self.deepest = max(self.deepest, self.depth)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        self.depth -= 1
        if self.depth == 0 { self.rootClosed = true }
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        if self.error == nil { self.error = parseError }
    }

    func parser(_ parser: XMLParser, validationErrorOccurred validationError: any Error) {
        if self.error == nil { self.error = validationError }
    }

    private func fail(_ parser: XMLParser, _ error: any Error) {
        if self.error == nil { self.error = error }
        parser.abortParsing()
    }
}

/// What the well-formedness check found wrong, when the parser itself reported nothing.
struct XMLProblem: Error, CustomStringConvertible {
    var description: String
}
