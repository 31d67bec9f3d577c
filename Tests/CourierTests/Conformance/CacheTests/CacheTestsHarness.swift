// The HTTP caching tests (cache-tests, https://github.com/http-tests/cache-tests, commit b55b8bd,
// the suite behind cache-tests.fyi), Copyright (c) 2018, Mark Nottingham, BSD 3-Clause License.
// `cache-tests.json` is the suite's own test definitions, exported from its `tests/index.mjs`
// (one test a line); this file rewrites in Swift the rules of its harness: the server's
// (`test-engine/server/handle-test.mjs`, `lib/header-fixup.mjs`) and the client's checks
// (`test-engine/client/test.mjs`, `fetching.mjs`), in the harness's browser mode (a private cache).
//
// To export the definitions again, from a checkout of cache-tests (Node 18 or later):
//   node --input-type=module -e "import t from './tests/index.mjs'; …" (see CacheTestsSuite.swift)

@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// A JSON value of the suite's definitions, as the harness reads it (numbers, strings and lists mix
/// in one field: a header's value is a string or seconds from the server's `now`).
enum CacheTestJSON: Sendable, Decodable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([CacheTestJSON])
    case object([String: CacheTestJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([CacheTestJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: CacheTestJSON].self))
        }
    }

    subscript(key: String) -> CacheTestJSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    subscript(index: Int) -> CacheTestJSON? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    var string: String? { if case .string(let value) = self { value } else { nil } }
    var number: Double? { if case .number(let value) = self { value } else { nil } }
    var int: Int? { self.number.map { Int($0) } }
    /// JavaScript's `=== true`.
    var isTrue: Bool { self == .bool(true) }
    var array: [CacheTestJSON] { if case .array(let elements) = self { elements } else { [] } }
    /// A header value as JavaScript would write it into a field (a number as its digits).
    var text: String {
        switch self {
        case .string(let value): value
        case .number(let value): value == value.rounded() ? String(Int(value)) : String(value)
        case .bool(let value): String(value)
        default: ""
        }
    }
}

/// A suite of the definitions (`tests/*.mjs`), with its tests.
struct CacheTestSuite: Sendable, Decodable {
    let id: String
    let name: String
    let tests: [CacheTest]

    /// Every suite of `cache-tests.json`.
    static let all: [CacheTestSuite] = {
        guard let url = Bundle.module.url(forResource: "cache-tests", withExtension: "json"),
            let data = try? Data(contentsOf: url),
            let suites = try? JSONDecoder().decode([CacheTestSuite].self, from: data)
        else { preconditionFailure("cache-tests.json is a resource of the test target") }
        return suites
    }()
}

/// One test: requests made in order, each with what the server answers and what the client checks.
struct CacheTest: Sendable, Decodable {
    let id: String
    let name: String
    /// `required` (the specification's MUST, the default), `optimal` (what a good cache does) or
    /// `check` (how a cache behaves, neither right nor wrong).
    let kind: String
    let browserOnly: Bool
    let cdnOnly: Bool
    let browserSkip: Bool
    let dependsOn: [String]
    let requests: [CacheTestJSON]

    enum CodingKeys: String, CodingKey {
        case id, name, kind, requests
        case browserOnly = "browser_only", cdnOnly = "cdn_only", browserSkip = "browser_skip", dependsOn = "depends_on"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.id = try container.decode(String.self, forKey: .id)
        self.name = try container.decode(String.self, forKey: .name)
        self.kind = try container.decodeIfPresent(String.self, forKey: .kind) ?? "required"
        self.browserOnly = try container.decodeIfPresent(Bool.self, forKey: .browserOnly) ?? false
        self.cdnOnly = try container.decodeIfPresent(Bool.self, forKey: .cdnOnly) ?? false
        self.browserSkip = try container.decodeIfPresent(Bool.self, forKey: .browserSkip) ?? false
        self.dependsOn = try container.decodeIfPresent([String].self, forKey: .dependsOn) ?? []
        self.requests = try container.decode([CacheTestJSON].self, forKey: .requests)
    }

