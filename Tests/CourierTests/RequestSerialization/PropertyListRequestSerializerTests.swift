import Courier
import Foundation
import HTTPTypes
import Testing

extension RequestSerializationTests {
    @Suite("PropertyListRequestSerializer")
    struct PropertyListRequestSerializerTests {
        @Test("XML and binary round-trip, with application/x-plist")
        func formats() throws {
            let parameters: Parameters = [
                "s": "é", "i": 3, "d": 1.5, "t": true, "f": NSNumber(value: false),
                "date": Date(timeIntervalSince1970: 0), "data": Data([1, 2]), "list": [1, "a"] as [any Sendable], "nested": ["k": "v"],
            ]
            for format in [PropertyListRequestSerializer.Format.xml, .binary] {
                var serializer = PropertyListRequestSerializer()
                serializer.format = format
                let request = try serializer.request(method: .post, urlString: "https://h.test/", parameters: parameters)
                #expect(request.headerFields[.contentType] == "application/x-plist")
                let data = try #require(request.body.data)
                var actual = PropertyListSerialization.PropertyListFormat.openStep
                let object = try PropertyListSerialization.propertyList(from: data, options: [], format: &actual) as? [String: Any]
                #expect(object?["s"] as? String == "é")
                #expect((object?["i"] as? NSNumber)?.intValue == 3)
                #expect((object?["date"] as? Date) == Date(timeIntervalSince1970: 0))
                #expect((object?["data"] as? Data) == Data([1, 2]))
                #expect((object?["nested"] as? [String: Any])?["k"] as? String == "v")
                if format == .xml {
                    let text = String(decoding: data, as: UTF8.self)
                    #expect(text.contains("<key>t</key>\n\t<true/>"))
                    #expect(text.contains("<key>f</key>\n\t<false/>"))
                } else {
                    #expect(data.starts(with: Data("bplist00".utf8)))
                }
            }
        }

        /// An `Encodable` value's numbers reach the property list through their text: an integer
        /// above `Int64.max` was read as a `Double` and written `<real>1.8446744073709552e+19</real>`.
        @Test("an Encodable value's UInt64 above Int64.max stays an exact integer")
        func encodableUInt64() throws {
            struct Item: Encodable, Sendable {
                var id = UInt64.max
                var small: UInt64 = 7
                var ratio = 0.5
            }
            let request = try PropertyListRequestSerializer().request(method: .post, urlString: "https://h.test/", parameters: ["item": Item()])
            let text = String(decoding: try #require(request.body.data), as: UTF8.self)
            #expect(text.contains("<key>id</key>\n\t\t<integer>18446744073709551615</integer>"))
            #expect(text.contains("<key>small</key>\n\t\t<integer>7</integer>"))
            #expect(text.contains("<key>ratio</key>\n\t\t<real>0.5</real>"))
        }

        @Test("GET uses the query; nil parameters leave the body alone")
        func queryAndNil() throws {
            let serializer = PropertyListRequestSerializer()
            #expect(try serializer.request(method: .get, urlString: "https://h.test/", parameters: ["a": 1]).url.query == "a=1")
            let post = try serializer.request(method: .post, urlString: "https://h.test/", parameters: nil)
            #expect(post.body.isEmpty)
            #expect(post.headerFields[.contentType] == nil)
        }

        @Test(
            "values a property list cannot carry fail with their path",
            arguments: [
                (["a": ["b": NSNull()]] as Parameters, "'a[b]'"),
                (["s": Set(["x"])] as Parameters, "'s'"),
                (["l": [1, { @Sendable in }] as [any Sendable]] as Parameters, "'l[1]'"),
            ] as [(Parameters, String)]
        )
        func badValues(parameters: Parameters, path: String) {
            #expect {
                try PropertyListRequestSerializer().request(method: .put, urlString: "https://h.test/", parameters: parameters)
            } throws: { error in
                guard let error = error as? CourierError else { return false }
                return error.code == .parameterEncodingFailed && error.message.contains(path)
            }
        }
    }
}
