import Courier
import Foundation

/// The request to send, with what the printers need to show it.
struct BuiltRequest: Sendable {
    /// How the body was made.
    enum BodyKind: Sendable, Equatable {
        case none
        case json
        case form
        case multipart
    }

    var request: Request
    var bodyKind: BodyKind
    /// The items the request was built from, in order (the curl printer writes `-F` from them).
    var items: [RequestItem]
}

/// Turns the command's flags and items into a ``Request`` with Courier's serializers.
struct RequestBuilder {
    let command: RequestCommand
    let invocation: Invocation

    init(command: RequestCommand, invocation: Invocation) {
        self.command = command
        self.invocation = invocation
    }

    func build() async throws -> BuiltRequest {
        let items = self.invocation.items
        let kind = try self.bodyKind()
        let method = self.invocation.effectiveMethod
        let urlString = Self.appendingQuery(items, to: self.invocation.url)

        var serializer = HTTPRequestSerializer()
        // The command's own identity and nothing locale-dependent, so that output is reproducible.
        serializer.setValue(CourierVersion.userAgent, forHTTPHeaderField: "User-Agent")
        serializer.setValue(nil, forHTTPHeaderField: "Accept-Language")
        if let timeout = self.command.timeout { serializer.timeoutInterval = timeout }
        if let auth = self.command.auth {
            guard let colon = auth.firstIndex(of: ":") else {
                throw CLIFailure.usage("--auth needs user:password")
            }
            serializer.setAuthorizationHeaderField(username: String(auth[..<colon]), password: String(auth[auth.index(after: colon)...]))
        }
        if let bearer = self.command.bearer { serializer.setValue("Bearer " + bearer, forHTTPHeaderField: "Authorization") }

        var request: Request
        do {
            switch kind {
            case .multipart:
                try self.checkFiles()
                let fields = try self.formFields()
                request = try serializer.multipartFormRequest(method: method, urlString: urlString, parameters: nil) { form in
                    for item in items {
                        switch item {
                        case .file(let name, let path, let mimeType):
                            let url = URL(fileURLWithPath: path)
                            if let mimeType {
                                try form.appendPart(withFileURL: url, name: name, fileName: url.lastPathComponent, mimeType: mimeType)
                            } else {
                                try form.appendPart(withFileURL: url, name: name)
                            }
                        case .field(let name, _), .fieldFromFile(let name, _):
                            form.appendPart(withForm: Data((fields[name] ?? "").utf8), name: name)
                        default:
                            break
                        }
                    }
                }
            case .json, .form, .none:
                request = try serializer.request(method: method, urlString: urlString, parameters: nil)
                if kind == .json || self.command.json {
                    request.setValue("application/json, */*;q=0.5", forHTTPHeaderField: "Accept")
                }
                if kind == .json {
                    request.body = .data(try self.jsonBody())
                    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                } else if kind == .form {
                    request.body = .data(Data(try self.formBody().utf8))
                    request.setValue("application/x-www-form-urlencoded; charset=utf-8", forHTTPHeaderField: "Content-Type")
                }
            }
        } catch let error as CourierError {
            throw Self.failure(for: error)
        }
        for item in items {
            switch item {
            case .header(let name, let value): request.setValue(value, forHTTPHeaderField: name)
            case .emptyHeader(let name): request.setValue("", forHTTPHeaderField: name)
            default: break
            }
        }
        return BuiltRequest(request: request, bodyKind: kind, items: items)
    }

    /// JSON unless `--form` or `--multipart` say otherwise; any file item makes it multipart.
    private func bodyKind() throws(CLIFailure) -> BuiltRequest.BodyKind {
        let items = self.invocation.items
        let hasFiles = items.contains { if case .file = $0 { true } else { false } }
        let hasRawJSON = items.contains {
            switch $0 {
            case .rawJSON, .rawJSONFromFile: true
            default: false
            }
        }
        if hasFiles || self.command.multipart {
            if hasRawJSON { throw CLIFailure.usage("raw JSON items (:=) cannot go in a multipart form") }
            return .multipart
        }
        let hasData = items.contains(where: \.isData)
        if self.command.form {
            if hasRawJSON { throw CLIFailure.usage("raw JSON items (:=) cannot go in a form; drop --form") }
            return hasData ? .form : .none
        }
        return hasData ? .json : .none
    }

