import Courier
import Foundation
import HTTPTypes
import Testing

extension RequestSerializationTests {
    @Suite("HTTPRequestSerializer")
    struct HTTPRequestSerializerTests {
        let serializer = HTTPRequestSerializer()

        struct URLCase: CustomTestStringConvertible, Sendable {
            var method: HTTPRequest.Method
            var url: String
            var parameters: Parameters?
            var expected: String
            var testDescription: String { "\(self.method.rawValue) \(self.url)" }
        }

        static let urlCases: [URLCase] = [
            URLCase(method: .get, url: "https://h.test/p", parameters: ["a": 1], expected: "https://h.test/p?a=1"),
            URLCase(method: .get, url: "https://h.test/p?x=1", parameters: ["a": 1], expected: "https://h.test/p?x=1&a=1"),
            URLCase(method: .get, url: "https://h.test/p?", parameters: ["a": 1], expected: "https://h.test/p?a=1"),
            URLCase(method: .get, url: "https://h.test/p#frag", parameters: ["a": 1], expected: "https://h.test/p?a=1#frag"),
            URLCase(method: .get, url: "https://h.test/p?x=1#frag", parameters: ["a": "b c"], expected: "https://h.test/p?x=1&a=b%20c#frag"),
            URLCase(method: .head, url: "https://h.test/", parameters: ["a": 1], expected: "https://h.test/?a=1"),
            URLCase(method: .delete, url: "https://h.test/r/1", parameters: ["force": true], expected: "https://h.test/r/1?force=1"),
            URLCase(method: .get, url: "https://h.test/p", parameters: [:], expected: "https://h.test/p"),
            URLCase(method: .get, url: "https://h.test/p", parameters: nil, expected: "https://h.test/p"),
            URLCase(method: .get, url: "https://h.test/p?x=1", parameters: ["a": [String]()], expected: "https://h.test/p?x=1"),
            URLCase(method: .post, url: "https://h.test/p?x=1#f", parameters: ["a": 1], expected: "https://h.test/p?x=1#f"),
        ]

        @Test("parameters in the URL", arguments: urlCases)
        func url(_ testCase: URLCase) throws {
            let request = try self.serializer.request(method: testCase.method, urlString: testCase.url, parameters: testCase.parameters)
            #expect(request.url.absoluteString == testCase.expected)
            if testCase.method != .post {
                #expect(request.body.isEmpty)
                #expect(request.headerFields[.contentType] == nil)
            }
        }

        @Test("GET, HEAD and DELETE encode parameters in the URI, as AFNetworking's default; OPTIONS and TRACE in the body")
        func defaultMethodsEncodingParametersInURI() throws {
            #expect(self.serializer.httpMethodsEncodingParametersInURI == ["GET", "HEAD", "DELETE"])
            for method in [HTTPRequest.Method.options, .trace] {
                let request = try self.serializer.request(method: method, urlString: "https://h.test/p", parameters: ["a": 1])
                #expect(request.url.query == nil)
                #expect(request.body.data == Data("a=1".utf8))
            }
        }

        @Test("other methods put parameters in a form body")
        func formBody() throws {
            for method in [HTTPRequest.Method.post, .put, .patch, HTTPRequest.Method("PURGE")!] {
                let request = try self.serializer.request(method: method, urlString: "https://h.test/p", parameters: ["b": "x y", "a": [1, 2]] as Parameters)
                #expect(request.body.data == Data("a%5B%5D=1&a%5B%5D=2&b=x%20y".utf8))
                #expect(request.headerFields[.contentType] == "application/x-www-form-urlencoded")
                #expect(request.url.absoluteString == "https://h.test/p")
            }
        }

        @Test("no parameters is a valid, empty form body")
        func emptyBody() throws {
            for parameters in [nil, [:] as Parameters] as [Parameters?] {
                let request = try self.serializer.request(method: .post, urlString: "https://h.test/p", parameters: parameters)
                #expect(request.body.data == Data())
                #expect(request.headerFields[.contentType] == "application/x-www-form-urlencoded")
            }
        }

