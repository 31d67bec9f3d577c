import Foundation
import Testing

@testable import Courier

/// Go's `TestWriterSetBoundary` (go1.19, `mime/multipart/writer_test.go`, BSD-style licence):
/// which boundaries a form accepts, through ``MultipartFormData/init(boundary:)``; for each one
/// accepted, the `Content-Type` parameter reads back as the boundary, and the body ends with its
/// closing delimiter. Go's form has no part; this one has one field, as a body without parts is
/// no form to send. All agree.
@Suite("Go's multipart boundary tests")
struct GoMultipartBoundaryTests {
    static let cases: [(boundary: String, ok: Bool)] = [
        ("abc", true),
        ("", false),
        ("ung\u{FC}ltig", false),
        ("!", false),
        (String(repeating: "x", count: 70), true),
        (String(repeating: "x", count: 71), false),
        ("bad!ascii!", false),
        ("my-separator", true),
        ("with space", true),
        ("badspace ", false),
        ("(boundary)", true),
    ]

    /// The `boundary` parameter of a `Content-Type` value: a token, or a quoted string unquoted
    /// (RFC 9110 5.6.4); nil when it is neither.
    static func boundaryParameter(of contentType: String) -> String? {
        let prefix = "multipart/form-data; boundary="
        guard contentType.hasPrefix(prefix) else { return nil }
        let value = contentType.dropFirst(prefix.count)
        // Unquoted, only an HTTP token reads (as `mime.ParseMediaType` reads it).
        guard value.hasPrefix("\"") else {
            let token = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
            return value.allSatisfy(token.contains) ? String(value) : nil
        }
        guard value.count >= 2, value.hasSuffix("\"") else { return nil }
        var unquoted = ""
        var escaped = false
        for character in value.dropFirst().dropLast() {
            if !escaped, character == "\\" {
                escaped = true
                continue
            }
            escaped = false
            unquoted.append(character)
        }
        return unquoted
    }

    @Test(arguments: Self.cases)
    func writerSetBoundary(_ boundary: String, _ ok: Bool) async throws {
        let made: MultipartFormData?
        do {
            made = try MultipartFormData(boundary: boundary)
        } catch {
            #expect(error.code == .invalidRequest)
            made = nil
        }
        #expect((made != nil) == ok, "\(boundary)")
        guard var form = made else { return }
        #expect(form.boundary == boundary)
        #expect(Self.boundaryParameter(of: form.contentType) == boundary, "\(form.contentType)")
        form.appendPart(withForm: Data("v".utf8), name: "k")
        let body = String(decoding: try await collectBytes(of: form.body), as: UTF8.self)
        #expect(body.hasSuffix("\r\n--" + boundary + "--\r\n"))
    }
}
