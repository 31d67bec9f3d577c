import Foundation

/// One `ITEM` of the command line, in HTTPie's grammar.
///
/// The separator is the one that starts earliest in the word (the longest one when several start
/// at the same place). A backslash before a separator's character (`:`, `;`, `=`, `@`) makes it
/// literal, in the name and in the value alike, as HTTPie reads it: `a\=b=c` is the field `a=b`
/// with the value `c`, and `a=\@b` the field `a` with the value `@b`. Before any other character the
/// backslash stays: `path=C:\Users` keeps it.
enum RequestItem: Equatable, Sendable {
    /// `name==value`: a query parameter.
    case query(name: String, value: String)
    /// `name==@file`: a query parameter whose value is the file's text, trailing line feeds removed.
    case queryFromFile(name: String, path: String)
    /// `name=value`: a data field (a JSON string, or a form field).
    case field(name: String, value: String)
    /// `name=@file`: a data field whose value is the file's text.
    case fieldFromFile(name: String, path: String)
    /// `name:=json`: a raw JSON value (validated).
    case rawJSON(name: String, json: String)
    /// `name:=@file`: a raw JSON value read from a file.
    case rawJSONFromFile(name: String, path: String)
    /// `Header:value`; `Header:` (no value) removes a header the command would send.
    case header(name: String, value: String?)
    /// `Header;`: a header sent with an empty value.
    case emptyHeader(name: String)
    /// `Header:@file`: a header whose value is the file's text, trailing line feeds removed.
    case headerFromFile(name: String, path: String)
    /// `field@path` or `field@path;type=mime`: a file, which makes a `--form` request multipart
    /// (without `--form` or `--multipart` it is a usage error, as in HTTPie).
    case file(name: String, path: String, mimeType: String?)
    /// `@path` or `@path;type=mime` (no name): the file is the whole body, as HTTPie's "request
    /// data from a filename".
    case bodyFile(path: String, mimeType: String?)

    /// Whether the item puts something in the body.
    var isData: Bool {
        switch self {
        case .field, .fieldFromFile, .rawJSON, .rawJSONFromFile, .file, .bodyFile: true
        case .query, .queryFromFile, .header, .emptyHeader, .headerFromFile: false
        }
    }

    /// The separators, longest first so that a tie on position goes to the longer one.
    private static let separators: [(String, Kind)] = [
        ("==@", .queryFromFile), (":=@", .rawJSONFromFile), ("==", .query), (":=", .rawJSON), (":@", .headerFromFile),
        ("=@", .fieldFromFile), ("=", .field), (":", .header), (";", .emptyHeader), ("@", .file),
    ]

    private enum Kind: Equatable {
        case query, queryFromFile, field, fieldFromFile, rawJSON, rawJSONFromFile, header, emptyHeader, headerFromFile, file
    }

    /// Whether `word` reads as an item (has an unescaped separator after a non-empty name).
    static func looksLikeItem(_ word: String) -> Bool {
        (try? RequestItem(parsing: word)) != nil
    }

    /// Parses one word.
    /// - Throws: ``CLIFailure`` (usage) naming the word and what is wrong with it.
    init(parsing word: String) throws(CLIFailure) {
        let characters = Array(word)
        var name = ""
        var index = 0
        while index < characters.count {
            let character = characters[index]
            if character == "\\", index + 1 < characters.count {
                let next = characters[index + 1]
                if !Self.separatorCharacters.contains(next) { name.append(character) }
                name.append(next)
                index += 2
                continue
            }
            if let (separator, kind) = Self.separator(in: characters, at: index) {
                let value = Self.unescaped(characters[(index + separator.count)...])
                self = try Self.make(kind, name: name, value: value, word: word)
                return
            }
            name.append(character)
            index += 1
        }
        throw CLIFailure.usage(
            "'\(word)' is not a request item (expected name==value, name=value, name:=json, Header:value or field@file)")
    }

    /// The characters the separators are made of: a backslash before one of them makes it literal.
    private static let separatorCharacters: Set<Character> = [":", ";", "=", "@"]

    /// A value with each backslash before a separator's character dropped (HTTPie drops them in
    /// the value too); a backslash before anything else, or at the end, stays.
    private static func unescaped(_ characters: ArraySlice<Character>) -> String {
        var value = ""
        var index = characters.startIndex
        while index < characters.endIndex {
            let character = characters[index]
            if character == "\\", index + 1 < characters.endIndex, Self.separatorCharacters.contains(characters[index + 1]) {
                value.append(characters[index + 1])
                index += 2
                continue
            }
            value.append(character)
            index += 1
        }
        return value
    }

