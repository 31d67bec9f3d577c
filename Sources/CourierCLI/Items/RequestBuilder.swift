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
        /// Standard input's bytes, as they came (``StandardInput``): in memory, or streamed when large.
        case standardInput
        /// A file's bytes (`@path`), streamed from disk.
        case file
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
    /// Standard input when it was redirected and not ignored: the body (``StandardInput``).
    let input: RequestBody?

    init(command: RequestCommand, invocation: Invocation, input: RequestBody? = nil) {
        self.command = command
        self.invocation = invocation
        self.input = input
    }

    func build() async throws -> BuiltRequest {
        let items = try Self.embeddingFiles(self.invocation.items)
        let kind = try self.bodyKind()
        // A body from standard input makes the request a POST unless a method is named, as data does.
        let method = self.invocation.method ?? (kind == .standardInput ? .post : self.invocation.effectiveMethod)
        let urlString = Self.appendingQuery(items, to: self.invocation.url)

        var serializer = HTTPRequestSerializer()
        // The command's own identity and nothing locale-dependent, so that output is reproducible.
        serializer.setValue(CourierVersion.userAgent, forHTTPHeaderField: "User-Agent")
        serializer.setValue(nil, forHTTPHeaderField: "Accept-Language")
        if let timeout = self.command.timeout { serializer.timeoutInterval = timeout }
        if self.command.authType == .basic, let credential = try Self.credential(self.command.auth) {
            serializer.setAuthorizationHeaderField(username: credential.user, password: credential.password)
        }
        if let bearer = self.command.bearer ?? (self.command.authType == .bearer ? self.command.auth : nil) {
            serializer.setValue("Bearer " + bearer, forHTTPHeaderField: "Authorization")
        }

        var request: Request
        do {
            switch kind {
            case .multipart:
                try self.checkFiles()
                let fields = try self.formFields()
                request = try serializer.multipartFormRequest(method: method, urlString: urlString, parameters: nil) { form in
                    for field in fields {
                        switch field.value {
                        case .text(let text):
                            form.appendPart(withForm: Data(text.utf8), name: field.name)
                        case .file(let url, let mimeType?):
                            try form.appendPart(withFileURL: url, name: field.name, fileName: url.lastPathComponent, mimeType: mimeType)
                        case .file(let url, nil):
                            try form.appendPart(withFileURL: url, name: field.name)
                        case .json:
                            break  // made text by formFields()
                        }
                    }
                }
                request.setValue(Self.anyAccept, forHTTPHeaderField: "Accept")
            case .json, .form, .none, .standardInput, .file:
                request = try serializer.request(method: method, urlString: urlString, parameters: nil)
                // HTTPie's default fields (a `Content-Type:` or `Accept:` item overrides them):
                // data sent as JSON (items, standard input unless --form, an `@path` file) or
                // `--json` ask for JSON, and the body is labelled JSON (`--json` labels it even
                // without data; a file keeps its own type), `--form` labels it a form even without
                // data; anything else asks for `*/*` and has no `Content-Type`.
                let labelledJSON = kind == .json || (kind == .standardInput && !self.command.form) || (kind == .none && self.command.json)
                let acceptsJSON = labelledJSON || kind == .file || self.command.json
                request.setValue(acceptsJSON ? Self.jsonAccept : Self.anyAccept, forHTTPHeaderField: "Accept")
                switch kind {
                case .json: request.body = .data(try self.jsonBody())
                case .form: request.body = .data(Data(try self.formBody().utf8))
                case .standardInput: request.body = self.input ?? .empty
                case .file:
                    let file = try self.fileBody()
                    request.body = file.body
                    request.setValue(file.contentType, forHTTPHeaderField: "Content-Type")
                case .none, .multipart: break
                }
                if labelledJSON {
                    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                } else if self.command.form || kind == .standardInput {
                    request.setValue("application/x-www-form-urlencoded; charset=utf-8", forHTTPHeaderField: "Content-Type")
                } else if kind == .none {
                    // The serializer labels the empty body of a POST or PUT a form; HTTPie sends no label.
                    request.setValue(nil, forHTTPHeaderField: "Content-Type")
                }
            }
        } catch let error as CourierError {
            throw Self.failure(for: error)
        }
        Self.applyHeaderItems(items, to: &request)
        if !self.command.trailer.isEmpty {
            guard kind != .none else { throw CLIFailure.usage("--trailer needs a body: data fields, a file or standard input") }
            request.body.trailers = try Self.trailerFields(self.command.trailer)
        }
        return BuiltRequest(request: request, bodyKind: kind, items: items)
    }

    /// The `Accept` HTTPie sends with JSON (data sent as JSON, or `--json`).
    static let jsonAccept = "application/json, */*;q=0.5"

    /// The `Accept` HTTPie sends otherwise (the one its HTTP library, requests, sends by default).
    static let anyAccept = "*/*"

    /// The header items, in order: the first item of a name replaces the field the command set
    /// (`User-Agent:…`), a later one of the same name adds a field, as HTTPie 3 and xh send them
    /// (`X-A:1 X-A:2` sends both); `Name:` removes every field of the name, and `Name;` is a
    /// field with an empty value.
    static func applyHeaderItems(_ items: [RequestItem], to request: inout Request) {
        // Lower-cased names an item gave a value since the last `Name:` of the name.
        var given = Set<String>()
        for item in items {
            let name: String
            let value: String?
            switch item {
            case .header(let itemName, let itemValue):
                name = itemName
                value = itemValue
            case .emptyHeader(let itemName):
                name = itemName
                value = ""
            default:
                continue
            }
            let key = name.lowercased()
            if let value, given.contains(key), let fieldName = HTTPField.Name(name) {
                request.headerFields.append(HTTPField(name: fieldName, value: value))
            } else {
                request.setValue(value, forHTTPHeaderField: name)
                if value == nil { given.remove(key) } else { given.insert(key) }
            }
        }
    }

    /// The items with each `Header:@file` and `name==@file` read into a header (an empty one when
    /// only white space is left) or a query parameter: the file's text without the line feeds
    /// that end it, as HTTPie reads them.
    static func embeddingFiles(_ items: [RequestItem]) throws(CLIFailure) -> [RequestItem] {
        var embedded: [RequestItem] = []
        for item in items {
            switch item {
            case .headerFromFile(let name, let path):
                let value = try InputFile.textWithoutTrailingNewlines(path).trimmingCharacters(in: .whitespacesAndNewlines)
                embedded.append(value.isEmpty ? .emptyHeader(name: name) : .header(name: name, value: value))
            case .queryFromFile(let name, let path):
                embedded.append(.query(name: name, value: try InputFile.textWithoutTrailingNewlines(path)))
            default:
                embedded.append(item)
            }
        }
        return embedded
    }

    /// `--auth user:password` as a credential (the password may hold colons), nil without it.
    static func credential(_ auth: String?) throws(CLIFailure) -> HTTPCredential? {
        guard let auth else { return nil }
        guard let colon = auth.firstIndex(of: ":") else { throw CLIFailure.usage("--auth needs user:password") }
        return HTTPCredential(user: String(auth[..<colon]), password: String(auth[auth.index(after: colon)...]))
    }

    /// The `--trailer Name:value` fields, in order; a malformed one, or one HTTP forbids in a
    /// trailer (``RequestBody/forbiddenTrailerFieldNames``), is a usage error.
    static func trailerFields(_ flags: [String]) throws(CLIFailure) -> HTTPFields {
        var fields = HTTPFields()
        for flag in flags {
            guard let colon = flag.firstIndex(of: ":"), let name = HTTPField.Name(String(flag[..<colon])) else {
                throw CLIFailure.usage("--trailer needs Name:value, not '\(flag)'")
            }
            if RequestBody.forbiddenTrailerFieldNames.contains(name) {
                throw CLIFailure.usage("--trailer \(name.rawName): HTTP forbids this field in a trailer (RFC 9110 6.5.1)")
            }
            let value = flag[flag.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields.append(HTTPField(name: name, value: value))
        }
        return fields
    }

    /// Whether standard input is the body: when it is redirected (``StandardInput``), a method
    /// that carries a body is named (POST, PUT, PATCH or one of the user's own; not GET, HEAD,
    /// DELETE, OPTIONS, TRACE or CONNECT), no item is data and `--ignore-stdin` is not given.
    ///
    /// Narrower than HTTPie, which reads it for any request: a `while read` loop that runs
    /// `courier URL` for each line gives every run the loop's file as standard input, and the
    /// first run would send the other lines.
    static func readsStandardInput(command: RequestCommand, invocation: Invocation) -> Bool {
        guard !command.ignoreStdin, let method = invocation.method,
            !invocation.items.contains(where: \.isData)
        else { return false }
        return ![.get, .head, .delete, .options, .trace, .connect].contains(method)
    }

    /// `@path`'s file as the body, and its `Content-Type`: the item's `;type=`, else the type its
    /// extension names (as for a file field), else JSON, as HTTPie labels it.
    private func fileBody() throws(CLIFailure) -> (body: RequestBody, contentType: String) {
        for case .bodyFile(let path, let mimeType) in self.invocation.items {
            try InputFile.checkReadable(path)
            let url = URL(fileURLWithPath: path)
            let guessed = url.pathExtension.isEmpty ? nil : MultipartFormData.mimeType(forPathExtension: url.pathExtension)
            return (RequestBody.file(url), mimeType ?? guessed ?? "application/json")
        }
        return (RequestBody.empty, "application/json")
    }

    /// JSON unless `--form` or `--multipart` say otherwise; a file field makes a `--form`
    /// request multipart. Standard input's bytes, or the file of an `@path` item, are the whole
    /// body; `--multipart` with them, or data items beside `@path`, are a usage error. So is a
    /// file field (`field@path`) without `--form` or `--multipart`, as in HTTPie ("Invalid file
    /// fields (perhaps you meant --form?)"): a JSON body has no place for a file.
    private func bodyKind() throws(CLIFailure) -> BuiltRequest.BodyKind {
        let items = self.invocation.items
        if items.contains(where: { if case .bodyFile = $0 { true } else { false } }) {
            guard items.filter(\.isData).count == 1 else {
                throw CLIFailure.usage("@file is the whole body: it cannot go with data fields, file fields or another @file")
            }
            guard !self.command.form, !self.command.multipart else {
                throw CLIFailure.usage("@file is the whole body: it cannot be a form (--form, --multipart)")
            }
            return .file
        }
        let fileFields = items.compactMap { item -> String? in
            guard case .file(let name, _, _) = item else { return nil }
            return name
        }
        if !fileFields.isEmpty, !self.command.form, !self.command.multipart {
            throw CLIFailure.usage(
                "file fields need --form or --multipart (perhaps you meant --form?): " + fileFields.joined(separator: ", "))
        }
        if self.input != nil {
            if self.command.multipart {
                throw CLIFailure.usage("a body from standard input cannot be a multipart form; --ignore-stdin leaves standard input alone")
            }
            return .standardInput
        }
        if !fileFields.isEmpty || self.command.multipart { return .multipart }
        let hasData = items.contains(where: \.isData)
        if self.command.form { return hasData ? .form : .none }
        return hasData ? .json : .none
    }

    /// `url` with the `name==value` items appended to its query, in order.
    static func appendingQuery(_ items: [RequestItem], to url: URL) -> String {
        let pairs = items.compactMap { item -> String? in
            guard case .query(let name, let value) = item else { return nil }
            return Self.formPair(name, value)
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

    /// `name=value`, escaped as AFNetworking escapes query strings.
    private static func formPair(_ name: String, _ value: String) -> String {
        HTTPRequestSerializer.percentEscaped(name) + "=" + HTTPRequestSerializer.percentEscaped(value)
    }

    /// A body field of the command line, its file (if any) read once.
    private struct DataField {
        enum Value {
            /// `name=value` or `name=@file`: text.
            case text(String)
            /// `name:=json` or `name:=@file`: checked JSON text.
            case json(String)
            /// `name@path`: a file sent as a multipart part.
            case file(URL, mimeType: String?)
        }

        let name: String
        let value: Value
    }

    /// The items that go in the body, in command-line order, `=@` and `:=@` files read.
    private func dataFields() throws(CLIFailure) -> [DataField] {
        var fields: [DataField] = []
        for item in self.invocation.items {
            switch item {
            case .field(let name, let value):
                fields.append(DataField(name: name, value: .text(value)))
            case .fieldFromFile(let name, let path):
                fields.append(DataField(name: name, value: .text(try InputFile.text(path))))
            case .rawJSON(let name, let json):
                fields.append(DataField(name: name, value: .json(json)))
            case .rawJSONFromFile(let name, let path):
                let json = try InputFile.text(path).trimmingCharacters(in: .whitespacesAndNewlines)
                try RequestItem.checkJSON(json, item: "\(name):=@\(path)")
                fields.append(DataField(name: name, value: .json(json)))
            case .file(let name, let path, let mimeType):
                fields.append(DataField(name: name, value: .file(URL(fileURLWithPath: path), mimeType: mimeType)))
            case .query, .queryFromFile, .header, .emptyHeader, .headerFromFile, .bodyFile:
                break
            }
        }
        return fields
    }

    /// The data fields of a form (`--form`, `--multipart`), a raw JSON string or number as its
    /// text (``formText(ofJSON:name:)``).
    private func formFields() throws(CLIFailure) -> [DataField] {
        var fields: [DataField] = []
        for field in try self.dataFields() {
            guard case .json(let json) = field.value else {
                fields.append(field)
                continue
            }
            fields.append(DataField(name: field.name, value: .text(try Self.formText(ofJSON: json, name: field.name))))
        }
        return fields
    }

    /// A raw JSON value (`name:=json`, `name:=@file`) as a form field's text, as HTTPie lets it
    /// into a form: a string's text, a number as written.
    /// - Throws: ``CLIFailure`` (usage) for any other value (an object, an array, a boolean, null).
    static func formText(ofJSON json: String, name: String) throws(CLIFailure) -> String {
        let kind: String
        switch json.first ?? " " {
        case "\"":
            let decoded = try? JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
            if let string = decoded as? String { return string }
            kind = "this string"
        case "-", "0"..."9":
            return json
        case "{":
            kind = "an object"
        case "[":
            kind = "an array"
        case "t", "f":
            kind = "a boolean"
        default:
            kind = "null"
        }
        throw CLIFailure.usage("'\(name)': only a JSON string or number can go in a form (--form, --multipart), not \(kind)")
    }

    /// `a=1&b=2`, in item order.
    private func formBody() throws(CLIFailure) -> String {
        try self.formFields().compactMap { field -> String? in
            guard case .text(let text) = field.value else { return nil }
            return Self.formPair(field.name, text)
        }.joined(separator: "&")
    }

    /// The JSON body of the data fields in item order, each name a path (``NestedJSON``: `a[b]=1`
    /// nests, a repeated name keeps its first place and its last value), strings escaped, raw JSON
    /// kept as written.
    private func jsonBody() throws(CLIFailure) -> Data {
        var body = NestedJSON()
        for field in try self.dataFields() {
            let value: String
            switch field.value {
            case .text(let text): value = JSONText.quoted(text)
            case .json(let json): value = json
            case .file: continue  // refused without a form (bodyKind())
            }
            try body.set(value, at: field.name)
        }
        return Data(body.text.utf8)
    }

    /// Every file item must name a readable regular file: checked before anything is sent.
    private func checkFiles() throws(CLIFailure) {
        for item in self.invocation.items {
            if case .file(_, let path, _) = item { try InputFile.checkReadable(path) }
        }
    }

    /// A library error met while building: a file problem is unreadable input, the rest usage.
    static func failure(for error: CourierError) -> CLIFailure {
        switch error.code {
        case .bodyReadFailed, .fileSystemFailure: CLIFailure(.unreadableInput, error.message)
        default: CLIFailure(.usage, error.message)
        }
    }
}
