import Foundation
import HTTPTypes
import Testing

@testable import Courier

/// Go's client redirect tables (go1.19, `net/http/client_test.go`, BSD-style licence):
/// `TestClientRedirectTypes` (the method a redirect is followed with) and
/// `TestShouldCopyHeaderOnRedirect` (which fields go to the next URL), through
/// ``RedirectPlanner``, the rule every Courier engine follows.
///
/// Courier follows the Fetch standard and URLSession (which AFNetworking and Alamofire run on)
/// where Go differs: a 301 or 302 changes only a `POST` into a `GET` (Go changes every method
/// but `GET` and `HEAD`), and credentials and cookies go only to the same origin, scheme, host
/// and port (Go sends them to the same host and its subdomains, whatever the scheme or port).
/// Each row says what Courier does; where Go's answer differs, it is in the comment.
@Suite("Go's redirect tests")
struct GoRedirectTests {
    static func step(_ method: HTTPRequest.Method, _ status: Int, from: String = "http://127.0.0.1/a", to: String = "http://127.0.0.1/b",
                     fields: HTTPFields = [:]) -> Request? {
        var request = Request(method: method, url: URL(string: from)!)
        request.headerFields = fields
        var head = HTTPResponse(status: .init(code: status))
        head.headerFields[.location] = to
        guard case .follow(let next) = RedirectPlanner.step(
            for: head, request: request, policy: .follow(max: 10, allowCycles: true), redirectCount: 0, visitedURLs: [])
        else { return nil }
        return next
    }

    /// `TestClientRedirectTypes`: the method, the status, the method of the next request.
    @Test(arguments: [
        ("POST", 301, "GET"), ("POST", 302, "GET"), ("POST", 303, "GET"), ("POST", 307, "POST"), ("POST", 308, "POST"),
        ("HEAD", 301, "HEAD"), ("HEAD", 302, "HEAD"), ("HEAD", 303, "HEAD"), ("HEAD", 307, "HEAD"), ("HEAD", 308, "HEAD"),
        ("GET", 301, "GET"), ("GET", 302, "GET"), ("GET", 303, "GET"), ("GET", 307, "GET"), ("GET", 308, "GET"),
        // Go: GET after a 301 or 302 for DELETE, PUT and any other method.
        ("DELETE", 301, "DELETE"), ("DELETE", 302, "DELETE"), ("DELETE", 303, "GET"), ("DELETE", 307, "DELETE"), ("DELETE", 308, "DELETE"),
        ("PUT", 301, "PUT"), ("PUT", 302, "PUT"), ("PUT", 303, "GET"), ("PUT", 307, "PUT"), ("PUT", 308, "PUT"),
        ("MADEUPMETHOD", 301, "MADEUPMETHOD"), ("MADEUPMETHOD", 302, "MADEUPMETHOD"), ("MADEUPMETHOD", 303, "GET"),
        ("MADEUPMETHOD", 307, "MADEUPMETHOD"), ("MADEUPMETHOD", 308, "MADEUPMETHOD"),
    ])
    func theMethodARedirectKeeps(_ method: String, _ status: Int, _ want: String) throws {
        let next = try #require(Self.step(HTTPRequest.Method(method)!, status))
        #expect(next.method.rawValue == want)
    }

    /// `TestShouldCopyHeaderOnRedirect`: a field, the URL it went to, the next URL, whether it
    /// goes along.
    @Test(arguments: [
        ("User-Agent", "http://foo.com/", "http://bar.com/", true),
        ("X-Foo", "http://foo.com/", "http://bar.com/", true),
        ("Cookie", "http://foo.com/", "http://bar.com/", false),
        ("Authorization", "http://foo.com/", "http://bar.com/", false),
        ("Authorization", "http://foo.com/", "http://foo.com/", true),
        // Go: true (a subdomain).
        ("Authorization", "http://foo.com/", "http://sub.foo.com/", false),
        ("Authorization", "http://foo.com/", "http://notfoo.com/", false),
        ("Authorization", "http://foo.com/", "https://foo.com/", false),
        ("Authorization", "http://foo.com:80/", "http://foo.com/", true),
        // Go: true (a subdomain).
        ("Authorization", "http://foo.com:80/", "http://sub.foo.com/", false),
        // Go: true (the same host, port 443 on another scheme).
        ("Authorization", "http://foo.com:443/", "https://foo.com/", false),
        ("Authorization", "http://foo.com:443/", "https://sub.foo.com/", false),
        ("Authorization", "http://foo.com:1234/", "http://foo.com/", false),
    ])
    func theFieldsARedirectKeeps(_ field: String, _ from: String, _ to: String, _ kept: Bool) throws {
        let name = try #require(HTTPField.Name(field))
        var fields = HTTPFields()
        fields[name] = "value"
        let next = try #require(Self.step(.get, 302, from: from, to: to, fields: fields))
        #expect((next.headerFields[name] != nil) == kept)
    }
}
