import Courier
import Foundation
import Testing

/// What we encode, servers decode: every awkward case goes through TestServer and, when
/// configured, a real httpbin, as a query, a form body and a JSON body.
@Suite("Request serialization round trips")
struct RequestSerializationRoundTripTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let parameters: Parameters
        var testDescription: String { self.name }
    }

    static let cases: [Case] = [
        Case(name: "spaces and plus", parameters: ["q": "a+b c", "p": "1 + 1 = 2"]),
        Case(name: "emoji across batch boundaries", parameters: ["e": String(repeating: "a", count: 47) + "👨🏽‍💻🇫🇷e\u{301}" + String(repeating: "😀", count: 30)]),
        Case(name: "already percent-encoded", parameters: ["already": "%20%2B%", "slash": "a/b?c"]),
        Case(name: "keys with brackets and unicode", parameters: ["we[ird]": "1", "ключ": "значение", "日本": "語"]),
        Case(name: "nested dictionaries and arrays", parameters: ["user": ["name": "Ada", "langs": ["swift", "c"]] as Parameters]),
        Case(name: "arrays of dictionaries", parameters: ["items": [["id": 1], ["id": 2]] as [any Sendable]]),
        Case(name: "booleans and numbers", parameters: ["t": true, "f": false, "i": 42, "d": 0.1, "big": 1e21]),
        Case(name: "reserved characters", parameters: ["r": ":#[]@!$&'()*+,;=", "amp": "a&b=c"]),
        // gunicorn refuses request lines over 4094 bytes: long, but under that.
        Case(name: "very long value", parameters: ["long": String(repeating: "x€", count: 300)]),
    ]

    /// The pairs the query string carries, decoded as a server decodes them.
    func expectedPairs(_ parameters: Parameters) throws -> [String: [String]] {
        let query = try HTTPRequestSerializer.queryString(from: parameters)
        var result: [String: [String]] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0]).removingPercentEncoding!
            let value = parts.count > 1 ? String(parts[1]).removingPercentEncoding! : ""
            result[key, default: []].append(value)
        }
        return result
    }

    /// httpbin's echo of `args` or `form`: a string, or a list for a repeated key.
    func echoedPairs(_ object: Any?) -> [String: [String]] {
        guard let dictionary = object as? [String: any Sendable] else { return [:] }
        return dictionary.mapValues { value in
            if let list = value as? [any Sendable] { return list.compactMap { $0 as? String } }
            return [value as? String ?? "\(value)"]
        }
    }

    @Test(arguments: Peer.all, cases)
    func queryAndFormBodyRoundTrip(_ peer: Peer, _ testCase: Case) async throws {
        let expected = try self.expectedPairs(testCase.parameters)
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let get = try await manager.get("get", parameters: testCase.parameters)
                #expect(self.echoedPairs(get.value.json?["args"]) == expected, "query")
                let post = try await manager.post("post", parameters: testCase.parameters)
                #expect(self.echoedPairs(post.value.json?["form"]) == expected, "form body")
            }
        }
    }

    @Test(arguments: Peer.all)
    func jsonBodyRoundTrip(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                manager.requestSerializer = JSONRequestSerializer()
                let parameters: Parameters = ["name": "pen ✒️", "price": 1.5, "tags": ["a", "b"], "nested": ["ok": true] as Parameters]
                let response = try await manager.post("post", parameters: parameters)
                let json = try #require(response.value.json?["json"] as? [String: any Sendable])
                #expect(json["name"] as? String == "pen ✒️")
                #expect((json["price"] as? NSNumber)?.doubleValue == 1.5)
                #expect((json["tags"] as? [any Sendable])?.compactMap { $0 as? String } == ["a", "b"])
                let nested = try #require(json["nested"] as? [String: any Sendable])
                #expect((nested["ok"] as? NSNumber)?.boolValue == true)
            }
        }
    }

    struct Filter: Encodable, Sendable {
        let query: String
        let tags: [String]
        let page: Int
    }

    @Test(arguments: Peer.all)
    func encodableParametersRoundTrip(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let value = Filter(query: "a b+c", tags: ["x", "y"], page: 3)
                let asJSON = try await manager.response(
                    method: .post, urlString: "post", parameters: value, encoder: JSONParameterEncoder.default, serializer: JSONResponseSerializer())
                let json = try #require(asJSON.value.json?["json"] as? [String: any Sendable])
                #expect(json["query"] as? String == "a b+c")
                let asForm = try await manager.response(
                    method: .get, urlString: "get", parameters: value,
                    encoder: URLEncodedFormParameterEncoder(destination: .queryString), serializer: JSONResponseSerializer())
                let args = self.echoedPairs(asForm.value.json?["args"])
                #expect(args["query"] == ["a b+c"])
                #expect(args["tags[]"] == ["x", "y"])
                #expect(args["page"] == ["3"])
            }
        }
    }
}
