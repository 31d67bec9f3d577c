@testable import Courier
import Testing

extension RequestSerializationTests {
    @Suite("Default headers")
    struct DefaultHeadersTests {
        @Test(
            "Accept-Language with decreasing q-values, six at most",
            arguments: [
                ([], nil),
                (["en"], "en;q=1"),
                (["en-GB", "fr"], "en-GB;q=1, fr;q=0.9"),
                (["a", "b", "c", "d", "e", "f", "g", "h"], "a;q=1, b;q=0.9, c;q=0.8, d;q=0.7, e;q=0.6, f;q=0.5"),
            ] as [([String], String?)]
        )
        func acceptLanguage(languages: [String], expected: String?) {
            #expect(DefaultHeaders.acceptLanguage(preferredLanguages: languages) == expected)
        }

        @Test("User-Agent in AFNetworking's form, ASCII only")
        func userAgent() {
            #expect(DefaultHeaders.userAgent(name: "MyApp", version: "1.2", platform: "Linux", osVersion: "Debian 12") == "MyApp/1.2 (Linux; Debian 12)")
            #expect(DefaultHeaders.userAgent(name: "tool", version: nil, platform: "Linux", osVersion: "6.1.0") == "tool (Linux; 6.1.0)")
            #expect(DefaultHeaders.userAgent(name: "Café😀", version: "2", platform: "Linux", osVersion: "x (y)") == "Cafe/2 (Linux; x y)")
            #expect(DefaultHeaders.userAgent(name: "日本", version: "1", platform: "Linux", osVersion: "") == "Courier/1 (Linux)")
        }
    }
}