    private static func separator(in characters: [Character], at index: Int) -> (String, Kind)? {
        for (separator, kind) in Self.separators {
            let end = index + separator.count
            if end <= characters.count, String(characters[index..<end]) == separator { return (separator, kind) }
        }
        return nil
    }

    private static func make(_ kind: Kind, name: String, value: String, word: String) throws(CLIFailure) -> RequestItem {
        if kind == .file, name.isEmpty {
            guard !value.isEmpty else { throw CLIFailure.usage("'\(word)' names no file after '@'") }
            let (path, mimeType) = try Self.pathAndType(value, word: word)
            return .bodyFile(path: path, mimeType: mimeType)
        }
        guard !name.isEmpty else { throw CLIFailure.usage("'\(word)' has no name before its separator") }
        switch kind {
        case .query: return .query(name: name, value: value)
        case .queryFromFile:
            guard !value.isEmpty else { throw CLIFailure.usage("'\(word)' names no file after '==@'") }
            return .queryFromFile(name: name, path: Self.expandingTilde(value))
        case .field: return .field(name: name, value: value)
        case .fieldFromFile:
            guard !value.isEmpty else { throw CLIFailure.usage("'\(word)' names no file after '=@'") }
            return .fieldFromFile(name: name, path: Self.expandingTilde(value))
        case .rawJSON:
            try Self.checkJSON(value, item: word)
            return .rawJSON(name: name, json: value.trimmingCharacters(in: .whitespacesAndNewlines))
        case .rawJSONFromFile:
            guard !value.isEmpty else { throw CLIFailure.usage("'\(word)' names no file after ':=@'") }
            return .rawJSONFromFile(name: name, path: Self.expandingTilde(value))
        case .header:
            try Self.checkHeaderName(name, item: word)
            return .header(name: name, value: value.isEmpty ? nil : value.trimmingCharacters(in: .whitespaces))
        case .emptyHeader:
            guard value.isEmpty else {
                throw CLIFailure.usage("'\(word)': write 'Header;' for an empty header, or 'Header:value'")
            }
            try Self.checkHeaderName(name, item: word)
            return .emptyHeader(name: name)
        case .headerFromFile:
            guard !value.isEmpty else { throw CLIFailure.usage("'\(word)' names no file after ':@'") }
            try Self.checkHeaderName(name, item: word)
            return .headerFromFile(name: name, path: Self.expandingTilde(value))
        case .file:
            guard !value.isEmpty else { throw CLIFailure.usage("'\(word)' names no file after '@'") }
            let (path, mimeType) = try Self.pathAndType(value, word: word)
            return .file(name: name, path: path, mimeType: mimeType)
        }
    }

    /// `path` or `path;type=mime`, the path's `~` expanded.
    private static func pathAndType(_ value: String, word: String) throws(CLIFailure) -> (path: String, mimeType: String?) {
        guard let range = value.range(of: ";type=") else { return (Self.expandingTilde(value), nil) }
        let mime = String(value[range.upperBound...])
        guard !mime.isEmpty else { throw CLIFailure.usage("'\(word)' has an empty ';type='") }
        return (Self.expandingTilde(String(value[..<range.lowerBound])), mime)
    }

    /// A file path as HTTPie opens it: a `~` or `~user` that starts it names that home folder. A
    /// shell expands neither after `@` or `=@` (`cv@~/cv.pdf`, HTTPie's own example), so the
    /// file was looked for in a folder named `~`.
    static func expandingTilde(_ path: String) -> String {
        path.hasPrefix("~") ? NSString(string: path).expandingTildeInPath : path
    }

    /// Checks that `text` is one JSON value.
    static func checkJSON(_ text: String, item: String) throws(CLIFailure) {
        do {
            _ = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        } catch {
            throw CLIFailure.usage("'\(item)': the value after ':=' is not valid JSON")
        }
    }

    private static func checkHeaderName(_ name: String, item: String) throws(CLIFailure) {
        let token = CharacterSet(charactersIn: "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        guard name.unicodeScalars.allSatisfy(token.contains) else {
            throw CLIFailure.usage("'\(item)': '\(name)' is not a valid header name")
        }
    }
}
