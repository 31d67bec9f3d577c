import Courier
import Foundation
import HTTPTypes
import Testing

extension RequestSerializationTests {
    @Suite("Parameter encoders")
    struct ParameterEncoderTests {
        struct Item: Encodable, Sendable {
            var name = "pen/ink"
            var price = 1.5
            var tags = ["a"]
        }

        let post = Request(method: .post, url: URL(string: "https://h.test/p?x=1#f")!)
        let get = Request(method: .get, url: URL(string: "https://h.test/p?x=1#f")!)

        @Test("JSON body with Content-Type, keys sorted")
        func json() throws {
            let request = try JSONParameterEncoder.default.encode(Item(), into: self.post)
            #expect(request.body.data.map { String(decoding: $0, as: UTF8.self) } == #"{"name":"pen\/ink","price":1.5,"tags":["a"]}"#)
            #expect(request.headerFields[.contentType] == "application/json")
            #expect(request.url == self.post.url)
        }

        @Test("a custom JSONEncoder is used")
        func customEncoder() throws {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            encoder.keyEncodingStrategy = .convertToSnakeCase
            struct Body: Encodable, Sendable { var itemName = "a/b" }
            let request = try JSONParameterEncoder(encoder: encoder).encode(Body(), into: self.post)
            #expect(request.body.data == Data(#"{"item_name":"a/b"}"#.utf8))
        }

        @Test("nil parameters leave the request unchanged")
        func nilParameters() throws {
            let none: Item? = nil
            #expect(try JSONParameterEncoder.default.encode(none, into: self.post).body.isEmpty)
            #expect(try URLEncodedFormParameterEncoder.default.encode(none, into: self.get).url == self.get.url)
        }

        @Test("NaN in JSON fails with its path and the request")
        func jsonNaN() {
            struct Bad: Encodable, Sendable { var values = ["x": Double.infinity] }
            #expect {
                try JSONParameterEncoder.default.encode(Bad(), into: self.post)
            } throws: { error in
                guard let error = error as? CourierError else { return false }
                return error.code == .parameterEncodingFailed && error.message.contains("'values[x]'") && error.request != nil
            }
        }

        @Test("form: query for GET before the fragment, body for POST")
        func form() throws {
            let get = try URLEncodedFormParameterEncoder.default.encode(Item(), into: self.get)
            #expect(get.url.absoluteString == "https://h.test/p?x=1&name=pen/ink&price=1.5&tags%5B%5D=a#f")
            #expect(get.body.isEmpty)

            let post = try URLEncodedFormParameterEncoder.default.encode(Item(), into: self.post)
            #expect(post.body.data == Data("name=pen/ink&price=1.5&tags%5B%5D=a".utf8))
            #expect(post.headerFields[.contentType] == "application/x-www-form-urlencoded; charset=utf-8")
            #expect(post.url == self.post.url)
        }

        @Test("form destinations")
        func destinations() throws {
            let query = URLEncodedFormParameterEncoder(destination: .queryString)
            #expect(try query.encode(["a": 1], into: self.post).url.query == "x=1&a=1")
            let body = URLEncodedFormParameterEncoder(destination: .httpBody)
            #expect(try body.encode(["a": 1], into: self.get).body.data == Data("a=1".utf8))
        }
    }
}