    /// `url` with the `name==value` items appended to its query, in order.
    static func appendingQuery(_ items: [RequestItem], to url: URL) -> String {
        let pairs = items.compactMap { item -> String? in
            guard case .query(let name, let value) = item else { return nil }
            return HTTPRequestSerializer.percentEscaped(name) + "=" + HTTPRequestSerializer.percentEscaped(value)
        }
        guard !pairs.isEmpty else { return url.absoluteString }
        var text = url.absoluteString
        var fragment = ""
        if let hash = text.firstIndex(of: "#") {
            fragment = String(text[hash...])
            text = String(text[..<hash])
        }
        let joiner = text.contains("?") ? (text.hasSuffix("?") || text.hasSuffix("&") ? "" : "&") : "?"
        return text + joiner + pairs.joined(separator: "&") + fragment
    }

    /// The string fields, files read, by name (a later item wins).
    private func formFields() throws(CLIFailure) -> [String: String] {
        var fields: [String: String] = [:]
        for item in self.invocation.items {
            switch item {
            case .field(let name, let value): fields[name] = value
            case .fieldFromFile(let name, let path): fields[name] = try Self.text(ofFile: path)
            default: break
            }
        }
        return fields
    }

    /// `a=1&b=2`, in item order, escaped as AFNetworking escapes query strings.
    private func formBody() throws(CLIFailure) -> String {
        var pairs: [String] = []
        for item in self.invocation.items {
            switch item {
            case .field(let name, let value):
                pairs.append(HTTPRequestSerializer.percentEscaped(name) + "=" + HTTPRequestSerializer.percentEscaped(value))
            case .fieldFromFile(let name, let path):
                pairs.append(HTTPRequestSerializer.percentEscaped(name) + "=" + HTTPRequestSerializer.percentEscaped(try Self.text(ofFile: path)))
            default:
                break
            }
        }
        return pairs.joined(separator: "&")
    }

    /// A JSON object of the data fields in item order (a repeated name keeps its first place and
    /// its last value), strings escaped, raw JSON kept as written.
    private func jsonBody() throws(CLIFailure) -> Data {
        var order: [String] = []
        var values: [String: String] = [:]
        for item in self.invocation.items {
            let entry: (String, String)?
            switch item {
            case .field(let name, let value): entry = (name, JSONText.quoted(value))
            case .fieldFromFile(let name, let path): entry = (name, JSONText.quoted(try Self.text(ofFile: path)))
            case .rawJSON(let name, let json): entry = (name, json)
            case .rawJSONFromFile(let name, let path):
                let json = try Self.text(ofFile: path).trimmingCharacters(in: .whitespacesAndNewlines)
                try RequestItem.checkJSON(json, item: "\(name):=@\(path)")
                entry = (name, json)
            default: entry = nil
            }
            guard let (name, value) = entry else { continue }
            if values[name] == nil { order.append(name) }
            values[name] = value
        }
        let members = order.map { JSONText.quoted($0) + ": " + values[$0]! }
        return Data(("{" + members.joined(separator: ", ") + "}").utf8)
    }

    /// Every file item must name a readable regular file: checked before anything is sent.
    private func checkFiles() throws(CLIFailure) {
        for item in self.invocation.items {
            if case .file(_, let path, _) = item { try Self.checkReadable(path) }
        }
    }

    static func checkReadable(_ path: String) throws(CLIFailure) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CLIFailure(.unreadableInput, "cannot read '\(path)': no such file")
        }
        guard !isDirectory.boolValue else { throw CLIFailure(.unreadableInput, "cannot read '\(path)': it is a directory") }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw CLIFailure(.unreadableInput, "cannot read '\(path)': permission denied")
        }
    }

    /// A file's contents as UTF-8 text.
    static func text(ofFile path: String) throws(CLIFailure) -> String {
        try Self.checkReadable(path)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIFailure(.unreadableInput, "cannot read '\(path)'")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CLIFailure(.unreadableInput, "'\(path)' is not UTF-8 text")
        }
        return text
    }

    /// A library error met while building: a file problem is unreadable input, the rest usage.
    static func failure(for error: CourierError) -> CLIFailure {
        switch error.code {
        case .bodyReadFailed, .fileSystemFailure: CLIFailure(.unreadableInput, error.message)
        default: CLIFailure(.usage, error.message)
        }
    }
}