        @Test("a Content-Type on the request wins")
        func contentTypeKept() throws {
            var request = Request(method: .post, url: URL(string: "https://h.test/")!)
            request.headerFields[.contentType] = "text/plain"
            let serialized = try self.serializer.request(bySerializing: request, parameters: ["a": 1])
            #expect(serialized.headerFields[.contentType] == "text/plain")
            #expect(serialized.body.data == Data("a=1".utf8))
        }

        @Test("methods encoding parameters in the URI compare without case")
        func methodsCaseInsensitive() throws {
            var serializer = self.serializer
            serializer.httpMethodsEncodingParametersInURI = ["get", "Post"]
            let post = try serializer.request(method: .post, urlString: "https://h.test/", parameters: ["a": 1])
            #expect(post.url.query == "a=1")
            #expect(post.body.isEmpty)
            let delete = try serializer.request(method: .delete, urlString: "https://h.test/", parameters: ["a": 1])
            #expect(delete.url.query == nil)
            #expect(delete.body.data == Data("a=1".utf8))
            let get = try serializer.request(method: .get, urlString: "https://h.test/", parameters: ["a": 1])
            #expect(get.url.query == "a=1")
        }

        @Test("headers: set, read (any case), remove; the request's own win")
        func headers() throws {
            var serializer = self.serializer
            serializer.setValue("1", forHTTPHeaderField: "X-One")
            serializer.setValue("2", forHTTPHeaderField: "x-one")
            #expect(serializer.value(forHTTPHeaderField: "X-ONE") == "2")
            #expect(serializer.httpRequestHeaders[values: HTTPField.Name("x-one")!].count == 1)
            serializer.setValue("serializer", forHTTPHeaderField: "Accept")
            serializer.setValue("ignored", forHTTPHeaderField: "Bad Name")
            #expect(serializer.value(forHTTPHeaderField: "Bad Name") == nil)

            var request = Request(url: URL(string: "https://h.test/")!)
            request.headerFields[.accept] = "mine"
            let serialized = try serializer.request(bySerializing: request, parameters: nil)
            #expect(serialized.headerFields[.accept] == "mine")
            #expect(serialized.headerFields[values: .accept].count == 1)
            #expect(serialized.value(forHTTPHeaderField: "x-one") == "2")

            serializer.setValue(nil, forHTTPHeaderField: "X-One")
            #expect(serializer.value(forHTTPHeaderField: "X-One") == nil)
        }

        /// A `Cookie` set as `a=1; b=2` is two fields (swift-http-types splits it); a request
        /// with a field of its own got the first only: the second was taken for the request's.
        @Test("a default header held as two fields is added whole to a request with fields of its own")
        func aDefaultHeldAsTwoFieldsIsAddedWhole() throws {
            var serializer = self.serializer
            serializer.setValue("a=1; b=2", forHTTPHeaderField: "Cookie")
            #expect(serializer.httpRequestHeaders[values: .cookie].count == 2)
            var request = Request(url: URL(string: "https://h.test/")!)
            request.headerFields[.accept] = "*/*"
            let serialized = try serializer.request(bySerializing: request, parameters: nil)
            #expect(serialized.headerFields[.cookie] == "a=1; b=2")
            let bare = try serializer.request(bySerializing: Request(url: URL(string: "https://h.test/")!), parameters: nil)
            #expect(bare.headerFields[.cookie] == "a=1; b=2")
        }

        @Test("Basic authorization, set and cleared")
        func authorization() {
            var serializer = self.serializer
            serializer.setAuthorizationHeaderField(username: "Aladdin", password: "open sesame")
            #expect(serializer.value(forHTTPHeaderField: "Authorization") == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
            serializer.setAuthorizationHeaderField(username: "ü", password: "p:w")
            #expect(serializer.value(forHTTPHeaderField: "authorization") == "Basic " + Data("ü:p:w".utf8).base64EncodedString())
            serializer.clearAuthorizationHeader()
            #expect(serializer.value(forHTTPHeaderField: "Authorization") == nil)
        }