    /// Why the harness cannot run it against Courier, if it cannot: what it needs is a browser's
    /// (`fetch`'s cache modes, reading interim responses) or a shared cache's.
    var notApplicable: String? {
        if self.cdnOnly { return "a CDN's test" }
        if self.browserSkip { return "not run against a browser's (private) cache" }
        if self.requests.contains(where: { $0["cache"] != nil }) { return "a fetch cache mode (no-cache) Courier's policies do not have" }
        if self.requests.contains(where: { $0["expected_interim_responses"] != nil }) {
            return "reads interim responses, which Courier's API does not hand out"
        }
        return nil
    }
}

/// How a test ended, as cache-tests.fyi shows it.
enum CacheTestResult: Sendable, Equatable, CustomStringConvertible {
    case passed
    /// An assertion failed: the cache does not do what the test asks.
    case failed(String)
    /// A check the test needs to be meaningful failed (the harness's "Setup" error).
    case setupFailed(String)

    var description: String {
        switch self {
        case .passed: "passed"
        case .failed(let message): "failed: \(message)"
        case .setupFailed(let message): "setup failed: \(message)"
        }
    }
}

/// The harness's server: every test's requests, keyed by the test's UUID, answered as
/// `handle-test.mjs` answers them, on one ``ScriptedHTTPServer``. Its time is each test's own
/// clock (the one its session's cache reads), so that a pause of the suite is a step of the clock.
final class CacheTestsServer: Sendable {
    /// What the server keeps of a request it answered (the harness's "stash").
    struct Seen: Sendable {
        var requestNumber: Int?
        var method: String
        /// The request's fields, by lower-cased name, repeated ones joined by ", " (Node's way).
        var requestHeaders: [String: String]
        /// The response fields the test checks the client received unchanged: name and values.
        var responseHeaders: [(String, [String])]
    }

    private struct Run {
        var requests: [CacheTestJSON]
        /// The response fields sent for each request number, date and location values made.
        var sentHeaders: [Int: [(String, String)]] = [:]
        var seen: [Seen] = []
        let clock: ManualClock
    }

    private let runs = NIOLockedValueBox<[String: Run]>([:])

    func register(uuid: String, requests: [CacheTestJSON], clock: ManualClock) {
        self.runs.withLockedValue { $0[uuid] = Run(requests: requests, clock: clock) }
    }

    func seen(uuid: String) -> [Seen] {
        self.runs.withLockedValue { $0[uuid]?.seen ?? [] }
    }

    func forget(uuid: String) {
        _ = self.runs.withLockedValue { $0.removeValue(forKey: uuid) }
    }

    /// The answer to a request head, as the script of a ``ScriptedHTTPServer``.
    func answer(_ head: String) -> ScriptedHTTPServer.Action {
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let requestLine = lines.first.map { $0.split(separator: " ") } ?? []
        guard requestLine.count >= 2 else { return .close }
        let method = String(requestLine[0])
        let target = String(requestLine[1])
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        let path = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target
        let segments = path.split(separator: "/")
        guard segments.count >= 2, segments[0] == "test" else { return .respond(Self.plain(404, "Not Found", "no such path")) }
        let uuid = String(segments[1])
        return self.runs.withLockedValue { runs -> ScriptedHTTPServer.Action in
            guard var run = runs[uuid] else { return .respond(Self.plain(409, "Conflict", "Requests not found for \(uuid)")) }
            defer { runs[uuid] = run }
            return Self.answer(method: method, target: target, headers: headers, uuid: uuid, run: &run)
        }
    }

