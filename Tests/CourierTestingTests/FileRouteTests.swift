import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@Suite struct FileRouteTests {
    let file = TestServer.GeneratedFile(length: 100_000)

    @Test(arguments: [false, true])
    func wholeFileWithValidators(tls: Bool) async throws {
        try await withServer(tls ? .https() : TestServer.Configuration()) { server, client in
            let fetched = try await client.fetch(server.url(self.file.path()))
            #expect(fetched.status == 200)
            #expect(fetched.bytes == self.file.bytes())
            #expect(fetched.header("Content-Length") == "100000")
            #expect(fetched.header("Content-Type") == "application/octet-stream")
            #expect(fetched.header("Content-Disposition") == "attachment; filename=\"file-100000.bin\"")
            #expect(fetched.header("Accept-Ranges") == "bytes")
            #expect(fetched.header("ETag") == self.file.etag)
            #expect(fetched.header("ETag") == "\"file-100000-0000000000000000\"")
            #expect(fetched.header("Last-Modified") == "Sat, 01 Jan 2000 00:00:00 GMT")
            #expect(fetched.header("Content-Range") == nil)
        }
    }

    @Test func eachRangeForm() async throws {
        try await withServer { server, client in
            let cases: [(range: String, first: Int, last: Int)] = [
                ("bytes=10-19", 10, 19),
                ("bytes=99990-", 99_990, 99_999),
                ("bytes=-10", 99_990, 99_999),
                ("bytes=5-", 5, 99_999),
                ("bytes=50000-1000000", 50_000, 99_999),
                ("bytes=-200000", 0, 99_999),
                ("bytes=0-0", 0, 0),
            ]
            for (range, first, last) in cases {
                let fetched = try await client.fetch(server.url(self.file.path()), headers: ["Range": range])
                #expect(fetched.status == 206, "\(range)")
                #expect(fetched.header("Content-Range") == "bytes \(first)-\(last)/100000", "\(range)")
                #expect(fetched.header("Content-Length") == String(last - first + 1), "\(range)")
                #expect(fetched.bytes == self.file.bytes(first..<(last + 1)), "\(range)")
                #expect(fetched.header("ETag") == self.file.etag)
            }
        }
    }

    @Test func unsatisfiableAndIgnoredRanges() async throws {
        try await withServer { server, client in
            for range in ["bytes=100000-", "bytes=200000-300000", "bytes=-0"] {
                let fetched = try await client.fetch(server.url(self.file.path()), headers: ["Range": range])
                #expect(fetched.status == 416, "\(range)")
                #expect(fetched.header("Content-Range") == "bytes */100000", "\(range)")
                #expect(fetched.bytes.isEmpty)
            }
            let empty = try await client.fetch(server.url("/courier/file/0"), headers: ["Range": "bytes=0-"])
            #expect(empty.status == 416)
            #expect(empty.header("Content-Range") == "bytes */0")
            // Malformed or multiple ranges: the whole file.
            for range in ["bytes=20-10", "bytes=0-1,5-6", "lines=1-2"] {
                let fetched = try await client.fetch(server.url(self.file.path()), headers: ["Range": range])
                #expect(fetched.status == 200, "\(range)")
                #expect(fetched.bytes.count == 100_000, "\(range)")
            }
        }
    }

    @Test func ifRangeMatchAndMismatch() async throws {
        try await withServer { server, client in
            let changed = TestServer.GeneratedFile(length: 100_000, version: "2")
            let matching = [self.file.etag, self.file.lastModified]
            for validator in matching {
                let fetched = try await client.fetch(server.url(self.file.path()), headers: ["Range": "bytes=100-199", "If-Range": validator])
                #expect(fetched.status == 206, "\(validator)")
                #expect(fetched.bytes == self.file.bytes(100..<200))
            }
            // The resource changed (another version): the validators the client kept no longer match.
            for validator in matching + ["W/" + changed.etag, "\"nope\"", "not a date"] {
                let fetched = try await client.fetch(server.url(changed.path()), headers: ["Range": "bytes=100-199", "If-Range": validator])
                #expect(fetched.status == 200, "\(validator)")
                #expect(fetched.header("Content-Range") == nil)
                #expect(fetched.header("ETag") == changed.etag)
                #expect(fetched.bytes == changed.bytes(), "\(validator)")
            }
            let current = try await client.fetch(server.url(changed.path()), headers: ["Range": "bytes=100-199", "If-Range": changed.lastModified])
            #expect(current.status == 206)
            #expect(current.header("Last-Modified") == changed.lastModified)
            #expect(current.bytes == changed.bytes(100..<200))
            #expect(changed.bytes(100..<200) != self.file.bytes(100..<200))
        }
    }

    @Test func ignoreRangeAnswersEverything() async throws {
        try await withServer { server, client in
            let fetched = try await client.fetch(server.url(self.file.path(["ignore-range": "1"])), headers: ["Range": "bytes=10-19"])
            #expect(fetched.status == 200)
            #expect(fetched.header("Accept-Ranges") == nil)
            #expect(fetched.header("Content-Range") == nil)
            #expect(fetched.bytes == self.file.bytes())
            let off = try await client.fetch(server.url(self.file.path(["ignore-range": "0"])), headers: ["Range": "bytes=10-19"])
            #expect(off.status == 206)
        }
    }

    /// On the wire: the head promises the whole body, exactly `K` bytes follow, then the
    /// connection closes.
    @Test func dropAfterSendsExactlyKBytesThenCloses() async throws {
        try await withServer { server, _ in
            let cases: [(query: String, range: String?, status: String, length: String, bytes: Range<Int>)] = [
                ("drop-after=1000", nil, "200", "100000", 0..<1000),
                ("drop-after=123457", nil, "200", "100000", 0..<100_000),
                ("drop-after=0", nil, "200", "100000", 0..<0),
                ("drop-after=10", "bytes=5000-", "206", "95000", 5000..<5010),
            ]
            for (query, range, status, length, bytes) in cases {
                let request = "GET /courier/file/100000?\(query) HTTP/1.1\r\nHost: x\r\n" + (range.map { "Range: \($0)\r\n" } ?? "") + "\r\n"
                let response = try await rawExchange(port: server.port, request)
                #expect(response.statusLine.hasPrefix("HTTP/1.1 \(status) "), "\(query)")
                #expect(response.header("Content-Length") == length, "\(query)")
                #expect(response.body == self.file.bytes(bytes), "\(query)")
            }
        }
    }

    /// Through a client: the body fails after at most `K` bytes (AsyncHTTPClient may not hand
    /// over the last bytes before the error), and the server goes on answering.
    @Test(arguments: [false, true])
    func dropAfterFailsTheBody(tls: Bool) async throws {
        try await withServer(tls ? .https() : TestServer.Configuration()) { server, client in
            let dropped = try await client.receive(server.url(self.file.path(["drop-after": "1000"])))
            #expect(dropped.response.status == .ok)
            #expect(dropped.header("Content-Length") == "100000")
            #expect(dropped.bytes.count <= 1000)
            #expect(dropped.bytes == self.file.bytes(0..<dropped.bytes.count))
            #expect(dropped.error != nil)

            let nothing = try await client.receive(server.url(self.file.path(["drop-after": "0"])), headers: ["Range": "bytes=5-"])
            #expect(nothing.response.status == .partialContent)
            #expect(nothing.bytes.isEmpty)
            #expect(nothing.error != nil)

            // Dropping after the whole body: the response ends properly, then the connection closes.
            let whole = try await client.receive(server.url("/courier/file/300?drop-after=300"))
            #expect(whole.bytes == TestServer.GeneratedFile(length: 300).bytes())
            #expect(whole.error == nil)

            #expect(try await client.fetch(server.url("/get")).status == 200)
        }
    }

    /// A download cut off part-way, resumed with `Range` and `If-Range`, checked by CRC-32.
    @Test(arguments: [false, true])
    func droppedDownloadResumes(tls: Bool) async throws {
        try await withServer(tls ? .https() : TestServer.Configuration()) { server, client in
            let file = TestServer.GeneratedFile(length: 3_000_000, version: "resume")
            let first = try await client.receive(server.url(file.path(["drop-after": "1234567"])))
            #expect(first.error != nil)
            #expect(first.bytes.count <= 1_234_567)
            let etag = try #require(first.header("ETag"))
            let rest = try await client.receive(
                server.url(file.path()), headers: ["Range": "bytes=\(first.bytes.count)-", "If-Range": etag])
            #expect(rest.response.status == .partialContent)
            #expect(rest.header("Content-Range") == "bytes \(first.bytes.count)-2999999/3000000")
            var crc = CRC32()
            crc.update(first.bytes)
            crc.update(rest.bytes)
            #expect(crc == file.crc32())
        }
    }

    @Test(arguments: [false, true])
    func headSendsTheHeadersAlone(tls: Bool) async throws {
        try await withServer(tls ? .https() : TestServer.Configuration()) { server, client in
            let head = try await client.fetch(server.url(self.file.path()), method: .HEAD)
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == "100000")
            #expect(head.header("ETag") == self.file.etag)
            #expect(head.header("Accept-Ranges") == "bytes")
            #expect(head.bytes.isEmpty)
            let range = try await client.fetch(server.url(self.file.path(["drop-after": "5"])), method: .HEAD, headers: ["Range": "bytes=0-99"])
            #expect(range.status == 206)
            #expect(range.header("Content-Length") == "100")
            #expect(range.header("Content-Range") == "bytes 0-99/100000")
            // The connection is still usable.
            #expect(try await client.fetch(server.url(self.file.path())).bytes.count == 100_000)
        }
    }

    @Test(arguments: [false, true])
    func largeFileStreamsIntact(tls: Bool) async throws {
        try await withServer(tls ? .https() : TestServer.Configuration()) { server, client in
            let file = TestServer.GeneratedFile(length: 16 << 20)
            var request = HTTPClientRequest(url: server.url(file.path()).absoluteString)
            request.method = .GET
            let response = try await client.execute(request, timeout: .seconds(120))
            var crc = CRC32()
            for try await chunk in response.body { crc.update(chunk.readableBytesView) }
            #expect(crc.count == file.length)
            #expect(crc == file.crc32())
        }
    }

    @Test func pacedDownloadIsIntact() async throws {
        try await withServer { server, client in
            let file = TestServer.GeneratedFile(length: 3000, version: "slow")
            let fetched = try await client.fetch(server.url(file.path(["rate": "40000"])), headers: ["Range": "bytes=1000-"])
            #expect(fetched.status == 206)
            #expect(fetched.bytes == file.bytes(1000..<3000))
        }
    }

    @Test func wrongMethodAndBadOptions() async throws {
        try await withServer { server, client in
            let post = try await client.fetch(server.url(self.file.path()), method: .POST, body: [1])
            #expect(post.status == 405)
            #expect(post.header("Allow") == "GET, HEAD")
            for query in ["drop-after=-1", "drop-after=x", "rate=0", "ignore-range=maybe"] {
                #expect(try await client.fetch(server.url("/courier/file/10?\(query)")).status == 400, "\(query)")
            }
            #expect(try await client.fetch(server.url("/courier/file/-1")).status == 404)
            #expect(try await client.fetch(server.url("/courier/file/abc")).status == 404)
        }
    }
}
