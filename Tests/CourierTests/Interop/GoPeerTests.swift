import Courier
import CourierTesting
import Crypto
import Foundation
import NIOCore
import Testing

/// Go's net/http server, which `.ci/run` builds from `.ci/go-peer` and starts: an HTTP/1.1 and
/// HTTP/2 implementation nobody on the project wrote (TestServer and the scripted HTTP/2 server
/// are Courier's own, on the same swift-nio-http2). Interop probes against it found faults that
/// Courier's own servers never showed: header lists past 16 KiB, GOAWAY races, TLS closes.
enum GoPeer {
    private static let environment = ProcessInfo.processInfo.environment
    static let url = environment["COURIER_GO_PEER_URL"].flatMap(URL.init(string:))
    static let tlsURL = environment["COURIER_GO_PEER_TLS_URL"].flatMap(URL.init(string:))
    static let caFile = environment["COURIER_GO_PEER_CA"]
    static var isAvailable: Bool { url != nil && tlsURL != nil && caFile != nil }
    static let skipReason: Comment =
        "COURIER_GO_PEER_URL, COURIER_GO_PEER_TLS_URL and COURIER_GO_PEER_CA are not set: .ci/run builds and starts Go's net/http server (.ci/go-peer)"

    /// The peer's URL for `path` over `transport`'s wire.
    static func url(_ path: String, over transport: Transport) -> URL {
        let base = transport.isSecure ? tlsURL! : url!
        return URL(string: base.absoluteString + path)!
    }

    /// The protocol the peer says it was spoken to in (Go's `Request.Proto`).
    static func proto(of transport: Transport) -> String {
        transport.isHTTP2 ? "HTTP/2.0" : "HTTP/1.1"
    }

    /// A manager for `transport` (its HTTP versions and proxy, no cache) trusting the peer's root
    /// (and the `https://` proxy's).
    static func manager(for transport: Transport) throws -> SessionManager {
        var policy = SecurityPolicy.default
        let pem = try String(contentsOfFile: caFile!, encoding: .utf8)
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: pem) + Transport.proxyRoots()
        let manager = SessionManager(configuration: transport.sessionConfiguration(), securityPolicy: policy)
        manager.completionQueue = TestQueues.completion
        return manager
    }

    /// `count` bytes of a-z repeated: what `/big` sends.
    static func pattern(_ count: Int) -> Data {
        Data(periodicBytes(count, period: Array("abcdefghijklmnopqrstuvwxyz".utf8)))
    }

    /// The lines "0" to "count - 1": what `/gzip` sends, compressed.
    static func lines(_ count: Int) -> Data {
        Data((0..<count).map { "\($0)\n" }.joined().utf8)
    }

    /// Runs `body` with a manager for `transport`, invalidated afterwards.
    static func run(_ transport: Transport, _ body: (SessionManager) async throws -> Void) async throws {
        let manager = try Self.manager(for: transport)
        do {
            try await body(manager)
            await manager.invalidate(cancelingTasks: true)
        } catch {
            await manager.invalidate(cancelingTasks: true)
            throw error
        }
    }
}

/// The transports to Go's server: every wire directly, and through the real proxies but
/// tinyproxy's absolute form (it closes each connection after the answer: `PENDING.md`).
private let goTransports = Transport.allCases(except: [.http1ViaHTTPProxy])

/// One test at a time (each still runs its transports in parallel): their uploads and 400-request
/// bursts, all at once, starved the rest of the suite on two cores.
@Suite("Interop: Go's net/http server", .serialized, .enabled(if: GoPeer.isAvailable, GoPeer.skipReason))
struct GoPeerTests {
    /// `/upload`'s answer.
    private struct UploadEcho: Decodable {
        var bytes: Int
        var sha256: String
        var proto: String
        var contentLength: Int
        var transferEncoding: String
        var trailers: [String: String]
    }

    private static func upload(_ body: RequestBody, over transport: Transport, with manager: SessionManager) async throws -> UploadEcho {
        let response = try await manager.data(for: Request(method: .post, url: GoPeer.url("/upload", over: transport), body: body))
        return try JSONDecoder().decode(UploadEcho.self, from: response.value)
    }