    private static func answer(
        method: String, target: String, headers: [String: String], uuid: String, run: inout Run
    ) -> ScriptedHTTPServer.Action {
        let serverNumber = run.seen.count + 1
        let clientNumber = headers["req-num"].flatMap { Int($0) }
        let number = clientNumber ?? serverNumber
        guard run.requests.indices.contains(number - 1) else {
            return .respond(Self.plain(409, "Conflict", "config not found for request \(serverNumber)"))
        }
        let config = run.requests[number - 1]
        // The harness waits; here the clocks of the server and of the client's cache step on.
        if let pause = config["response_pause"]?.number { run.clock.advance(by: pause) }
        let now = run.clock.now

        var status = (config["response_status"]?[0]?.int ?? 200, config["response_status"]?[1]?.string ?? "OK")
        if let expected = config["expected_type"]?.string, expected.hasSuffix("validated") {
            let previous = number >= 2 ? run.sentHeaders[number - 1] ?? [] : []
            let previousConfig = number >= 2 ? run.requests[number - 2] : nil
            // A value the server never sent (its request was answered by the cache) stays the
            // number the definitions hold, which no request's field equals (as in the harness).
            func previousValue(_ name: String) -> String? {
                if let sent = previous.last(where: { $0.0.lowercased() == name }) { return sent.1 }
                let configured = previousConfig?["response_headers"]?.array.last { $0[0]?.string?.lowercased() == name }
                return configured?[1]?.string
            }
            if let lastModified = previousValue("last-modified"), headers["if-modified-since"] == lastModified {
                status = (304, "Not Modified")
            }
            if let entityTag = previousValue("etag"), headers["if-none-match"] == entityTag { status = (304, "Not Modified") }
            if status.0 != 304 { status = (999, "304 Not Generated") }
        }

        var fields: [(String, String)] = [
            ("Server-Base-Url", target), ("Server-Request-Count", String(serverNumber)),
            ("Client-Request-Count", clientNumber.map(String.init) ?? "NaN"),
            // Whole milliseconds, truncated: the client rebuilds the server's dates from this,
            // and a rounded value moved one that fell in a second's last half millisecond to
            // the next second (a check failed with an Expires a second off, run alone).
            ("Server-Now", String(Int64((now.timeIntervalSince1970 * 1000).rounded(.down)))),
        ]
        var saved: [(String, [String])] = []
        let rfc850 = Set(config["rfc850date"]?.array.compactMap(\.string) ?? [])
        for header in config["response_headers"]?.array ?? [] {
            guard let name = header[0]?.string else { continue }
            let value = Self.fixup(
                name: name, value: header[1] ?? .string(""), now: now, rfc850: rfc850.contains(name.lowercased()),
                base: target, magicLocations: config["magic_locations"]?.isTrue ?? false)
            fields.append((name, value))
            if header.array.count < 3 || header[2]?.isTrue == true {
                let values = fields.filter { $0.0.lowercased() == name.lowercased() }.map(\.1)
                saved.removeAll { $0.0.lowercased() == name.lowercased() }
                saved.append((name, values))
            }
        }
        if !fields.contains(where: { $0.0.lowercased() == "content-type" }) { fields.append(("Content-Type", "text/plain")) }
        run.sentHeaders[number] = fields
        run.seen.append(Seen(requestNumber: clientNumber, method: method, requestHeaders: headers, responseHeaders: saved))
        fields.append(("Request-Numbers", run.seen.map { $0.requestNumber.map(String.init) ?? "NaN" }.joined(separator: " ")))
        // Node's server adds a `Date` unless the test set one.
        if !fields.contains(where: { $0.0.lowercased() == "date" }) { fields.append(("Date", HTTPDate.format(now))) }

        if config["disconnect"]?.isTrue == true { return .close }
        var interim = ""
        for response in config["interim_responses"]?.array ?? [] {
            let code = response[0]?.int ?? 103
            interim += "HTTP/1.1 \(code) \(code == 102 ? "Processing" : "Early Hints")\r\n"
            for field in response[1]?.array ?? [] { interim += "\(field[0]?.text ?? ""): \(field[1]?.text ?? "")\r\n" }
            interim += "\r\n"
        }
        // Node frames the body by a `Content-Length` the test set (sending the whole body
        // anyway), by the connection's end under a `Transfer-Encoding` other than chunked, and
        // else by a length of its own.
        let has = { (name: String) in fields.contains { $0.0.lowercased() == name } }
        let endsWithConnection = has("transfer-encoding")
        let body = status.0 == 204 || status.0 == 304 ? "" : config["response_body"]?.string ?? uuid
        if status.0 != 204, status.0 != 304, !has("content-length"), !endsWithConnection {
            fields.append(("Content-Length", String(body.utf8.count)))
        }
        var response = interim + "HTTP/1.1 \(status.0) \(status.1)\r\n"
        for (name, value) in fields { response += "\(name): \(value)\r\n" }
        response += "\r\n"
        if method != "HEAD" { response += body }
        return .respond(response, thenClose: endsWithConnection)
    }

