import Foundation
import HTTPTypes

extension Request {
    /// A curl command that sends this request (Alamofire's `cURLDescription()`), for logs and bug
    /// reports: one argument per line, each quoted for a POSIX shell.
    ///
    /// ```
    /// curl --request PUT 'https://api.example.com/items/1' \
    ///   --header 'Content-Type: application/json' \
    ///   --data-binary '{"name":"pen"}'
    /// ```
    ///
    /// `Content-Length` is left to curl. A body in memory that is UTF-8 text goes in
    /// `--data-binary`, a file body as `--data-binary @path`; a body that cannot be written on a
    /// command line (binary bytes, a stream) is left out, and a last line, a shell comment, says so.
    /// curl's command line cannot send request trailer fields (``RequestBody/trailers``): a shell
    /// comment names them.
    public func cURLDescription() -> String {
        self.cURLDescription(user: nil)
    }

    /// ``cURLDescription()`` with `--user user:password` for a credential the session would answer
    /// a Basic challenge with.
    func cURLDescription(user credential: HTTPCredential?) -> String {
        var (groups, omission) = self.cURLWords(omitting: [], includingBody: true)
        if let credential {
            let urlGroup = groups.firstIndex { $0.count == 1 && !$0[0].hasPrefix("--") } ?? 0
            groups.insert(["--user", Self.shellQuoted("\(credential.user):\(credential.password)")], at: urlGroup + 1)
        }
        // The method and the URL on the first line, then one option with its value per line.
        let urlGroup = groups.firstIndex { $0.count == 1 && !$0[0].hasPrefix("--") } ?? 0
        var lines = ["curl " + groups[...urlGroup].flatMap { $0 }.joined(separator: " ")]
        lines += groups[(urlGroup + 1)...].map { "  " + $0.joined(separator: " ") }
        var text = lines.joined(separator: " \\\n")
        if let omission { text += "\n# " + omission }
        if let trailers = self.body.trailers, !trailers.isEmpty {
            let fields = trailers.map { "\($0.name.rawName): \($0.value)" }.joined(separator: ", ")
            text += "\n# trailer fields after the body, which curl cannot send: " + fields
        }
        return text
    }

    /// The curl arguments (after `curl` itself, each quoted for a POSIX shell) that send this
    /// request: the method when curl would not choose it, the URL, the header fields, the body.
    /// - Parameters:
    ///   - fields: Header fields to leave out (`Content-Length` always is).
    ///   - includingBody: Whether to write the body. Without it, the method is still written as
    ///     curl would choose it with the body there (`POST` for a request with a body), for tools
    ///     that write the body their own way (`--form`).
    /// The body's trailer fields (``RequestBody/trailers``) are left out: curl cannot send them.
    /// - Throws: ``CourierError/Code/invalidRequest`` when the body is wanted and cannot be written
    ///   on a command line (bytes that are not UTF-8 text, a stream).
    public func cURLArguments(omitting fields: Set<HTTPField.Name> = [], includingBody: Bool = true) throws(CourierError) -> [String] {
        let (groups, omission) = self.cURLWords(omitting: fields, includingBody: includingBody)
        if let omission { throw CourierError(.invalidRequest, "\(self.summary): \(omission)", request: self) }
        return groups.flatMap { $0 }
    }

    /// The words, already quoted, an option and its value to a group, and what could not be written.
    private func cURLWords(omitting fields: Set<HTTPField.Name>, includingBody: Bool) -> (groups: [[String]], omission: String?) {
        var words: [[String]] = []
        var omission: String?
        let defaultMethod: HTTPRequest.Method = self.body.isEmpty ? .get : .post
        if self.method == .head {
            words.append(["--head"])
        } else if self.method != defaultMethod {
            words.append(["--request", Self.shellQuoted(self.method.rawValue)])
        }
        if let socket = self.url.unixSocketTarget {
            // curl has no `http+unix` URLs: its `--unix-socket`, and the name Courier sends.
            words.append(["--unix-socket", Self.shellQuoted(socket.path)])
            let origin = (socket.tls ? "https://" : "http://") + ConnectionPool.unixSocketHost
            words.append([Self.shellQuoted(origin + HopHandler.targetReadByFoundation(of: self.url))])
        } else {
            words.append([Self.shellQuoted(self.url.absoluteString)])
        }
        for field in self.headerFields where field.name != .contentLength && !fields.contains(field.name) {
            let value = field.value.isEmpty ? "\(field.name.rawName);" : "\(field.name.rawName): \(field.value)"
            words.append(["--header", Self.shellQuoted(value)])
        }
        guard includingBody else { return (words, nil) }
        switch self.body.storage {
        case .empty:
            break
        case .data(let data):
            if data.isEmpty { break }
            if let text = String(data: data, encoding: .utf8), !text.contains("\0") {
                // `--data-binary @x` reads the file x: a body that starts with `@` is sent as it is.
                words.append([text.hasPrefix("@") ? "--data-raw" : "--data-binary", Self.shellQuoted(text)])
            } else {
                omission = "the body (\(data.count) bytes) is not text; curl would need it in a file (--data-binary @file)"
            }
        case .file(let url):
            words.append(["--data-binary", Self.shellQuoted("@" + url.path)])
        case .stream, .replayableStream:
            omission = "the body is a stream; curl would need it in a file (--data-binary @file)"
        }
        return (words, omission)
    }

    /// `word` as a POSIX shell reads it back: bare when it holds only safe characters, else in
    /// single quotes.
    public static func shellQuoted(_ word: String) -> String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+,=".unicodeScalars)
        if !word.isEmpty && word.unicodeScalars.allSatisfy(safe.contains) { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
