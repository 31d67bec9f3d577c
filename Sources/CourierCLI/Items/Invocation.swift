import Courier
import Foundation

/// The positional words split into method, URL and items.
struct Invocation: Sendable {
    /// The method named on the command line, if any (otherwise GET, or POST when there is data).
    var method: HTTPRequest.Method?
    /// The URL, with HTTPie's shorthands expanded (`:8080/x` is `http://localhost:8080/x`, `:` is
    /// `http://localhost`, `://example.org` is `http://example.org`, no scheme means `http://`).
    var url: URL
    /// The items, in command-line order.
    var items: [RequestItem]

    /// The method to send: the named one, else POST when any item is data, else GET.
    var effectiveMethod: HTTPRequest.Method {
        self.method ?? (self.items.contains(where: \.isData) ? .post : .get)
    }

    /// - Throws: ``CLIFailure`` (usage) for a missing or bad URL, a bad method or a malformed item.
    init(parsing words: [String]) throws(CLIFailure) {
        guard let first = words.first else { throw CLIFailure.usage("missing URL: courier [METHOD] URL [ITEM ...]") }
        var rest = words.dropFirst()
        // The first word is the method when it is a known one (any case) and a URL follows, or
        // when it is letters only and the next word is not an item (a custom method).
        if first.allSatisfy(\.isLetter), let second = rest.first,
            Self.isKnownMethod(first) || !RequestItem.looksLikeItem(second)
        {
            guard let method = HTTPRequest.Method(first.uppercased()) else {
                throw CLIFailure.usage("'\(first)' is not a valid method")
            }
            self.method = method
            self.url = try Self.url(from: second)
            rest = rest.dropFirst()
        } else {
            self.method = nil
            self.url = try Self.url(from: first)
        }
        var items: [RequestItem] = []
        for word in rest { items.append(try RequestItem(parsing: word)) }
        self.items = items
    }

    /// Whether an item `Name:` (HTTPie's way to drop a field) names `name`, in any case.
    func drops(_ name: String) -> Bool {
        let lowercased = name.lowercased()
        return self.items.contains { item in
            if case .header(let itemName, nil) = item { itemName.lowercased() == lowercased } else { false }
        }
    }

    private static func isKnownMethod(_ word: String) -> Bool {
        ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"].contains(word.uppercased())
    }

    /// Expands HTTPie's shorthands and checks that the URL is absolute http(s) with a host.
    static func url(from word: String) throws(CLIFailure) -> URL {
        var text = word
        // A URL pasted after its scheme and a space: `://example.org` → `http://example.org`.
        if text.hasPrefix("://") { text.removeFirst(3) }
        if text.hasPrefix(":"), !text.hasPrefix("::") {
            // `:3000/path` → `http://localhost:3000/path`; `:/path` → `http://localhost/path`;
            // `:` → `http://localhost`.
            let rest = text.dropFirst()
            let port = String(rest.prefix { $0.isASCII && $0.isNumber })
            let path = String(rest.dropFirst(port.count))
            text = "http://localhost" + (port.isEmpty ? "" : ":" + port) + path
        } else if !Self.startsWithScheme(text) {
            text = "http://" + text
        }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
            let host = url.host, !host.isEmpty
        else {
            throw CLIFailure.usage("'\(word)' is not a valid URL")
        }
        guard ["http", "https", "http+unix", "https+unix"].contains(scheme) else {
            throw CLIFailure.usage("'\(word)': only http, https, http+unix and https+unix URLs are supported")
        }
        return url
    }

    /// Whether `text` starts with a scheme and `://` (HTTPie's test, `^[a-z][a-z0-9.+-]*://` in
    /// any case): a `://` further on, as in `example.com/login?next=https://example.com/`, is
    /// no scheme.
    static func startsWithScheme(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        func isLetter(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        }
        guard let first = bytes.first, isLetter(first) else { return false }
        var end = 1
        while end < bytes.count {
            let byte = bytes[end]
            guard isLetter(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            else { break }
            end += 1
        }
        return bytes[end...].starts(with: "://".utf8)
    }
}
