@testable import CourierCLI
import Foundation
import Testing

/// The URL word, read as HTTPie reads it (https://httpie.io/docs/cli/request-url).
@Suite("CLI: URL shorthands")
struct InvocationTests {
    /// `:` became `http://localhost:` and `://example.org` `http://localhost//example.org`.
    @Test("':' is http://localhost, '://host' is http://host, ':port/path' is localhost's")
    func shorthands() async throws {
        #expect(try Invocation.url(from: ":").absoluteString == "http://localhost")
        #expect(try Invocation.url(from: "://example.org/x").absoluteString == "http://example.org/x")
        #expect(try Invocation.url(from: "://localhost:3000/x?a=b").absoluteString == "http://localhost:3000/x?a=b")
        #expect(try Invocation.url(from: ":3000/bar").absoluteString == "http://localhost:3000/bar")
        #expect(try Invocation.url(from: ":3000").absoluteString == "http://localhost:3000")
        #expect(try Invocation.url(from: ":/foo").absoluteString == "http://localhost/foo")
        #expect(try Invocation.url(from: "example.org").absoluteString == "http://example.org")
        let result = try await CLIRunner.run(["--offline", ":"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.output == "GET / HTTP/1.1\nHost: localhost\nUser-Agent: courier/0.1.0\nAccept: */*\n\n", "\(result.output)")
    }
}
