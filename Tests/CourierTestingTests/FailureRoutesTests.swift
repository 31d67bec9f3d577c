import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@Suite struct FailureRoutesTests {
    @Test(arguments: [false, true])
    func truncatedBodyFailsTheRead(tls: Bool) async throws {
        try await withServer(tls ? .https() : TestServer.Configuration()) { server, client in
            let response = try await client.execute(HTTPClientRequest(url: server.url("/courier/truncated/100").absoluteString), timeout: .seconds(120))
            #expect(response.headers.first(name: "Content-Length") == "200")
            var received = 0
            await #expect(throws: (any Error).self) {
                for try await chunk in response.body { received += chunk.readableBytes }
            }
            #expect(received == 100)
        }
    }

    @Test(arguments: [false, true])
    func resetClosesWithoutAResponse(tls: Bool) async throws {
        try await withServer(tls ? .https() : TestServer.Configuration()) { server, client in
            await #expect(throws: (any Error).self) {
                _ = try await client.fetch(server.url("/courier/reset"))
            }
            // The server still answers on a new connection.
            let fetched = try await client.fetch(server.url("/get"))
            #expect(fetched.status == 200)
        }
    }

    @Test(arguments: [false, true])
    func closeAfterHeadFailsTheBody(tls: Bool) async throws {
        try await withServer(tls ? .https() : TestServer.Configuration()) { server, client in
            await #expect(throws: (any Error).self) {
                _ = try await client.fetch(server.url("/courier/close-after-head"))
            }
        }
    }

    @Test func slowBodyArrivesInSpacedChunks() async throws {
        try await withServer(client: ClientOptions(http1Only: true)) { server, client in
            let clock = ContinuousClock()
            let start = clock.now
            let fetched = try await client.fetch(server.url("/courier/slow-body/4?interval=0.05"))
            #expect(clock.now - start >= .milliseconds(140))
            #expect(fetched.text == "chunk 0\nchunk 1\nchunk 2\nchunk 3\n")
            #expect(fetched.header("Transfer-Encoding") == "chunked")
        }
    }

    @Test(arguments: [false, true])
    func bigBodyIsGenerated(tls: Bool) async throws {
        try await withServer(tls ? .https() : TestServer.Configuration()) { server, client in
            let count = 3 * 1024 * 1024 + 17
            // A deadline for a stalled machine, not a speed check.
            let response = try await client.execute(HTTPClientRequest(url: server.url("/courier/big/\(count)").absoluteString), timeout: .seconds(120))
            #expect(response.headers.first(name: "Content-Length") == String(count))
            var received = 0
            var first: UInt8?
            for try await chunk in response.body {
                if first == nil { first = chunk.readableBytesView.first }
                received += chunk.readableBytes
            }
            #expect(received == count)
            #expect(first == UInt8(ascii: "0"))
        }
    }

    @Test func echoReturnsTheBodyWithItsContentType() async throws {
        try await withServer { server, client in
            let body: [UInt8] = (0..<70_000).map { UInt8($0 % 251) }
            let fetched = try await client.fetch(
                server.url("/courier/echo"), method: .PUT, headers: ["Content-Type": "application/x-courier"], body: body)
            #expect(fetched.bytes == body)
            #expect(fetched.header("Content-Type") == "application/x-courier")
        }
    }

    @Test func connectionCloseIsHonoured() async throws {
        try await withServer(client: ClientOptions(http1Only: true)) { server, client in
            for _ in 0..<3 {
                let fetched = try await client.fetch(server.url("/get"), headers: ["Connection": "close"])
                #expect(fetched.status == 200)
                #expect(fetched.header("Connection") == "close")
            }
            #expect(server.connectionCount == 3)
        }
    }

    @Test func keepAliveReusesOneConnection() async throws {
        try await withServer(client: ClientOptions(http1Only: true)) { server, client in
            for _ in 0..<20 {
                let fetched = try await client.fetch(server.url("/get"))
                #expect(fetched.status == 200)
            }
            #expect(server.requestCount == 20)
            #expect(server.connectionCount == 1)
        }
    }
}
