import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import Courier

@Suite("Monitoring: cURLDescription() on requests and tasks")
struct CURLDescriptionTests {
    @Test("A JSON PUT: the method, the URL, the header fields without Content-Length, the body; quoted for a POSIX shell")
    func json() throws {
        var request = Request(method: .put, url: URL(string: "https://api.example.com/items/1?a=b&c=d")!, body: .data(Data(#"{"name":"O'Brien"}"#.utf8)))
        request.headerFields[.contentType] = "application/json"
        request.headerFields[.contentLength] = "18"
        request.headerFields[HTTPField.Name("X-Empty")!] = ""
        #expect(
            request.cURLDescription() == """
                curl --request PUT 'https://api.example.com/items/1?a=b&c=d' \\
                  --header 'Content-Type: application/json' \\
                  --header 'X-Empty;' \\
                  --data-binary '{"name":"O'\\''Brien"}'
                """)
        #expect(
            try request.cURLArguments() == [
                "--request", "PUT", "'https://api.example.com/items/1?a=b&c=d'", "--header", "'Content-Type: application/json'", "--header",
                "'X-Empty;'", "--data-binary", #"'{"name":"O'\''Brien"}'"#,
            ])
    }

    @Test("GET and HEAD, POST with a body (curl's default), a file body, and bodies curl cannot take on a command line")
    func bodies() throws {
        #expect(Request(url: URL(string: "http://x.test/")!).cURLDescription() == "curl http://x.test/")
        #expect(Request(method: .head, url: URL(string: "http://x.test/")!).cURLDescription() == "curl --head http://x.test/")
        let post = Request(method: .post, url: URL(string: "http://x.test/")!, body: .data(Data("a=1".utf8)))
        #expect(post.cURLDescription() == "curl http://x.test/ \\\n  --data-binary a=1")
        #expect(try post.cURLArguments(includingBody: false) == ["http://x.test/"])
        // A body that starts with `@` is sent as it is, not read from the file it names.
        let at = Request(method: .post, url: URL(string: "http://x.test/")!, body: .data(Data("@/etc/passwd".utf8)))
        #expect(at.cURLDescription() == "curl http://x.test/ \\\n  --data-raw @/etc/passwd")
        let file = Request(method: .put, url: URL(string: "http://x.test/")!, body: .file(URL(fileURLWithPath: "/tmp/my file.bin")))
        #expect(file.cURLDescription() == "curl --request PUT http://x.test/ \\\n  --data-binary '@/tmp/my file.bin'")
        let binary = Request(method: .post, url: URL(string: "http://x.test/")!, body: .data(Data([0xff, 0x00, 0x01])))
        #expect(binary.cURLDescription().hasSuffix("\n# the body (3 bytes) is not text; curl would need it in a file (--data-binary @file)"))
        #expect(throws: CourierError(.invalidRequest, "")) { try binary.cURLArguments() }
        let stream = Request(
            method: .post, url: URL(string: "http://x.test/")!,
            body: .stream(AsyncThrowingStream<ByteBuffer, any Error> { $0.finish() }, length: .unknown))
        #expect(throws: CourierError(.invalidRequest, "")) { try stream.cURLArguments() }
        var withAgent = stream
        withAgent.headerFields[.userAgent] = "courier"
        #expect(try withAgent.cURLArguments(omitting: [.userAgent], includingBody: false) == ["http://x.test/"])
    }

    @Test("A task describes its current request")
    func task() {
        let manager = SessionManager(engine: RefusingEngine())
        defer { manager.invalidate(cancelingTasks: true) }
        var configuration = Request(method: .delete, url: URL(string: "http://x.test/items/2")!)
        configuration.headerFields[.authorization] = "Bearer t"
        let task = manager.dataTask(with: configuration, completionHandler: nil)
        #expect(task.cURLDescription() == "curl --request DELETE http://x.test/items/2 \\\n  --header 'Authorization: Bearer t' \\\n  --header 'Accept-Encoding: deflate, gzip'")
    }

    @Test("A task's description shows what the engine adds and the Basic credential the session would answer with")
    func whatTheSessionAdds() throws {
        let manager = SessionManager(engine: RefusingEngine())
        defer { manager.invalidate(cancelingTasks: true) }
        let url = URL(string: "http://x.test/private/report")!
        manager.credentials.set(HTTPCredential(user: "ann", password: "s3cr't"), for: try #require(ProtectionSpace(url: url)))
        let task = manager.dataTask(with: Request(url: url), completionHandler: nil)
        #expect(task.cURLDescription() == "curl http://x.test/private/report \\\n  --user 'ann:s3cr'\\''t' \\\n  --header 'Accept-Encoding: deflate, gzip'")
        // Not for a request that brings its own Authorization or Accept-Encoding, nor without decompression.
        var own = Request(url: url)
        own.headerFields[.authorization] = "Bearer t"
        own.headerFields[.acceptEncoding] = "identity"
        #expect(manager.dataTask(with: own, completionHandler: nil).cURLDescription()
            == "curl http://x.test/private/report \\\n  --header 'Authorization: Bearer t' \\\n  --header 'Accept-Encoding: identity'")
        var configuration = SessionConfiguration.default
        configuration.decompression = .disabled
        let plain = SessionManager(engine: RefusingEngine(), configuration: configuration)
        defer { plain.invalidate(cancelingTasks: true) }
        #expect(plain.dataTask(with: Request(url: url), completionHandler: nil).cURLDescription() == "curl http://x.test/private/report")
    }

    /// A request with `Range` goes without the engine's `Accept-Encoding`
    /// (``HopHandler/CodingFields``): the description said it went with it, and curl run with it
    /// could get a range of the gzipped representation instead of the file's.
    @Test func aRangeRequestsDescriptionAsksForNoCoding() {
        let manager = SessionManager(engine: RefusingEngine())
        defer { manager.invalidate(cancelingTasks: true) }
        var ranged = Request(url: URL(string: "http://x.test/file.bin")!)
        ranged.headerFields[.range] = "bytes=100-"
        #expect(manager.dataTask(with: ranged, completionHandler: nil).cURLDescription() == "curl http://x.test/file.bin \\\n  --header 'Range: bytes=100-'")
    }
}