    @Test(arguments: goTransports)
    func bodiesGoBothWaysWhole(_ transport: Transport) async throws {
        try await GoPeer.run(transport) { manager in
            let hello = try await manager.data(for: Request(method: .get, url: GoPeer.url("/hello", over: transport)))
            #expect(String(decoding: hello.value, as: UTF8.self) == "hello \(GoPeer.proto(of: transport)) GET")
            #expect(hello.metrics?.transactions.last?.networkProtocolName == transport.protocolName)

            let size = 3_000_001
            for query in ["n=\(size)", "n=\(size)&chunked=1"] {
                let big = try await manager.data(for: Request(method: .get, url: GoPeer.url("/big?\(query)", over: transport)))
                expectSameBytes(big.value, GoPeer.pattern(size), "/big?\(query)")
            }

            let bytes = GoPeer.pattern(5 << 20)
            let digest = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
            let sent = try await Self.upload(.data(bytes), over: transport, with: manager)
            #expect(sent.bytes == bytes.count && sent.sha256 == digest)
            #expect(sent.proto == GoPeer.proto(of: transport))
            #expect(sent.contentLength == bytes.count)

            // A body of unknown length, ending with trailer fields: chunked on HTTP/1.1.
            let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                for offset in stride(from: 0, to: bytes.count, by: 1 << 20) {
                    continuation.yield(ByteBuffer(bytes: bytes[offset..<min(offset + (1 << 20), bytes.count)]))
                }
                continuation.finish()
            }
            let streamed = try await Self.upload(
                .stream(chunks, length: .unknown, trailers: [.courierChecksum: "sha256=\(digest.prefix(16))"]), over: transport, with: manager)
            #expect(streamed.bytes == bytes.count && streamed.sha256 == digest)
            #expect(streamed.trailers == ["Courier-Checksum": "sha256=\(digest.prefix(16))"])
            #expect(streamed.transferEncoding == (transport.isHTTP2 ? "" : "chunked"))
        }
    }

    @Test(arguments: goTransports)
    func responseTrailersAndGzipBodiesArrive(_ transport: Transport) async throws {
        try await GoPeer.run(transport) { manager in
            let streamed = try await manager.stream(Request(method: .get, url: GoPeer.url("/trailers", over: transport)))
            var body = Data()
            for try await part in streamed.body { body.append(contentsOf: part.readableBytesView) }
            #expect(String(decoding: body, as: UTF8.self) == "body with a trailer")
            #expect(streamed.task.responseTrailers?[HTTPField.Name("X-Sum")!] == "42")

            let lines = 300_000
            let gzip = try await manager.data(for: Request(method: .get, url: GoPeer.url("/gzip?n=\(lines)", over: transport)))
            expectSameBytes(gzip.value, GoPeer.lines(lines), "/gzip")
            #expect(gzip.response.headerFields[.contentEncoding] == "gzip")
        }
    }

    /// Go sends a header list as long as its handler makes it, whatever the client advertises:
    /// over HTTP/2, 100 KB comes as HEADERS and CONTINUATION frames past the 16 KiB that
    /// swift-nio-http2 takes by default.
    @Test(arguments: goTransports)
    func aLargeResponseHeaderListIsTaken(_ transport: Transport) async throws {
        try await GoPeer.run(transport) { manager in
            let response = try await manager.data(for: Request(method: .get, url: GoPeer.url("/large-header?n=60000", over: transport)))
            #expect(response.response.headerFields[HTTPField.Name("X-Large")!]?.count == 60_000)
            #expect(String(decoding: response.value, as: UTF8.self) == "large header")
        }
    }

    /// A request field of 30 KB that no Huffman code shortens (a large cookie or token) reaches
    /// Go over every transport: over HTTP/2 its header block is larger than 16 KiB, and goes in
    /// one HEADERS frame because Go's server takes frames of 1 MiB (its SETTINGS_MAX_FRAME_SIZE).
    @Test(arguments: goTransports)
    func aLargeRequestHeaderGoesToAServerThatTakesLargeFrames(_ transport: Transport) async throws {
        try await GoPeer.run(transport) { manager in
            var request = Request(method: .get, url: GoPeer.url("/request-header?name=X-Large", over: transport))
            request.headerFields[HTTPField.Name("X-Large")!] = String((0..<30_000).map { Character(UnicodeScalar(UInt8(33 + $0 % 94))) })
            let response = try await manager.data(for: request)
            #expect(String(decoding: response.value, as: UTF8.self) == "30000")
        }
    }

    /// Every third response closes its connection (over HTTP/2, a GOAWAY after it) while 32
    /// requests are in flight: requests the server never took go again, none fails.
    @Test(arguments: goTransports)
    func connectionsClosedEveryFewResponsesLoseNoRequest(_ transport: Transport) async throws {
        try await GoPeer.run(transport) { manager in
            let url = GoPeer.url("/close-every?n=3", over: transport)
            let failures = await failedAttempts(of: 400, inFlight: 32) { _ in
                do {
                    let response = try await manager.data(for: Request(method: .get, url: url))
                    let text = String(decoding: response.value, as: UTF8.self)
                    return text.hasPrefix("hello \(GoPeer.proto(of: transport)) GET ") ? nil : "unexpected body: \(text)"
                } catch {
                    return "\(error)"
                }
            }
            #expect(failures.isEmpty, "\(failures.count) of 400 failed, first: \(failures.first ?? "")")
        }
    }

    /// Go answers 413 without reading the 8 MiB body, then closes the connection (HTTP/1.1) or
    /// resets the stream (HTTP/2): the answer is what the task ends with, not a write error.
    @Test(arguments: goTransports)
    func anAnswerBeforeTheBodyWasReadIsDelivered(_ transport: Transport) async throws {
        try await GoPeer.run(transport) { manager in
            var serializer = DataResponseSerializer()
            serializer.http.acceptableStatusCodes = IndexSet(integersIn: 100..<600)
            let request = Request(method: .post, url: GoPeer.url("/reject", over: transport), body: .data(Data(count: 8 << 20)))
            let response = try await manager.response(for: request, serializer: serializer)
            #expect(response.response.status.code == 413)
            #expect(String(decoding: response.value, as: UTF8.self) == "too large")
            let next = try await manager.data(for: Request(method: .get, url: GoPeer.url("/hello", over: transport)))
            #expect(next.response.status == .ok)
        }
    }

    /// `/form`'s answer: the form as Go's `Request.ParseForm` / `ParseMultipartForm` read it.
    private struct FormEcho: Decodable {
        struct File: Decodable, Equatable {
            var filename: String
            var contentType: String
            var size: Int
            var sha256: String
        }

        var method: String
        var contentType: String
        var form: [String: [String]]
        var files: [String: [File]]
        var error: String?
    }

    private static func form(_ request: Request, with manager: SessionManager) async throws -> FormEcho {
        try JSONDecoder().decode(FormEcho.self, from: try await manager.data(for: request).value)
    }

    /// AFNetworking's parameters, with characters a form must escape, Unicode, an array and
    /// nested dictionaries.
    private static let parameters: [String: any Sendable] = [
        "name": "Ann Smith", "symbols": "a&b=c+d?e/f#g%h;i", "unicode": "日本語 ü", "list": ["1", "2"],
        "nested": ["key": "value", "deep": ["x": "y"] as [String: String]] as [String: any Sendable],
    ]

    /// What Go reads of ``parameters``: AFNetworking's keys (`list[]`, `nested[deep][x]`), each
    /// value as it was.
    private static let parsedParameters: [String: [String]] = [
        "name": ["Ann Smith"], "symbols": ["a&b=c+d?e/f#g%h;i"], "unicode": ["日本語 ü"], "list[]": ["1", "2"],
        "nested[key]": ["value"], "nested[deep][x]": ["y"],
    ]

    /// Parameters serialized by ``HTTPRequestSerializer`` into a `GET` query and a `POST` body,
    /// and a multipart form, are read back by Go's own form parsers value for value.
    @Test(arguments: goTransports)
    func formsAreReadBackByGosParsers(_ transport: Transport) async throws {
        try await GoPeer.run(transport) { manager in
            let url = GoPeer.url("/form", over: transport).absoluteString
            let serializer = HTTPRequestSerializer()

            let query = try await Self.form(serializer.request(method: .get, urlString: url, parameters: Self.parameters), with: manager)
            #expect(query.method == "GET" && query.error == nil)
            #expect(query.form == Self.parsedParameters)

            let body = try await Self.form(serializer.request(method: .post, urlString: url, parameters: Self.parameters), with: manager)
            #expect(body.contentType == "application/x-www-form-urlencoded" && body.error == nil)
            #expect(body.form == Self.parsedParameters)

            let bytes = GoPeer.pattern(300_001)
            let digest = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
            let multipart = try serializer.multipartFormRequest(method: .post, urlString: url, parameters: Self.parameters) { form in
                form.appendPart(withFileData: bytes, name: "file", fileName: "a b ü.txt", mimeType: "text/plain")
                form.appendPart(withForm: Data("plain part".utf8), name: "form")
            }
            let parts = try await Self.form(multipart, with: manager)
            #expect(parts.contentType.hasPrefix("multipart/form-data; boundary=") && parts.error == nil)
            #expect(parts.form == Self.parsedParameters.merging(["form": ["plain part"]]) { $1 })
            #expect(parts.files == ["file": [FormEcho.File(filename: "a b ü.txt", contentType: "text/plain", size: bytes.count, sha256: digest)]])
        }
    }

    /// Cookies Go's `http.SetCookie` sets (a value Go quotes, a path-scoped one, then a deletion)
    /// are kept by the session's cookie store and sent back where they belong, as Go's
    /// `Request.Cookies` reads them.
    @Test(arguments: goTransports)
    func cookiesGoBackAsGoSetThem(_ transport: Transport) async throws {
        try await GoPeer.run(transport) { manager in
            func sent(_ path: String) async throws -> [[String]] {
                let response = try await manager.data(for: Request(method: .get, url: GoPeer.url(path, over: transport)))
                return try JSONDecoder().decode([[String]].self, from: response.value)
            }
            let first = try await sent("/cookies?set=1")
            #expect(first == [])
            let root = try await sent("/cookies")
            #expect(root == [["session", "abc 1"]])
            let deeper = try await sent("/cookies/deep/er")
            #expect(deeper == [["scoped", "x"], ["session", "abc 1"]], "the longer path first")
            let clearing = try await sent("/cookies?clear=1")
            #expect(clearing == [["session", "abc 1"]])
            let cleared = try await sent("/cookies/deep")
            #expect(cleared == [["scoped", "x"]])
        }
    }

    /// `/json`'s answer: each leaf of the body as Go's `encoding/json` read it.
    private struct JSONEcho: Decodable {
        var contentType: String
        var leaves: [String: String]
        var error: String?
    }

    /// What ``JSONRequestSerializer`` writes (Courier's own JSON writer) is read by Go's
    /// `encoding/json` leaf for leaf: escapes of every kind, text past the BMP and the line
    /// separators, numbers at their limits, literals, an empty key, nesting.
    @Test(arguments: goTransports)
    func jsonBodiesAreReadBackByGosDecoder(_ transport: Transport) async throws {
        try await GoPeer.run(transport) { manager in
            let text = "quote \" backslash \\ slash / nl \n tab \t cr \r bs \u{08} ff \u{0C} ctl \u{01}\u{1F} del \u{7F}"
            let unicode = "ü 日本 😀 \u{2028}\u{2029} \u{FEFF}"
            let parameters: [String: any Sendable] = [
                "text": text, "unicode": unicode, "html": "</script><&>", "max": Int.max, "min": Int.min, "double": 0.1,
                "tiny": 1e-7, "huge": 1e300, "fraction": 123456789.125, "yes": true, "no": false, "none": String?.none as any Sendable,
                "list": [1, "two", [3.5] as [any Sendable]] as [any Sendable], "nested": ["deep": ["x": "y"] as [String: String]] as [String: any Sendable],
                "": "empty key",
            ]
            let url = GoPeer.url("/json", over: transport).absoluteString
            for options in [JSONSerialization.WritingOptions(), .prettyPrinted] {
                var serializer = JSONRequestSerializer()
                serializer.writingOptions = options
                let request = try serializer.request(method: .post, urlString: url, parameters: parameters)
                let echo = try JSONDecoder().decode(JSONEcho.self, from: try await manager.data(for: request).value)
                #expect(echo.error == nil && echo.contentType == "application/json")
                var leaves = echo.leaves
                // Numbers: the value Go read, whatever the literal's form.
                for (path, want) in ["/double": 0.1, "/tiny": 1e-7, "/huge": 1e300, "/fraction": 123456789.125, "/list/2/0": 3.5] {
                    let literal = leaves.removeValue(forKey: path)
                    #expect(literal.flatMap { Double($0.dropFirst(2)) } == want, "\(path): \(literal ?? "missing")")
                }
                #expect(leaves == [
                    "/text": "s:" + text, "/unicode": "s:" + unicode, "/html": "s:</script><&>",
                    "/max": "n:9223372036854775807", "/min": "n:-9223372036854775808", "/yes": "b:true", "/no": "b:false",
                    "/none": "null", "/list/0": "n:1", "/list/1": "s:two", "/nested/deep/x": "s:y", "/": "s:empty key",
                ], "\(options)")
            }
        }
    }
}
