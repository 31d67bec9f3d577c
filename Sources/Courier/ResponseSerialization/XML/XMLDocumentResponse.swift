import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

// `XMLDocument` exists on Linux (FoundationXML) and macOS only; iOS, tvOS and watchOS have none.
#if canImport(FoundationXML) || os(macOS)

/// An XML document parsed by ``XMLDocumentResponseSerializer``, handed across threads safely.
///
/// `XMLDocument` is a mutable class, so it cannot be shared. The first call of ``document()``
/// takes the document the serializer parsed (no second parse); any later call, from any copy of
/// this value, parses ``data`` again and returns a document of its own. Each caller therefore owns
/// what it gets and may mutate it freely.
public struct XMLDocumentResponse: Sendable {
    /// The XML bytes.
    public let data: Data
    /// The options the document was parsed with.
    public let options: XMLNode.Options
    private let storage: Storage

    init(data: Data, options: XMLNode.Options, document: XMLDocument) {
        self.data = data
        self.options = options
        self.storage = Storage(document)
    }

    /// The parsed document, yours alone: the one the serializer made the first time, a fresh parse
    /// of ``data`` after that.
    public func document() -> XMLDocument {
        if let document = self.storage.take() { return document }
        // The serializer already parsed these bytes with these options, so this cannot fail
        // unless memory runs out; an empty document is the honest fallback.
        return (try? XMLDocument(data: self.data, options: self.options)) ?? XMLDocument()
    }

    /// Holds the parsed document until one caller takes it.
    ///
    /// `@unchecked Sendable`: the only state is `document`, read and cleared under `lock`, and the
    /// document is never touched here besides being handed out once, so no two threads can reach it.
    private final class Storage: @unchecked Sendable {
        private let lock = NSLock()
        private var document: XMLDocument?

        init(_ document: XMLDocument) { self.document = document }

        func take() -> XMLDocument? {
            self.lock.lock()
            defer { self.lock.unlock() }
            let document = self.document
            self.document = nil
            return document
        }
    }
}
#endif