        @Test("default headers: Accept-Language and User-Agent")
        func defaultHeaders() throws {
            let userAgent = try #require(self.serializer.value(forHTTPHeaderField: "User-Agent"))
            #expect(userAgent.contains(" ("))
            #expect(userAgent.allSatisfy { $0.isASCII })
            #if os(Linux)
            #expect(userAgent.contains("(Linux; "))
            // From the environment (DefaultHeadersTests checks how), never empty: `en` at least.
            #expect(self.serializer.value(forHTTPHeaderField: "Accept-Language")?.contains(";q=1") == true)
            #else
            if !Locale.preferredLanguages.isEmpty {
                let acceptLanguage = try #require(self.serializer.value(forHTTPHeaderField: "Accept-Language"))
                #expect(acceptLanguage.hasPrefix(Locale.preferredLanguages[0] + ";q=1"))
            }
            #endif
            let request = try self.serializer.request(method: .get, urlString: "https://h.test/", parameters: nil)
            #expect(request.headerFields[.userAgent] == userAgent)
        }

        @Test("request options only when set; the request's own win")
        func options() throws {
            let plain = try self.serializer.request(method: .get, urlString: "https://h.test/", parameters: nil)
            #expect(plain.options == RequestOptions())

            var serializer = self.serializer
            serializer.timeoutInterval = 12
            serializer.cachePolicy = .reloadIgnoringLocalCacheData
            serializer.httpShouldHandleCookies = false
            let configured = try serializer.request(method: .get, urlString: "https://h.test/", parameters: nil)
            #expect(configured.options.timeoutInterval == 12)
            #expect(configured.options.cachePolicy == .reloadIgnoringLocalCacheData)
            #expect(configured.options.httpShouldHandleCookies == false)
            #expect(configured.options.allowsCellularAccess == nil)
            #expect(configured.options.httpShouldUsePipelining == nil)

            var request = Request(url: URL(string: "https://h.test/")!)
            request.options.timeoutInterval = 3
            let merged = try serializer.request(bySerializing: request, parameters: nil)
            #expect(merged.options.timeoutInterval == 3)
            #expect(merged.options.cachePolicy == .reloadIgnoringLocalCacheData)
        }

        @Test("custom query-string serialization, and its error reaches the caller")
        func customQueryString() throws {
            struct Refused: Error {}
            var serializer = self.serializer
            serializer.setQueryStringSerialization { request, parameters in
                "custom=\(request.method.rawValue)"
            }
            let get = try serializer.request(method: .get, urlString: "https://h.test/?a=1", parameters: ["x": 1])
            #expect(get.url.absoluteString == "https://h.test/?a=1&custom=GET")
            let post = try serializer.request(method: .post, urlString: "https://h.test/", parameters: ["x": 1])
            #expect(post.body.data == Data("custom=POST".utf8))

            serializer.setQueryStringSerialization { _, _ in throw Refused() }
            #expect {
                try serializer.request(method: .get, urlString: "https://h.test/", parameters: ["x": 1])
            } throws: { error in
                guard let error = error as? CourierError else { return false }
                return error.code == .parameterEncodingFailed && error.underlyingError is Refused && error.request != nil
            }

            serializer.setQueryStringSerialization(with: .default)
            #expect(try serializer.request(method: .get, urlString: "https://h.test/", parameters: ["x": 1]).url.query == "x=1")
        }

