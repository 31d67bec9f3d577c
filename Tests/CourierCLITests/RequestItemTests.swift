@testable import CourierCLI
import Foundation
import Testing

/// Request items read as HTTPie reads them (https://httpie.io/docs/cli/request-items), without a
/// process: the parsing is pure.
@Suite("CLI: request items")
struct RequestItemTests {
    /// HTTPie drops a backslash before a separator's character in the value too, and keeps one
    /// before any other character: the value kept its backslashes (`a=\@b` sent `\@b`), and the
    /// name lost the backslash before an ordinary character.
    @Test("A backslash makes a separator's character literal in the name and the value; before other characters it stays")
    func backslashEscapes() throws {
        #expect(try RequestItem(parsing: #"a=\@b"#) == .field(name: "a", value: "@b"))
        #expect(try RequestItem(parsing: #"token=x\=y"#) == .field(name: "token", value: "x=y"))
        #expect(try RequestItem(parsing: #"X-Pair:a\:b"#) == .header(name: "X-Pair", value: "a:b"))
        #expect(try RequestItem(parsing: #"foo\==bar"#) == .field(name: "foo=", value: "bar"))
        #expect(try RequestItem(parsing: #"path=C:\Users\x"#) == .field(name: "path", value: #"C:\Users\x"#))
        #expect(try RequestItem(parsing: #"a\b=1"#) == .field(name: #"a\b"#, value: "1"))
        #expect(try RequestItem(parsing: #"a=b\"#) == .field(name: "a", value: #"b\"#))
    }
}
