@testable import Courier
import Foundation
import HTTPTypes
import Testing

@Suite("Base URL joins")
struct BaseURLTests {
    struct Join: Sendable, CustomTestStringConvertible {
        let base: String?
        let path: String
        let expected: String
        var testDescription: String { "\(self.base ?? "nil") + '\(self.path)'" }
    }

    static let joins: [Join] = [
        Join(base: "http://h/v1", path: "users", expected: "http://h/v1/users"),
        Join(base: "http://h/v1/", path: "users", expected: "http://h/v1/users"),
        Join(base: "http://h/v1", path: "/users", expected: "http://h/users"),
        Join(base: "http://h/v1/", path: "users?a=1", expected: "http://h/v1/users?a=1"),
        Join(base: "http://h/v1/", path: "../users", expected: "http://h/users"),
        Join(base: "http://h/v1/", path: "./users", expected: "http://h/v1/users"),
        Join(base: "http://h/v1/", path: "users/../x", expected: "http://h/v1/x"),
        Join(base: "http://h/v1/", path: "//other/x", expected: "http://other/x"),
        Join(base: "http://h/v1/", path: "https://x.example/z", expected: "https://x.example/z"),
        Join(base: "http://h/v1/", path: "", expected: "http://h/v1/"),
        Join(base: "http://h", path: "", expected: "http://h"),
        Join(base: "http://h", path: "users", expected: "http://h/users"),
        Join(base: "http://h", path: "/users", expected: "http://h/users"),
        Join(base: "http://h/", path: "users", expected: "http://h/users"),
        Join(base: "http://h:8080/v1/x?q=1", path: "users", expected: "http://h:8080/v1/x/users"),
        Join(base: "http://h/v1/", path: "?q=2", expected: "http://h/v1/?q=2"),
        Join(base: "http://h/v1/", path: "users#frag", expected: "http://h/v1/users#frag"),
        Join(base: "http://h/v1/", path: "a b", expected: "http://h/v1/a%20b"),
        // Escapes are kept beside characters that need escaping (Foundation encoded `%5B` again).
        Join(base: "http://h/v1/", path: "search?c=%5B&a=[1]", expected: "http://h/v1/search?c=%5B&a=%5B1%5D"),
        Join(base: nil, path: "http://h/x?f[n]=J%C3%B6rg&s=a b", expected: "http://h/x?f%5Bn%5D=J%C3%B6rg&s=a%20b"),
        Join(base: nil, path: "http://[::1]:8080/p q", expected: "http://[::1]:8080/p%20q"),
        Join(base: nil, path: "http://h/x?y=1", expected: "http://h/x?y=1"),
        Join(base: nil, path: "HTTPS://H/x", expected: "HTTPS://H/x"),
    ]

    @Test(arguments: joins)
    func joinsLikeNSURL(_ join: Join) throws {
        let manager = HTTPSessionManager(baseURL: join.base.flatMap(URL.init(string:)), engine: RefusingEngine())
        #expect(try manager.absoluteURLString(for: join.path) == join.expected)
    }

    @Test func resolvedStringsAreRememberedButErrorsAreNot() throws {
        let manager = HTTPSessionManager(baseURL: URL(string: "http://h/v1"), engine: RefusingEngine())
        // More distinct strings than the manager remembers: each still resolves correctly.
        for round in 0..<2 {
            for index in 0..<(HTTPSessionManager.resolvedURLStringLimit + 10) {
                #expect(try manager.absoluteURLString(for: "items/\(index)?round=\(round)") == "http://h/v1/items/\(index)?round=\(round)")
            }
        }
        #expect(try manager.absoluteURLString(for: "a") == "http://h/v1/a")
        #expect(try manager.absoluteURLString(for: "a") == "http://h/v1/a")
        for _ in 0..<2 {
            #expect(throws: CourierError.self) { try manager.absoluteURLString(for: "ftp://h/file") }
        }
    }

    /// AFNetworking's request serializer takes URL strings too: escapes next to characters that
    /// need escaping are kept, not encoded a second time.
    @Test func theRequestSerializerKeepsAURLStringsEscapes() throws {
        #expect(try HTTPRequestSerializer.url(from: "http://h/?c=%5B&a=[1]").absoluteString == "http://h/?c=%5B&a=%5B1%5D")
        #expect(try HTTPRequestSerializer.url(from: "http://h/plain?q=%20").absoluteString == "http://h/plain?q=%20")
    }

    @Test func baseURLWithPathGetsTrailingSlash() {
        #expect(HTTPSessionManager(baseURL: URL(string: "http://h/v1"), engine: RefusingEngine()).baseURL?.absoluteString == "http://h/v1/")
        #expect(HTTPSessionManager(baseURL: URL(string: "http://h"), engine: RefusingEngine()).baseURL?.absoluteString == "http://h")
        #expect(HTTPSessionManager(baseURL: URL(string: "http://h/v1?x=1"), engine: RefusingEngine()).baseURL?.absoluteString == "http://h/v1/?x=1")
    }

