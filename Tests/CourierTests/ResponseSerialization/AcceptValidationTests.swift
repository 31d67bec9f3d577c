import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// `validatingAccept(of:)` without I/O: which content types an `Accept` field takes.
@Suite("Response serialization: validation against the request's Accept")
struct AcceptValidationTests {
    static func takes(_ accept: String?, _ contentType: String?, body: String = "x") -> Bool {
        var request = Request(url: URL(string: "http://example.com/")!)
        if let accept { request.headerFields[.accept] = accept }
        var response = HTTPResponse(status: .ok)
        if let contentType { response.headerFields[.contentType] = contentType }
        do {
            _ = try DataResponseSerializer().validatingAccept(of: request).responseObject(for: response, data: Data(body.utf8))
            return true
        } catch {
            #expect(error.code == .unacceptableContentType)
            return false
        }
    }

    @Test("Ranges, wildcards, parameters, case and q=0")
    func ranges() {
        #expect(Self.takes(nil, "image/png"), "no Accept takes anything")
        #expect(Self.takes("", "image/png"))
        #expect(Self.takes("application/json", "application/json; charset=utf-8"))
        #expect(Self.takes("Application/JSON", "application/json"))
        #expect(!Self.takes("application/json", "application/xml"))
        #expect(Self.takes("application/*", "application/xml"))
        #expect(!Self.takes("text/*", "application/xml"))
        #expect(Self.takes("text/html;q=0.9, */*;q=0.1", "image/png"))
        #expect(!Self.takes("application/json, */*;q=0", "image/png"), "q=0 refuses its range")
        #expect(!Self.takes("application/json;q=0", "application/json"), "every range refused: nothing is taken")
        #expect(!Self.takes("application/json", nil), "a body without a type is refused")
        #expect(Self.takes("*/*", nil))
        #expect(Self.takes("application/json", "text/html", body: ""), "an empty body is not checked")
    }

    /// The most specific range that matches decides (RFC 9110, 12.5.1): a refused `image/webp`
    /// or `text/html` is refused under a taken `*/*` or `text/*` (the refusals were dropped before
    /// matching, and the wildcard took them).
    @Test func mostSpecificRangeDecides() {
        #expect(!Self.takes("*/*, image/webp;q=0", "image/webp"))
        #expect(Self.takes("*/*, image/webp;q=0", "image/png"))
        #expect(!Self.takes("text/*, text/html;q=0", "text/html"))
        #expect(Self.takes("text/*, text/html;q=0", "text/plain"))
        #expect(!Self.takes("*/*, text/*;q=0", "text/plain"))
        #expect(Self.takes("*/*, text/*;q=0, text/plain", "text/plain"))
        #expect(Self.takes("*/*, image/webp;q=0", nil), "a body without a type is taken by */*")
        #expect(Self.takes("*/*, image/webp;q=0", "image/webp", body: ""), "an empty body is not checked")
    }

    /// The list is split at the bytes of its delimiters, outside quoted strings: a comma joined
    /// to a combining mark still ends the refused element (read whole, its `q=0` did not parse and
    /// it counted as taken), and a comma inside a quoted parameter ends nothing.
    @Test func delimitersAreBytesOutsideQuotedStrings() {
        #expect(!Self.takes("text/html;q=0,\u{301}application/json", "text/html"))
        #expect(WeightedList.elements(#"text/html;x="a,b";q=0, application/json"#).map(\.value) == ["text/html", "application/json"])
        #expect(WeightedList.elements(#"text/html;x="a,b";q=0, application/json"#).map(\.refused) == [true, false])
        #expect(WeightedList.elements(#"a;x="q\";q=0", b"#).map(\.refused) == [false, false], "an escaped quote stays inside")
        #expect(HopHandler.acceptsDecodedCoding(["br, gzip;q=0,\u{301}identity"]) == false)
    }

    /// A `Decodable` request for JSON answered with an HTML page under a 200 fails the Accept
    /// check in both forms, as Alamofire's `validate()` before `responseDecodable`: the
    /// value-and-error form (callbacks, notifications, the retry check) reported the decoder's
    /// failure instead.
    @Test func aRefusedTypeIsTheErrorBeforeTheDecodersInBothForms() {
        struct User: Decodable, Sendable { var id: Int }
        var request = Request(url: URL(string: "http://example.com/")!)
        request.headerFields[.accept] = "application/json"
        var response = HTTPResponse(status: .ok)
        response.headerFields[.contentType] = "text/html"
        let page = Data("<html>sign in</html>".utf8)
        let serializer = DecodableResponseSerializer(User.self).validatingAccept(of: request)
        #expect(serializer.serialize(response: response, data: page).error?.code == .unacceptableContentType)
        #expect {
            try serializer.responseObject(for: response, data: page)
        } throws: { ($0 as? CourierError)?.code == .unacceptableContentType }
    }

    @Test("The serializer's own status codes still apply, before the Accept check")
    func statusFirst() {
        var request = Request(url: URL(string: "http://example.com/")!)
        request.headerFields[.accept] = "application/json"
        var response = HTTPResponse(status: .notFound)
        response.headerFields[.contentType] = "text/html"
        #expect {
            try DataResponseSerializer().validatingAccept(of: request).responseObject(for: response, data: Data("x".utf8))
        } throws: { ($0 as? CourierError)?.code == .unacceptableStatusCode }
    }
}
