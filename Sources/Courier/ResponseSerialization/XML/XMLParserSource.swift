import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

/// A well-formed XML body, checked by ``XMLParserResponseSerializer``, from which you make
/// `XMLParser`s.
public struct XMLParserSource: Sendable, Hashable {
    /// The XML bytes.
    public let data: Data

    /// A body known to be well-formed; the serializer made the check.
    init(data: Data) {
        self.data = data
    }

    /// A new parser over the body, not yet started: set its delegate and call `parse()`.
    public func makeParser() -> XMLParser {
        XMLParser(data: self.data)
    }
}