        /// A query added to a URL is normalized as a URL string is (``HTTPRequestSerializer/url(from:)``):
        /// the builder's `%5B` is kept beside a raw `[` (Foundation's parser encoded the whole
        /// query again, and `c=%5B` went out as `c=%255B`).
        @Test func anAppendedQueryKeepsItsEscapes() throws {
            var serializer = self.serializer
            serializer.setQueryStringSerialization { _, _ in "c=%5B&a=[1]" }
            let get = try serializer.request(method: .get, urlString: "https://h.test/", parameters: ["x": 1])
            #expect(get.url.query == "c=%5B&a=%5B1%5D")
            let appended = try serializer.request(method: .get, urlString: "https://h.test/?z=1#top", parameters: ["x": 1])
            #expect(appended.url.absoluteString == "https://h.test/?z=1&c=%5B&a=%5B1%5D#top")
        }

        /// A `#` that a custom builder (or a form encoder allowing it) leaves in the query began
        /// the URL's fragment: the parameters after it were never sent, and the URL's own
        /// fragment was mangled (`#swift&page=2%23top`).
        @Test func aHashInAnAppendedQueryIsData() throws {
            var serializer = self.serializer
            serializer.setQueryStringSerialization { _, _ in "tag=#swift&page=2" }
            let get = try serializer.request(method: .get, urlString: "https://h.test/", parameters: ["x": 1])
            #expect(get.url.absoluteString == "https://h.test/?tag=%23swift&page=2")
            #expect(get.url.fragment == nil)
            let appended = try serializer.request(method: .get, urlString: "https://h.test/?z=1#top", parameters: ["x": 1])
            #expect(appended.url.absoluteString == "https://h.test/?z=1&tag=%23swift&page=2#top")
            #expect(appended.url.fragment == "top")

            var encoder = URLEncodedFormEncoder()
            var allowed = URLEncodedFormEncoder.queryAllowedCharacters
            allowed.insert(charactersIn: "#")
            encoder.allowedCharacters = allowed
            let request = Request(method: .get, url: URL(string: "https://h.test/p#top")!)
            let encoded = try URLEncodedFormParameterEncoder(encoder: encoder).encode(["tag": "#swift", "z": "1"], into: request)
            #expect(encoded.url.absoluteString == "https://h.test/p?tag=%23swift&z=1#top")
        }

        @Test("a custom query-string builder sees the request before the default headers, as AFNetworking's block does")
        func customQueryStringRequest() throws {
            var serializer = self.serializer
            serializer.setValue("secret", forHTTPHeaderField: "X-Api-Key")
            serializer.timeoutInterval = 7
            serializer.setQueryStringSerialization { request, _ in
                let seen = [
                    "key": request.value(forHTTPHeaderField: "X-Api-Key"),
                    "agent": request.value(forHTTPHeaderField: "User-Agent"),
                    "own": request.value(forHTTPHeaderField: "X-Own"),
                    "timeout": request.options.timeoutInterval.map { String(Int($0)) },
                ]
                return seen.sorted { $0.key < $1.key }.map { $0.key + "=" + ($0.value ?? "none") }.joined(separator: "&")
            }
            let get = try serializer.request(method: .get, urlString: "https://h.test/", parameters: ["x": 1])
            #expect(get.url.query == "agent=none&key=none&own=none&timeout=7")
            #expect(get.value(forHTTPHeaderField: "X-Api-Key") == "secret")

            var own = Request(method: .post, url: URL(string: "https://h.test/")!)
            own.headerFields[HTTPField.Name("X-Own")!] = "mine"
            let post = try serializer.request(bySerializing: own, parameters: ["x": 1])
            #expect(post.body.data == Data("agent=none&key=none&own=mine&timeout=7".utf8))
            #expect(post.value(forHTTPHeaderField: "X-Api-Key") == "secret")
        }

