import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// The examples of the DocC articles that no other test runs, each as written in its article
/// (the names it leaves to the reader, such as `pins`, `response` and `body`, are made first):
/// Trust and pinning (`Pinning.md`), Request serialization (`RequestSerialization.md`), Response
/// serialization (`ResponseSerialization.md`), Events, logs, metrics, traces (`Monitoring.md`),
/// Transfers' request trailers and streamed JSON lines (`Transfers.md`), WebSockets' authentication and retries
/// (`UsingWebSockets.md`) and CourierTesting (`CourierTesting.md`). Change the test with the example.
@Suite("Documentation: the articles' examples, as written")
struct DocumentationArticleExamplesTests {
    /// A folder holding `files`, removed by the caller.
    static func folder(_ files: [String: String]) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-docs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, text) in files { try Data(text.utf8).write(to: folder.appendingPathComponent(name)) }
        return folder
    }

    // MARK: UsingWebSockets.md

    @Test("WebSockets: a handshake answered 401, then 503, opens with the retry policy and the credential")
    func webSocketAuthenticationAndRetries() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let ws = server.baseURL.absoluteString.replacingOccurrences(of: "http://", with: "ws://")
            let url = URL(string: ws + "courier/websocket/echo?user=ann&password=secret&unavailable=1")!
            let space = ProtectionSpace(url: url, realm: "courier-websocket", authenticationMethod: .httpBasic)!
            // As written:
            manager.credentials.set(HTTPCredential(user: "ann", password: "secret"), for: space)
            manager.interceptor = RetryPolicy(retryLimit: 3)
            let task = manager.webSocketTask(with: Request(url: url))
            try await task.waitUntilOpen()                // a 401 answered, a 503 retried after its delay
            // Then:
            await task.close()
            #expect(task.metrics?.attempts.map { $0.response?.status.code } == [401, 503, 101])
        }
    }

    // MARK: Transfers.md

    @Test("Transfers: a stream of JSON lines decoded as it arrives")
    func streamedTokens() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            server.route("/tokens") { _ in .text("{\"text\":\"Hel\"}\n{\"text\":\"lo\"}\n") }
            let url = server.url("/tokens")
            var printed = ""
            func print(_ text: String, terminator: String) { printed += text + terminator }
            // As written in the article:
            struct Token: Decodable, Sendable { let text: String }
            let stream = try await manager.stream(Request(url: url))
            for try await token in stream.decoded(Token.self) { print(token.text, terminator: "") }
            #expect(printed == "Hello")
        }
    }

    @Test("Transfers: a body that ends with trailer fields")
    func requestTrailers() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }

            // As in the article:
            let payload = Data("quarterly numbers".utf8)
            var request = Request(method: .put, url: server.url("/anything"),
                                  body: .data(payload, trailers: [HTTPField.Name("Courier-Checksum")!: "crc32=be9a66fb"]))
            // or: .file(fileURL, trailers: …), .stream(chunks, length: .unknown, trailers: …)
            request.body.trailers?[HTTPField.Name("Server-Timing")!] = "client;dur=3"
            let echoed = try await manager.data(for: request)   // TestServer echoes the trailers it received

            let echo = try JSONSerialization.jsonObject(with: echoed.value) as? [String: Any]
            #expect(echo?["trailers"] as? [String: String] == ["Courier-Checksum": "crc32=be9a66fb", "Server-Timing": "client;dur=3"])
        }
    }

    // MARK: Pinning.md

    @Test("Trust and pinning: pins from a folder, mutual TLS, TLS 1.3, and a policy per host")
    func pinning() async throws {
        let folder = try Self.folder(["client.pem": TestCertificates.clientCertificate, "client-key.pem": TestCertificates.clientKey])
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("Pins"), withIntermediateDirectories: true)
        try Data(TestCertificates.rootCA.utf8).write(to: folder.appendingPathComponent("Pins/root.pem"))
        let clientPEM = folder.appendingPathComponent("client.pem")
        let keyPEM = folder.appendingPathComponent("client-key.pem")

        // As in the article:
        // (The article's folder is relative to the current directory; here, to the test's folder.)
        let pins = try SecurityPolicy.certificates(in: URL(fileURLWithPath: "Pins", relativeTo: URL(fileURLWithPath: folder.path + "/")))  // .cer/.der/.crt/.pem
        var policy = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: pins)
        policy.clientIdentity = try ClientIdentity(certificateFile: clientPEM, privateKeyFile: keyPEM)  // mutual TLS
        policy.minimumTLSVersion = .v1_3
        let manager = HTTPSessionManager(baseURL: URL(string: "https://api.example.com/")!, securityPolicy: policy)
        defer { manager.invalidate(cancelingTasks: true) }
        #expect(pins.count == 1)
        #expect(policy.clientIdentity != nil && manager.baseURL != nil)

        var trust = ServerTrustPolicies(default: .default)
        trust["api.example.com"] = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: pins)
        let perHost = HTTPSessionManager(baseURL: nil, engine: NIOEngine(serverTrust: trust))
        defer { perHost.invalidate(cancelingTasks: true) }
        #expect(trust.policy(forHost: "api.example.com").pinningMode == .certificate)
        #expect(trust.policy(forHost: "example.org").pinningMode == SecurityPolicy.default.pinningMode)
    }

    // MARK: RequestSerialization.md

    enum MyError: Error { case unexpected }

    @Test("Request serialization: a query string builder of your own, JSON and property lists, encoders, a fixed boundary")
    func requestSerialization() async throws {
        var serializer = HTTPRequestSerializer()
        serializer.setQueryStringSerialization { request, parameters in
            guard let dictionary = parameters as? [String: any Sendable] else { throw MyError.unexpected }
            return dictionary.keys.sorted().joined(separator: ",")
        }
        let custom = try serializer.request(method: .get, urlString: "https://example.com/s", parameters: ["b": 1, "a": 2])
        #expect(custom.url.query == "a,b")

        var json = JSONRequestSerializer()
        json.writingOptions = [.withoutEscapingSlashes]
        json.timeoutInterval = 5                            // every HTTPRequestSerializer property is here too
        let create = try json.request(method: .post, urlString: "https://example.com/items",
                                      parameters: ["name": "pen", "price": 1.5, "tags": ["a"]])
        // {"name":"pen","price":1.5,"tags":["a"]}   Content-Type: application/json
        #expect(create.headerFields[.contentType] == "application/json")
        let created = try JSONSerialization.jsonObject(with: create.body.data ?? Data()) as? [String: Any]
        #expect(created?["name"] as? String == "pen" && created?["price"] as? Double == 1.5 && created?["tags"] as? [String] == ["a"])
        #expect(create.options.timeoutInterval == 5)

        var plist = PropertyListRequestSerializer()
        plist.format = .binary                              // or .xml (the default)
        let prefs = try plist.request(method: .put, urlString: "https://example.com/prefs",
                                      parameters: ["volume": 7, "muted": false])
        // Content-Type: application/x-plist
        #expect(prefs.headerFields[.contentType] == "application/x-plist")
        #expect(prefs.body.data?.starts(with: Data("bplist".utf8)) == true)

        struct Search: Encodable, Sendable { var query: String; var tags: [String]; var exact: Bool }

        var form = URLEncodedFormEncoder()
        form.arrayEncoding = .noBrackets        // .brackets (default) | .noBrackets | .indexInBrackets | .custom { key, index in "\(key).\(index)" }
        form.boolEncoding = .literal            // .numeric (default) | .literal
        form.spaceEncoding = .plusReplaced      // .percentEscaped (default, %20) | .plusReplaced (+)
        form.keyPathEncoding = .dots            // .brackets (default, key[sub]) | .dots (key.sub) | KeyPathEncoding { ... }
        form.keyEncoding = .convertToSnakeCase  // .useDefaultKeys | .convertToSnakeCase | .convertToKebabCase | .capitalized | .uppercased | .lowercased | .custom
        form.dateEncoding = .iso8601            // .deferredToDate | .secondsSince1970 | .millisecondsSince1970 | .formatted(formatter) | .custom
        form.dataEncoding = .base64             // .base64 | .deferredToData | .custom
        form.alphabetizeKeyValuePairs = true    // true (default): sorted keys | false: in the order the value encodes them
        form.allowedCharacters = nil            // nil (default): unreserved, ? and / written as they are | any CharacterSet
        #expect(try form.encode(Search(query: "swift nio", tags: ["a", "b"], exact: true)) == "exact=true&query=swift+nio&tags=a&tags=b")

        var request = Request(method: .get, url: URL(string: "https://example.com/search")!)
        request = try URLEncodedFormParameterEncoder(encoder: form).encode(Search(query: "a", tags: [], exact: false), into: request)
        #expect(request.url.query == "exact=false&query=a")

        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        var posted = Request(method: .post, url: URL(string: "https://example.com/search")!)
        posted = try JSONParameterEncoder(encoder: encoder).encode(Search(query: "a", tags: [], exact: false), into: posted)
        #expect(posted.headerFields[.contentType] == "application/json")

        var multipart = try MultipartFormData(boundary: "courier-signed-upload")
        multipart.appendPart(withForm: Data("Ada".utf8), name: "name")
        var signed = Request(method: .post, url: URL(string: "https://example.com/upload")!, body: multipart.body)
        signed.headerFields[.contentType] = multipart.contentType
        signed.headerFields[.contentLength] = String(multipart.contentLength)
        #expect(signed.headerFields[.contentType] == "multipart/form-data; boundary=courier-signed-upload")
        #expect(signed.body.knownLength == Int64(multipart.contentLength))
    }

    // MARK: ResponseSerialization.md

    @Test("Response serialization: validation against the request's Accept, as written")
    func acceptValidation() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let url = server.url("/json")
            // As written in the article:
            var request = Request(url: url)
            request.headerFields[.accept] = "application/json, text/*;q=0.5"
            let response = try await manager.response(for: request, serializer: DataResponseSerializer().validatingAccept(of: request))
            #expect(response.response.status == .ok)
            request.headerFields[.accept] = "application/xml"
            await #expect {
                try await manager.response(for: request, serializer: DataResponseSerializer().validatingAccept(of: request))
            } throws: { ($0 as? CourierError)?.code == .unacceptableContentType }
        }
    }

    @Test("Response serialization: JSON with AFNetworking's pair, the status error, Decodable and compound")
    func responseSerialization() throws {
        var response = HTTPResponse(status: .ok)
        response.headerFields[.contentType] = "application/json"
        let body = Data(#"{"id": 1, "name": "Ada", "nickname": null}"#.utf8)

        var json = JSONResponseSerializer()
        json.removesKeysWithNullValues = true
        json.http.acceptableStatusCodes = IndexSet(integersIn: 200..<300)

        let object = try json.responseObject(for: response, data: body)   // throws CourierError
        let user = object as? [String: Any]
        #expect(user?["name"] as? String == "Ada" && user?["nickname"] == nil)

        let (value, error) = json.serialize(response: response, data: body) // AFNetworking's pair
        #expect(value != nil && error == nil)

        var refused = HTTPResponse(status: .notFound)
        refused.headerFields[.contentType] = "application/json"
        #expect(Self.statusOfTheRefusal(response: refused, body: body) == 404)

        struct User: Decodable, Sendable { var id: Int; var name: String }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let users = try DecodableResponseSerializer([User].self, decoder: decoder)
            .responseObject(for: response, data: Data(#"[{"id": 1, "name": "Ada"}]"#.utf8))
        #expect(users.map(\.name) == ["Ada"])

        let any = CompoundResponseSerializer([JSONResponseSerializer(), XMLParserResponseSerializer()])
        var xml = HTTPResponse(status: .ok)
        xml.headerFields[.contentType] = "application/xml"
        #expect(try any.responseObject(for: xml, data: Data("<a/>".utf8)) != nil)
    }

    /// The article's `catch where` example; returns the status it caught.
    static func statusOfTheRefusal(response: HTTPResponse, body: Data) -> Int? {
        var serializer = JSONResponseSerializer()
        serializer.removesKeysWithNullValues = true
        do {
            let object = try serializer.responseObject(for: response, data: body)
            let user = object as? [String: Any]
            Issue.record("accepted: \(String(describing: user))")
        } catch where error.code == .unacceptableStatusCode {
            print(error.statusCode ?? 0, error.data?.count ?? 0)
            return error.statusCode
        } catch {
            Issue.record("\(error)")
        }
        return nil
    }

    // MARK: Monitoring.md

    @Test("Events, logs, metrics, traces: a response's transactions")
    func transactions() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let response = try await manager.get("get")
                for hop in response.metrics?.transactions ?? [] { print(hop) }   // protocol, reuse, phase times, bytes
                #expect(response.metrics?.transactions.map(\.networkProtocolName) == ["http/1.1"])
            }
        }
    }

    // MARK: CourierTesting.md

    @Test("CourierTesting: an HTTPS server trusted through its root, and a server scoped to a closure")
    func courierTesting() async throws {
        let server = try await TestServer.start(.https())
        server.route("/hello") { _ in .text("hi") }
        var policy = SecurityPolicy.default
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        let manager = HTTPSessionManager(baseURL: server.baseURL, securityPolicy: policy)
        let hello = try await manager.data(for: Request(url: server.url("/hello")))
        #expect(String(decoding: hello.value, as: UTF8.self) == "hi")
        await manager.invalidate(cancelingTasks: true)
        try await server.shutdown()

        try await TestServer.withServer(.https()) { server in
            server.route("/hello", methods: [.get]) { _ in .text("hi") }
            // …send requests to server.url("/hello") and server.url("/status/503")…
            let manager = HTTPSessionManager(baseURL: server.baseURL, securityPolicy: policy)
            _ = try await manager.data(for: Request(url: server.url("/hello")))
            _ = try? await manager.data(for: Request(url: server.url("/status/503")))
            await manager.invalidate(cancelingTasks: true)
            #expect(server.requestCount == 2)
        }
    }
}