    /// `lib/header-fixup.mjs`: a date field given as a number is that many seconds from the
    /// server's `now`; a location is made absolute-path under the test's URL when asked.
    static func fixup(name: String, value: CacheTestJSON, now: Date, rfc850: Bool, base: String, magicLocations: Bool) -> String {
        let lowered = name.lowercased()
        if ["date", "expires", "last-modified", "if-modified-since", "if-unmodified-since"].contains(lowered),
            let seconds = value.number
        {
            let date = now.addingTimeInterval(seconds)
            return rfc850 ? Self.rfc850(date) : HTTPDate.format(date)
        }
        if ["location", "content-location"].contains(lowered), magicLocations {
            let path = value.text
            return path.isEmpty ? base : "\(base)/\(path)"
        }
        return value.text
    }

    static func rfc850(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let days = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return "\(days[(parts.weekday ?? 1) - 1]), \(two(parts.day))-\(months[(parts.month ?? 1) - 1])-\(two((parts.year ?? 0) % 100)) "
            + "\(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) GMT"
    }

    static func plain(_ code: Int, _ reason: String, _ body: String) -> String {
        "HTTP/1.1 \(code) \(reason)\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }
}

/// The body as it came, whatever the status: the harness reads every response.
struct CacheTestsBody: ResponseSerializer {
    func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> Data { data ?? Data() }
}

/// The client's side of a test (`test.mjs`): its requests through a session with a cache of its
/// own, each response checked, then what the server saw.
enum CacheTestsClient {
    private struct Failure: Error {
        let result: CacheTestResult
    }

    /// The harness's `assert(isSetup, expr, message)`.
    private static func check(_ isSetup: Bool, _ condition: Bool, _ message: @autoclosure () -> String) throws {
        guard !condition else { return }
        throw Failure(result: isSetup ? .setupFailed(message()) : .failed(message()))
    }

    private static func isSetup(_ config: CacheTestJSON, _ member: String) -> Bool {
        config["setup"]?.isTrue == true || config["setup_tests"]?.array.contains(.string(member)) == true
    }

    static func run(_ test: CacheTest, on server: ScriptedHTTPServer, answering state: CacheTestsServer) async -> CacheTestResult {
        let uuid = UUID().uuidString.lowercased()
        // The suite's time: the server's dates and the cache's clock, stepped by the pauses.
        let clock = ManualClock(Date())
        state.register(uuid: uuid, requests: test.requests, clock: clock)
        defer { state.forget(uuid: uuid) }
        var configuration = SessionConfiguration.default
        configuration.responseCache = ResponseCache(memoryCapacity: 1 << 20, clock: clock.function)
        configuration.postsTaskNotifications = false
        let manager = SessionManager(configuration: configuration)
        let result = await Self.run(test, uuid: uuid, clock: clock, manager: manager, server: server, state: state)
        await manager.invalidate(cancelingTasks: true)
        return result
    }

    private static func run(
        _ test: CacheTest, uuid: String, clock: ManualClock, manager: SessionManager, server: ScriptedHTTPServer, state: CacheTestsServer
    ) async -> CacheTestResult {
        do {
            var responses: [DataResponse<Data>] = []
            for (index, config) in test.requests.enumerated() {
                let response = try await Self.send(
                    config, number: index + 1, uuid: uuid, server: server, previous: responses.last, manager: manager)
                responses.append(response)
                try Self.checkResponse(response, config: config, number: index + 1, uuid: uuid)
                if config["pause_after"]?.isTrue == true { clock.advance(by: 3) }
            }
            try Self.checkServer(test.requests, responses: responses, seen: state.seen(uuid: uuid))
            return .passed
        } catch let failure as Failure {
            return failure.result
        } catch {
            return .failed("\(error)")
        }
    }