        @Test("a style's array keys and booleans, in the query and in a form body; sets and numbers as before")
        func queryStringStyles() throws {
            var serializer = self.serializer
            let parameters: [String: any Sendable] = ["t": ["a", "b"] as [any Sendable], "on": true, "n": 1, "s": Set(["x", "y"])]
            #expect(
                try serializer.request(method: .get, urlString: "https://h.test/", parameters: parameters).url.query
                    == "n=1&on=1&s=x&s=y&t%5B%5D=a&t%5B%5D=b")
            serializer.setQueryStringSerialization(with: .init(arrayEncoding: .indexInBrackets, boolEncoding: .literal))
            #expect(
                try serializer.request(method: .get, urlString: "https://h.test/", parameters: parameters).url.query
                    == "n=1&on=true&s=x&s=y&t%5B0%5D=a&t%5B1%5D=b")
            serializer.queryStringSerializationStyle = .init(arrayEncoding: .noBrackets)
            let post = try serializer.request(method: .post, urlString: "https://h.test/", parameters: parameters)
            #expect(post.body.data == Data("n=1&on=1&s=x&s=y&t=a&t=b".utf8))
            #expect(
                try HTTPRequestSerializer.queryString(from: parameters, style: .init(boolEncoding: .literal))
                    == "n=1&on=true&s=x&s=y&t%5B%5D=a&t%5B%5D=b")
        }

        @Test("stringEncoding: a body the encoding cannot represent names the parameter")
        func stringEncoding() throws {
            var serializer = self.serializer
            serializer.stringEncoding = .ascii
            // Escaped queries are ASCII: always representable.
            let escaped = try serializer.request(method: .post, urlString: "https://h.test/", parameters: ["k": "é"])
            #expect(escaped.body.data == Data("k=%C3%A9".utf8))
            // A custom serialization that does not escape.
            serializer.setQueryStringSerialization { _, parameters in
                let dictionary = parameters as? [String: any Sendable] ?? [:]
                return dictionary.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "&")
            }
            #expect {
                try serializer.request(method: .post, urlString: "https://h.test/", parameters: ["ok": "a", "user": ["name": "José"]] as Parameters)
            } throws: { error in
                guard let error = error as? CourierError else { return false }
                return error.code == .parameterEncodingFailed && error.message.contains("'user[name]'")
            }
            serializer.stringEncoding = .isoLatin1
            let latin1 = try serializer.request(method: .post, urlString: "https://h.test/", parameters: ["k": "é"])
            #expect(latin1.body.data == Data([0x6B, 0x3D, 0xE9]))
        }

        /// A value encoded as a keyed container `depth` deep, holding 1 at the bottom: its path has
        /// `depth + 1` keys. Computed as it encodes, so no deep tree is kept.
        struct Level: Encodable, Sendable {
            enum Key: CodingKey { case a }
            let depth: Int

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Key.self)
                if self.depth == 0 {
                    try container.encode(1, forKey: .a)
                } else {
                    try container.encode(Level(depth: self.depth - 1), forKey: .a)
                }
            }
        }

        /// Parameters may nest `maximumParameterDepth` keys and indexes deep; deeper ones fail
        /// with a typed error in every serializer and in the form encoder, for dictionaries, arrays
        /// and `Encodable` values, before anything is written. Before, every depth was walked
        /// recursively, and some thousands of levels overflowed the stack.
        @Test("parameters nested deeper than maximumParameterDepth fail with parameterEncodingFailed")
        func nestingDepthIsBounded() throws {
            let limit = HTTPRequestSerializer.maximumParameterDepth
            #expect(limit == 512)
            /// A dictionary whose value 1 sits `depth` keys and indexes deep.
            func nested(_ depth: Int, arrays: Bool = false) -> any Sendable {
                var value: any Sendable = 1
                for _ in 0..<(depth - 1) {
                    value = arrays ? [value] as [any Sendable] : ["a": value] as [String: any Sendable]
                }
                return ["a": value] as [String: any Sendable]
            }
            func expectRefused(_ make: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
                let error = #expect(throws: CourierError.self, "parameters deeper than the limit are refused", sourceLocation: sourceLocation) {
                    try make()
                }
                #expect(error?.code == .parameterEncodingFailed, sourceLocation: sourceLocation)
                #expect(error?.message.contains("512") == true, "\(String(describing: error).prefix(200))", sourceLocation: sourceLocation)
            }
            let url = "https://h.test/"
            let json = JSONRequestSerializer()
            let plist = PropertyListRequestSerializer()
            for arrays in [false, true] {
                // At the limit: written.
                let deepest = nested(limit, arrays: arrays)
                #expect(try self.serializer.request(method: .get, urlString: url, parameters: deepest).url.query?.hasSuffix("=1") == true)
                #expect(try json.request(method: .post, urlString: url, parameters: deepest).body.data?.isEmpty == false)
                // One level more: refused by each.
                let tooDeep = nested(limit + 1, arrays: arrays)
                expectRefused { _ = try self.serializer.request(method: .get, urlString: url, parameters: tooDeep) }
                expectRefused { _ = try self.serializer.request(method: .post, urlString: url, parameters: tooDeep) }
                expectRefused { _ = try json.request(method: .post, urlString: url, parameters: tooDeep) }
                expectRefused { _ = try plist.request(method: .post, urlString: url, parameters: tooDeep) }
                expectRefused { _ = try self.serializer.multipartFormRequest(method: .post, urlString: url, parameters: tooDeep) }
                expectRefused { _ = try HTTPRequestSerializer.queryString(from: tooDeep) }
            }
            // `Encodable` values: alone in the form encoder, and below a parameter's own depth.
            #expect(try URLEncodedFormEncoder().encode(Level(depth: limit - 1)).hasSuffix("=1"))
            expectRefused { _ = try URLEncodedFormEncoder().encode(Level(depth: limit)) }
            let half = limit / 2
            var holder: any Sendable = Level(depth: half - 1)
            for _ in 0..<(half - 1) { holder = ["a": holder] as [String: any Sendable] }
            #expect(try json.request(method: .post, urlString: url, parameters: ["a": holder] as Parameters).body.data?.isEmpty == false)
            expectRefused { _ = try json.request(method: .post, urlString: url, parameters: ["a": ["b": holder] as Parameters] as Parameters) }
        }

        @Test(
            "malformed URL strings",
            arguments: ["", "not a url", "/relative/path", "http://", "http://[::1", "mailto:someone@example.com", "https://h.test:99999/"]
        )
        func malformedURL(_ urlString: String) {
            #expect(throws: CourierError(.invalidURL, "")) {
                try self.serializer.request(method: .get, urlString: urlString, parameters: ["a": 1])
            }
        }

        @Test("characters a URL cannot hold are percent-encoded by Foundation, then the query added")
    func urlWithSpaces() throws {
        let request = try self.serializer.request(method: .get, urlString: "https://h.test/a b?q=x y", parameters: ["k": "v w"])
        #expect(request.url.absoluteString == "https://h.test/a%20b?q=x%20y&k=v%20w")
    }

    @Test("parameters nested to any depth")
    func deepNesting() throws {
        var value: any Sendable = "leaf"
        for index in 0..<300 { value = ["k\(index % 10)": value] as Parameters }
        let query = try HTTPRequestSerializer.queryString(from: value)
        #expect(query.hasSuffix("=leaf"))
        #expect(query.components(separatedBy: "%5B").count == 300)
    }

    @Test("bad parameters fail before a request is made, with their path")
        func badParameters() {
            #expect {
                try self.serializer.request(method: .post, urlString: "https://h.test/", parameters: ["a": [["b": { @Sendable in }]]])
            } throws: { error in
                (error as? CourierError)?.message.contains("'a[0][b]'") == true
            }
        }

        @Test("the protocol is usable as an existential")
        func existential() throws {
            let serializers: [any RequestSerializer] = [HTTPRequestSerializer(), JSONRequestSerializer(), PropertyListRequestSerializer()]
            for serializer in serializers {
                let request = try serializer.request(method: .get, urlString: "https://h.test/", parameters: ["a": 1])
                #expect(request.url.query == "a=1")
            }
        }
    }
}
