/// One challenge of a `WWW-Authenticate` field (RFC 9110 §11.6.1): a scheme with either
/// parameters or a token68.
public struct HTTPChallenge: Sendable, Hashable {
    /// The scheme as the server wrote it (`Basic`, `Digest`, `Bearer`…); compare with ``hasScheme(_:)``.
    public var scheme: String
    /// The parameters, names lower-cased, quoted values unquoted.
    public var parameters: [String: String]
    /// The token68 form's value, when the challenge had one instead of parameters.
    public var token68: String?

    /// A challenge.
    public init(scheme: String, parameters: [String: String] = [:], token68: String? = nil) {
        self.scheme = scheme
        self.parameters = parameters
        self.token68 = token68
    }

    /// The `realm` parameter.
    public var realm: String? { self.parameters["realm"] }

    /// Whether the scheme is `name`, ignoring ASCII case (a scheme is a token: U+212A KELVIN SIGN
    /// is not `k` here).
    public func hasScheme(_ name: String) -> Bool { self.scheme.lowercasedASCII.utf8.elementsEqual(name.lowercasedASCII.utf8) }

    /// The challenges of one or more `WWW-Authenticate` field values, in order. What does not
    /// parse is skipped, never guessed at.
    public static func parse(_ fieldValues: some Sequence<String>) -> [HTTPChallenge] {
        fieldValues.flatMap { value in
            var parser = ChallengeParser(Array(value.utf8))
            return parser.challenges()
        }
    }
}

/// A parser of the challenge list grammar: `#challenge`, where a challenge is
/// `auth-scheme [ 1*SP ( token68 / #auth-param ) ]`.
private struct ChallengeParser {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func challenges() -> [HTTPChallenge] {
        var result: [HTTPChallenge] = []
        while true {
            self.skip(while: Self.isSeparator)
            guard let scheme = self.token() else { return result }
            // A scheme ends at a blank, a comma or the end: `realm=x` here is a parameter with no
            // scheme before it, and the rest does not parse.
            if let next = self.peek, !Self.isSeparator(next) { return result }
            var challenge = HTTPChallenge(scheme: scheme)
            self.skipSpaces()
            if let token68 = self.token68() {
                challenge.token68 = token68
            } else {
                // Empty list elements may come before the first parameter (RFC 9110 5.6.1.2).
                let mark = self.index
                self.skip(while: Self.isSeparator)
                if !self.startsParameter() { self.index = mark }
                while let (name, value) = self.parameter() {
                    // Each parameter name once (RFC 9110 11.2): a challenge that repeats one is
                    // malformed, and it ends the list, as in OkHttp.
                    if challenge.parameters.updateValue(value, forKey: name.lowercasedASCII) != nil { return result }
                    self.skipSpaces()
                    guard self.peek == UInt8(ascii: ",") else { break }
                    // A comma: another parameter, or the next challenge.
                    let mark = self.index
                    self.skip(while: Self.isSeparator)
                    if !self.startsParameter() {
                        self.index = mark
                        break
                    }
                }
            }
            result.append(challenge)
            // Anything left that is not a comma ends the list: the rest does not parse.
            self.skipSpaces()
            if let next = self.peek, next != UInt8(ascii: ",") { return result }
        }
    }

    var peek: UInt8? { self.index < self.bytes.count ? self.bytes[self.index] : nil }

    mutating func skip(while predicate: (UInt8) -> Bool) {
        while let byte = self.peek, predicate(byte) { self.index += 1 }
    }

    /// A blank or a comma: what separates the list's elements.
    static func isSeparator(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: ",")
    }

    mutating func skipSpaces() { self.skip { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") } }

    static func isToken68Byte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("-._~+/".utf8).contains(byte)
        }
    }

    mutating func token() -> String? {
        let start = self.index
        self.skip(while: HTTPToken.isTokenByte)
        return self.index > start ? String(decoding: self.bytes[start..<self.index], as: UTF8.self) : nil
    }

    /// A token68 stands alone: it is followed by the end, or a comma, after optional `=` padding.
    mutating func token68() -> String? {
        let start = self.index
        self.skip(while: Self.isToken68Byte)
        guard self.index > start else { return nil }
        self.skip { $0 == UInt8(ascii: "=") }
        let end = self.index
        self.skipSpaces()
        if self.peek == nil || self.peek == UInt8(ascii: ",") {
            // `name=` followed by nothing is a token68 too (padding), but `name=value` is not.
            return String(decoding: self.bytes[start..<end], as: UTF8.self)
        }
        self.index = start
        return nil
    }

    /// Whether what follows is `token BWS "="`, without consuming it.
    mutating func startsParameter() -> Bool {
        let mark = self.index
        defer { self.index = mark }
        guard self.token() != nil else { return false }
        self.skipSpaces()
        return self.peek == UInt8(ascii: "=")
    }

    mutating func parameter() -> (String, String)? {
        let mark = self.index
        guard let name = self.token() else { return nil }
        self.skipSpaces()
        guard self.peek == UInt8(ascii: "=") else {
            self.index = mark
            return nil
        }
        self.index += 1
        self.skipSpaces()
        if self.peek == UInt8(ascii: "\"") {
            guard let value = self.quotedString() else {
                self.index = mark
                return nil
            }
            return (name, value)
        }
        guard let value = self.token() else {
            self.index = mark
            return nil
        }
        return (name, value)
    }

    /// A quoted string's value; nil when it is not closed.
    mutating func quotedString() -> String? {
        let (value, end, isClosed) = HTTPToken.quotedString(self.bytes, openingAt: self.index)
        self.index = end
        return isClosed ? value : nil
    }
}
