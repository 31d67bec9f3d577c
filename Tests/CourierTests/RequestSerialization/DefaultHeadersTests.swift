@testable import Courier
import Foundation
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

        @Test(
            "Accept-Language from the environment, as gettext reads it",
            arguments: [
                ([:], "en;q=1"),
                (["LANG": "C"], "en;q=1"),
                (["LANG": "POSIX"], "en;q=1"),
                (["LANG": "C.UTF-8", "LANGUAGE": "de:fr"], "en;q=1"),
                (["LANGUAGE": "de:fr"], "en;q=1"),
                (["LANG": "de_DE.UTF-8"], "de-DE;q=1"),
                (["LANG": "de_DE.UTF-8", "LC_ALL": ""], "de-DE;q=1"),
                (["LANG": "de_DE.UTF-8", "LC_MESSAGES": "fr_FR@euro"], "fr-FR;q=1"),
                (["LANG": "de_DE.UTF-8", "LC_MESSAGES": "fr_FR", "LC_ALL": "pt_BR.UTF-8"], "pt-BR;q=1"),
                (["LANG": "de_DE.UTF-8", "LANGUAGE": "fr_CA:fr:en_GB:fr"], "fr-CA;q=1, fr;q=0.9, en-GB;q=0.8"),
                (["LANG": "nb_NO.UTF-8", "LANGUAGE": ""], "nb-NO;q=1"),
                (["LANG": "en_US.UTF-8", "LANGUAGE": "a1:de\r\nX-Evil: 1:/usr/share/locale:sv"], "sv;q=1"),
                (["LANG": "en_US.UTF-8", "LANGUAGE": "aa:bb:cc:dd:ee:ff:gg"], "aa;q=1, bb;q=0.9, cc;q=0.8, dd;q=0.7, ee;q=0.6, ff;q=0.5"),
            ] as [([String: String], String)]
        )
        func acceptLanguageFromTheEnvironment(environment: [String: String], expected: String) {
            #expect(DefaultHeaders.acceptLanguage(preferredLanguages: DefaultHeaders.posixPreferredLanguages(environment: environment)) == expected)
        }

        #if os(Linux)
        /// Foundation on Linux answers `en-001` to `Locale.preferredLanguages` whatever the user
        /// set: every serializer's `Accept-Language` was `en-001;q=1`.
        @Test("On Linux, a serializer's Accept-Language comes from the environment")
        func serializerReadsTheEnvironment() {
            let environment = ProcessInfo.processInfo.environment
            let expected = DefaultHeaders.acceptLanguage(preferredLanguages: DefaultHeaders.posixPreferredLanguages(environment: environment))
            #expect(HTTPRequestSerializer().value(forHTTPHeaderField: "Accept-Language") == expected)
            #expect(DefaultHeaders.preferredLanguages(environment: ["LANG": "sv_SE.UTF-8"]) == ["sv-SE"])
        }
        #endif

        @Test("User-Agent in AFNetworking's form, ASCII only")
        func userAgent() {
            #expect(DefaultHeaders.userAgent(name: "MyApp", version: "1.2", platform: "Linux", osVersion: "Debian 12") == "MyApp/1.2 (Linux; Debian 12)")
            #expect(DefaultHeaders.userAgent(name: "tool", version: nil, platform: "Linux", osVersion: "6.1.0") == "tool (Linux; 6.1.0)")
            #expect(DefaultHeaders.userAgent(name: "Café😀", version: "2", platform: "Linux", osVersion: "x (y)") == "Cafe/2 (Linux; x y)")
            #expect(DefaultHeaders.userAgent(name: "日本", version: "1", platform: "Linux", osVersion: "") == "Courier/1 (Linux)")
        }
    }
}