    @Test(arguments: [
        (nil as String?, "users", CourierError.Code.missingBaseURL),
        (nil, "/users", .missingBaseURL),
        (nil, "", .invalidURL),
        (nil, "http://", .invalidURL),
        (nil, "ftp://h/file", .unsupportedScheme),
        (nil, "mailto:a@b.c", .unsupportedScheme),
        ("http://h/", "ftp://h/file", .unsupportedScheme),
        (nil, "http://[::1", .invalidURL),
    ])
    func badURLStringsAreTypedErrors(base: String?, path: String, code: CourierError.Code) {
        let manager = HTTPSessionManager(baseURL: base.flatMap(URL.init(string:)), engine: RefusingEngine())
        #expect {
            try manager.absoluteURLString(for: path)
        } throws: { error in
            (error as? CourierError)?.code == code
        }
    }

    /// The manager's request for a URL string (Courier's serializers get a URL it parsed once)
    /// is the request the serializer makes of the absolute string itself, again and again.
    @Test(arguments: joins)
    func requestsAreTheSerializersOwn(_ join: Join) throws {
        let manager = HTTPSessionManager(baseURL: join.base.flatMap(URL.init(string:)), engine: RefusingEngine())
        let serializers: [any RequestSerializer] = [HTTPRequestSerializer(), JSONRequestSerializer(), PropertyListRequestSerializer()]
        for serializer in serializers {
            manager.requestSerializer = serializer
            let direct = try serializer.request(method: .get, urlString: join.expected, parameters: ["q": "1"])
            for _ in 0..<2 {
                let made = try manager.request(method: .get, urlString: join.path, parameters: ["q": "1"])
                #expect(made.url == direct.url)
                #expect(made.url.absoluteString == direct.url.absoluteString)
                #expect(made.headerFields == direct.headerFields)
            }
        }
    }

    /// A URL the resolution accepts but the serializer refuses (a port outside 0...65535) fails
    /// with the serializer's error every time, and is not remembered as a URL.
    @Test func aURLTheSerializerRefusesFailsEachTime() {
        let manager = HTTPSessionManager(baseURL: nil, engine: RefusingEngine())
        for _ in 0..<2 {
            #expect {
                try manager.request(method: .get, urlString: "http://h:99999/x", parameters: nil)
            } throws: { error in
                (error as? CourierError)?.code == .invalidURL
            }
        }
    }

    /// A verb's `headers` win over the serializer's by name, and a name given more than once is
    /// sent as given: setting the fields one by one kept only the last `Accept`.
    @Test func aVerbsHeadersGivenTwiceAreAllKept() throws {
        let manager = HTTPSessionManager(baseURL: URL(string: "http://h/v1/"), engine: RefusingEngine())
        var serializer = HTTPRequestSerializer()
        serializer.setValue("*/*", forHTTPHeaderField: "Accept")
        serializer.setValue("default", forHTTPHeaderField: "X-Foo")
        manager.requestSerializer = serializer
        var headers = HTTPFields()
        headers.append(HTTPField(name: .accept, value: "application/json"))
        headers.append(HTTPField(name: HTTPField.Name("x-foo")!, value: "mine"))
        headers.append(HTTPField(name: .accept, value: "text/plain;q=0.5"))
        let request = try manager.request(method: .get, urlString: "users", parameters: nil, headers: headers)
        #expect(request.headerFields[values: .accept] == ["application/json", "text/plain;q=0.5"])
        #expect(request.headerFields[values: HTTPField.Name("X-Foo")!] == ["mine"])
        #expect(request.headerFields[.userAgent] == serializer.value(forHTTPHeaderField: "User-Agent"))
        let form = try manager.multipartFormRequest(method: .post, urlString: "users", parameters: ["k": "v"], headers: headers) { _ in }
        #expect(form.headerFields[values: .accept] == ["application/json", "text/plain;q=0.5"])
        #expect(form.headerFields[values: HTTPField.Name("X-Foo")!] == ["mine"])
    }

    /// A serializer of the caller's own is asked with the absolute URL string, as always.
    @Test func aSerializerOfTheCallersOwnGetsTheString() throws {
        struct Recording: RequestSerializer {
            let strings = Recorder<String>()
            func request(method: HTTPRequest.Method, urlString: String, parameters: (any Sendable)?) throws(CourierError) -> Request {
                self.strings.append(urlString)
                return try HTTPRequestSerializer().request(method: method, urlString: urlString, parameters: parameters)
            }
            func request(bySerializing request: Request, parameters: (any Sendable)?) throws(CourierError) -> Request {
                try HTTPRequestSerializer().request(bySerializing: request, parameters: parameters)
            }
        }
        let serializer = Recording()
        let manager = HTTPSessionManager(baseURL: URL(string: "http://h/v1/"), engine: RefusingEngine())
        manager.requestSerializer = serializer
        _ = try manager.request(method: .get, urlString: "users", parameters: nil)
        _ = try manager.request(method: .get, urlString: "users", parameters: nil)
        #expect(serializer.strings.all == ["http://h/v1/users", "http://h/v1/users"])
    }
}