    private static func send(
        _ config: CacheTestJSON, number: Int, uuid: String, server: ScriptedHTTPServer, previous: DataResponse<Data>?,
        manager: SessionManager
    ) async throws -> DataResponse<Data> {
        var path = "test/\(uuid)"
        if let filename = config["filename"]?.string { path += "/\(filename)" }
        if let query = config["query_arg"]?.string { path += "?\(query)" }
        let url = URL(string: path, relativeTo: server.baseURL)!.absoluteURL
        var fields = HTTPFields()
        for header in config["request_headers"]?.array ?? [] {
            guard let name = header[0]?.string, let fieldName = HTTPField.Name(name) else { continue }
            var value = header[1]?.text ?? ""
            // `magic_ims`: an If-Modified-Since given in seconds, from the previous response's `now`.
            if config["magic_ims"]?.isTrue == true, name.lowercased() == "if-modified-since", let seconds = header[1]?.number,
                let serverNow = previous?.response.headerFields[HTTPField.Name("Server-Now")!].flatMap({ Double($0) })
            {
                value = HTTPDate.format(Date(timeIntervalSince1970: serverNow / 1000).addingTimeInterval(seconds))
            }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        fields.append(HTTPField(name: HTTPField.Name("Req-Num")!, value: String(number)))
        let method = config["request_method"]?.string.flatMap { HTTPRequest.Method($0) } ?? .get
        var request = Request(method: method, url: url, headerFields: fields)
        if let body = config["request_body"]?.string { request.body = .data(Data(body.utf8)) }
        if config["redirect"]?.string == "manual" { request.options.redirectPolicy = .disallow }
        do {
            return try await manager.response(for: request, serializer: CacheTestsBody())
        } catch {
            throw Failure(result: .failed("request \(number) failed: \(error)"))
        }
    }

    /// The values of `name` joined as `fetch`'s `Headers.get` joins them, or nil.
    static func header(_ response: HTTPResponse, _ name: String) -> String? {
        guard let fieldName = HTTPField.Name(name) else { return nil }
        let values = response.headerFields[values: fieldName]
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    private static func checkResponse(_ answer: DataResponse<Data>, config: CacheTestJSON, number: Int, uuid: String) throws {
        let response = answer.response
        let serverNumber = Self.header(response, "Server-Request-Count").flatMap { Int($0) }
        if let numbers = Self.header(response, "Request-Numbers")?.split(separator: " ") {
            try Self.check(true, numbers.count == Set(numbers).count, "retry")
        }
        switch config["expected_type"]?.string {
        case "cached":
            if !(response.status.code == 304 && serverNumber == nil) {
                try Self.check(
                    Self.isSetup(config, "expected_type"), (serverNumber ?? .max) < number, "Response \(number) does not come from cache")
            }
        case "not_cached":
            try Self.check(Self.isSetup(config, "expected_type"), serverNumber == number, "Response \(number) comes from cache")
        default: break
        }
        let status = response.status.code
        if let expected = config["expected_status"] {
            if let code = expected.int {
                try Self.check(
                    Self.isSetup(config, "expected_status"), status == code, "Response \(number) status is \(status), not \(code)")
            }
        } else if let configured = config["response_status"]?[0]?.int {
            try Self.check(true, status == configured, "Response \(number) status is \(status), not \(configured)")
        } else if status == 999 {
            try Self.check(Self.isSetup(config, "expected_type"), false, "Request \(number) should have been conditional, but it was not.")
        } else {
            try Self.check(true, status == 200, "Response \(number) status is \(status), not 200")
        }
        let headersSetup = Self.isSetup(config, "expected_response_headers")
        for expected in config["expected_response_headers"]?.array ?? [] {
            if let name = expected.string {
                try Self.check(headersSetup, Self.header(response, name) != nil, "Response \(number) \(name) header not present.")
                continue
            }
            guard let name = expected[0]?.string else { continue }
            let value = Self.header(response, name)
            if expected.array.count > 2 {
                try Self.check(headersSetup, value != nil, "Response \(number) \(name) header not present.")
                let operation = expected[1]?.string
                if operation == "=" {
                    let other = Self.header(response, expected[2]?.text ?? "")
                    try Self.check(headersSetup, value == other, "Response \(number) header \(name) is \(value ?? "nil"), should match \(other ?? "nil")")
                } else {
                    let bound = expected[2]?.number ?? 0
                    let number = value.flatMap { Double($0.prefix { $0.isNumber }) }
                    try Self.check(headersSetup, (number ?? -.infinity) > bound, "Response header \(name) is \(value ?? "nil"), should be bigger than \(bound)")
                }
            } else {
                let serverNow = Self.header(response, "Server-Now").flatMap { Double($0) } ?? 0
                let wanted = CacheTestsServer.fixup(
                    name: name, value: expected[1] ?? .string(""), now: Date(timeIntervalSince1970: serverNow / 1000),
                    rfc850: config["rfc850date"]?.array.contains(.string(name.lowercased())) == true,
                    base: Self.header(response, "Server-Base-Url") ?? "", magicLocations: config["magic_locations"]?.isTrue ?? false)
                try Self.check(headersSetup, value == wanted, "Response \(number) header \(name) is \"\(value ?? "nil")\", not \"\(wanted)\"")
            }
        }
        let missingSetup = Self.isSetup(config, "expected_response_headers_missing")
        for missing in config["expected_response_headers_missing"]?.array ?? [] {
            if let name = missing.string {
                let value = Self.header(response, name)
                try Self.check(missingSetup, value == nil, "Response \(number) includes unexpected header \(name): \"\(value ?? "")\"")
            } else if let name = missing[0]?.string, let unwanted = missing[1]?.string, let value = Self.header(response, name) {
                try Self.check(missingSetup, !value.contains(unwanted), "Response \(number) header \(name) still has value \"\(value)\"")
            }
        }
        let body = String(decoding: answer.value, as: UTF8.self)
        if config["check_body"] == .bool(false) { return }
        if let expected = config["expected_response_text"] {
            if let text = expected.string {
                try Self.check(Self.isSetup(config, "expected_response_text"), body == text, "Response body is \"\(body)\", not \"\(text)\"")
            }
        } else if let configured = config["response_body"]?.string {
            try Self.check(true, body == configured, "Response body is \"\(body)\", not \"\(configured)\"")
        } else if status != 204, status != 304, config["request_method"]?.string != "HEAD" {
            try Self.check(true, body == uuid, "Response body is \"\(body)\", not \"\(uuid)\"")
        }
    }

    private static func checkServer(_ requests: [CacheTestJSON], responses: [DataResponse<Data>], seen: [CacheTestsServer.Seen]) throws {
        var index = 0
        for (offset, config) in requests.enumerated() {
            let number = offset + 1
            let typeSetup = Self.isSetup(config, "expected_type")
            let request = seen.indices.contains(index) ? seen[index] : nil
            var validators: [String] = []
            switch config["expected_type"]?.string {
            case "cached": continue
            case "not_cached":
                try Self.check(typeSetup, request?.requestNumber == number, "Response \(number) comes from cache (\(request?.requestNumber.map(String.init) ?? "none") on server)")
            case "etag_validated": validators.append("if-none-match")
            case "lm_validated": validators.append("if-modified-since")
            default: break
            }
            index += 1
            for validator in validators {
                try Self.check(typeSetup, request != nil, "request \(number) wasn't sent to server")
                try Self.check(typeSetup, request?.requestHeaders[validator] != nil, "request \(number) doesn't have \(validator) header")
            }
            let presentSetup = Self.isSetup(config, "expected_request_headers")
            for expected in config["expected_request_headers"]?.array ?? [] {
                if let name = expected.string {
                    try Self.check(presentSetup, request?.requestHeaders[name.lowercased()] != nil, "Request \(number) \(name) header not present.")
                } else if let name = expected[0]?.string {
                    let value = request?.requestHeaders[name.lowercased()]
                    try Self.check(presentSetup, value == expected[1]?.text, "Request \(number) header \(name) is \"\(value ?? "nil")\", not \"\(expected[1]?.text ?? "")\"")
                }
            }
            let missingSetup = Self.isSetup(config, "expected_request_headers_missing")
            for missing in config["expected_request_headers_missing"]?.array ?? [] {
                if let name = missing.string {
                    try Self.check(missingSetup, request?.requestHeaders[name.lowercased()] == nil, "Request \(number) \(name) header present.")
                } else if let name = missing[0]?.string {
                    let value = request?.requestHeaders[name.lowercased()]
                    try Self.check(missingSetup, value != missing[1]?.text, "Request \(number) header \(name) is \"\(value ?? "nil")\"")
                }
            }
            if let request {
                for (name, values) in request.responseHeaders where name.lowercased() != "date" {
                    let received = Self.header(responses[offset].response, name)
                    let sent = values.joined(separator: ", ")
                    try Self.check(false, received == sent, "Response \(number) header \(name) is \"\(received ?? "nil")\", not \"\(sent)\"")
                }
            }
            if let method = config["expected_method"]?.string {
                try Self.check(
                    Self.isSetup(config, "expected_method"), request?.method == method,
                    "Request \(number) had method \(request?.method ?? "none"), not \(method)")
            }
        }
    }
}
