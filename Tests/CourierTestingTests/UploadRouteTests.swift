import AsyncHTTPClient
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import Testing

@Suite struct UploadRouteTests {
    /// Sends `upload` to `/courier/upload` and returns the server's JSON document.
    private func upload(
        _ upload: GeneratedUpload,
        knownLength: Bool,
        method: HTTPMethod = .POST,
        headers: HTTPHeaders = [:],
        client: HTTPClient,
        server: TestServer
    ) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: server.url("/courier/upload").absoluteString)
        request.method = method
        request.headers = headers
        request.body = upload.body(knownLength: knownLength)
        let response = try await client.execute(request, timeout: .seconds(120))
        let body = try await response.body.collect(upTo: 1 << 20)
        #expect(response.status == .ok)
        #expect(response.headers.first(name: "Content-Type") == "application/json")
        return try Fetched(response: response, body: body).json()
    }

    @Test(arguments: [false, true])
    func contentLengthBodyIsMeasured(tls: Bool) async throws {
        try await withServer(tls ? .https() : TestServer.Configuration()) { server, client in
            let body = (0..<100_003).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
            let fetched = try await client.fetch(
                server.url("/courier/upload?x=1"), method: .PUT, headers: ["Content-Type": "application/x-courier"], body: body)
            let json = try fetched.json()
            #expect(json["size"] as? Int == body.count)
            #expect(json["crc32"] as? String == CRC32.checksum(of: body).hex)
            #expect(json["method"] as? String == "PUT")
            #expect(json["content_type"] as? String == "application/x-courier")
            #expect(json["content_length"] as? Int == body.count)
            #expect(json["chunked"] as? Bool == false)
        }
    }

    @Test func chunkedBodyIsMeasured() async throws {
        try await withServer(client: ClientOptions(http1Only: true)) { server, client in
            let upload = GeneratedUpload(total: 1_000_001)
            let json = try await self.upload(upload, knownLength: false, method: .PATCH, client: client, server: server)
            #expect(json["size"] as? Int == 1_000_001)
            #expect(json["crc32"] as? String == upload.file.crc32().hex)
            #expect(json["method"] as? String == "PATCH")
            #expect(json["content_type"] is NSNull)
            #expect(json["content_length"] is NSNull)
            #expect(json["chunked"] as? Bool == true)
        }
    }

    @Test func streamedBodyOverHTTP2IsMeasured() async throws {
        try await withServer(.https()) { server, client in
            let upload = GeneratedUpload(total: 300_000)
            let json = try await self.upload(upload, knownLength: false, client: client, server: server)
            #expect(json["size"] as? Int == 300_000)
            #expect(json["crc32"] as? String == upload.file.crc32().hex)
        }
    }

    @Test func noBodyIsSizeZero() async throws {
        try await withServer { server, client in
            let json = try await client.fetch(server.url("/courier/upload")).json()
            #expect(json["size"] as? Int == 0)
            #expect(json["crc32"] as? String == "00000000")
            #expect(json["method"] as? String == "GET")
        }
    }

    @Test func expectContinueIsAnswered() async throws {
        try await withServer(client: ClientOptions(http1Only: true)) { server, client in
            let body = Array(repeating: UInt8(ascii: "u"), count: 5000)
            let fetched = try await client.fetch(server.url("/courier/upload"), method: .POST, headers: ["Expect": "100-continue"], body: body)
            #expect(fetched.status == 200)
            #expect(try fetched.json()["crc32"] as? String == CRC32.checksum(of: body).hex)
        }
    }

    /// 64 MiB made on the client as they are sent; the request log keeps the upload without its
    /// body (the sink has nowhere to put one: it folds each chunk into a ``CRC32``).
    @Test func largeUploadIsMeasuredAndNotKept() async throws {
        var configuration = TestServer.Configuration()
        configuration.recordsRequests = true
        try await withServer(configuration) { server, client in
            let upload = GeneratedUpload(total: 16 << 20)
            let json = try await self.upload(upload, knownLength: true, client: client, server: server)
            #expect(json["size"] as? Int == 16 << 20)
            #expect(json["crc32"] as? String == upload.file.crc32().hex)
            let recorded = try #require(server.receivedRequests.last)
            #expect(recorded.path == "/courier/upload")
            #expect(recorded.body.isEmpty)
        }
    }

    /// 1 GiB goes through while the process's resident memory grows by far less. Resident memory
    /// is the whole process's, and other tests run beside this one, so it only means something
    /// alone: `COURIER_MEMORY_CHECK=1 swift test --filter largeUploadKeepsMemoryFlat`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["COURIER_MEMORY_CHECK"] != nil))
    func largeUploadKeepsMemoryFlat() async throws {
        try await withServer { server, client in
            let total = 1 << 30
            let baseline = try #require(residentMemory(), "no /proc/self/status")
            let peak = Peak()
            let upload = GeneratedUpload(total: total) { offset in
                if offset % (8 << 20) == 0, let resident = residentMemory() { peak.record(resident) }
            }
            let json = try await self.upload(upload, knownLength: false, client: client, server: server)
            #expect(json["size"] as? Int == total)
            let growth = peak.value - baseline
            #expect(growth < 64 << 20, "resident memory grew by \(growth >> 20) MiB during a \(total >> 20) MiB upload")
        }
    }

    @Test func aCustomRouteAtTheUploadPathWins() async throws {
        try await withServer { server, client in
            server.route("/courier/upload", methods: [.post]) { request in .text("custom \(request.body.count)") }
            let fetched = try await client.fetch(server.url("/courier/upload"), method: .POST, body: Array("abc".utf8))
            #expect(fetched.text == "custom 3")
            // Another method falls through to the custom route's 405, not to the sink.
            #expect(try await client.fetch(server.url("/courier/upload"), method: .PUT, body: [1]).status == 405)
        }
    }
}
