import AsyncHTTPClient
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import Testing

struct RouteFailure: Error {}

@Suite struct CustomRoutesTests {
    @Test func customRoutesWinOverBuiltIns() async throws {
        try await withServer { server, client in
            server.route("/get") { request in
                .text("custom \(request.method.rawValue) \(request.query ?? "-")")
            }
            let fetched = try await client.fetch(server.url("/get?x=1"))
            #expect(fetched.text == "custom GET x=1")
            #expect(fetched.header("Content-Type") == "text/plain; charset=utf-8")
            let other = try await client.fetch(server.url("/headers"))
            #expect(other.status == 200)
        }
    }

    @Test func routesSeeTheRequestAndSetTheResponse() async throws {
        try await withServer(.https()) { server, client in
            server.route("/api/items", methods: [.post]) { request in
                #expect(request.path == "/api/items")
                #expect(request.queryItems.first?.name == "tag")
                #expect(request.value(forHTTPHeaderField: "x-token") == "t")
                var response = TestServer.Response(status: .created, body: request.body)
                response.headerFields[HTTPField.Name("X-Echo")!] = String(decoding: request.body, as: UTF8.self)
                return response
            }
            let fetched = try await client.fetch(
                server.url("/api/items?tag=a%20b"), method: .POST, headers: ["X-Token": "t"], body: Array("payload".utf8))
            #expect(fetched.status == 201)
            #expect(fetched.text == "payload")
            #expect(fetched.header("X-Echo") == "payload")
        }
    }

    @Test func wrongMethodIs405AndThrowingIs500() async throws {
        try await withServer { server, client in
            server.route("/only-put", methods: [.put]) { _ in .text("ok") }
            server.route("/fails") { _ in throw RouteFailure() }
            let wrong = try await client.fetch(server.url("/only-put"))
            #expect(wrong.status == 405)
            #expect(wrong.header("Allow") == "PUT")
            let right = try await client.fetch(server.url("/only-put"), method: .PUT)
            #expect(right.text == "ok")
            let failed = try await client.fetch(server.url("/fails"))
            #expect(failed.status == 500)
        }
    }

    @Test func pendingCustomRoutesDoNotBlockOthers() async throws {
        try await withServer(.https()) { server, client in
            // The slow route answers only once the fast request has been answered.
            let (gate, open) = AsyncStream<Void>.makeStream()
            // The event waited for: the slow request has reached its route (not a poll of the
            // request count, bounded at some 10 s, that a loaded machine could outlast).
            let (arrivals, arrived) = AsyncStream<Void>.makeStream()
            server.route("/slow") { _ in
                arrived.yield()
                for await _ in gate { break }
                return .json(#"{"slow":true}"#)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Should the request fail instead, nothing arrives: the wait below ends then.
                    defer { arrived.finish() }
                    let slow = try await client.fetch(server.url("/slow"))
                    #expect(try slow.json()["slow"] as? Bool == true)
                }
                // However this ends, the slow route is let go.
                defer { open.finish() }
                for await _ in arrivals { break }
                #expect(server.requestCount == 1)
                let fast = try await client.fetch(server.url("/get"))
                #expect(fast.status == 200)
                open.yield()
                try await group.waitForAll()
            }
        }
    }

    @Test(arguments: [false, true])
    func aHeldBodyFollowsItsHeadWhenReleased(http2: Bool) async throws {
        try await withServer(http2 ? .https() : TestServer.Configuration()) { server, client in
            let (gate, release) = AsyncStream<Void>.makeStream()
            server.route("/held") { _ in
                TestServer.Response(headerFields: [.contentType: "text/plain"], body: Data("*****".utf8)) {
                    for await _ in gate { break }
                }
            }
            // The call returns at the head: were the body not held apart, this would wait for
            // the release that comes only after it.
            let response = try await client.execute(HTTPClientRequest(url: server.url("/held").absoluteString), timeout: .seconds(120))
            #expect(response.status == .ok)
            #expect(response.headers["Content-Length"] == ["5"])
            #expect(response.headers["Content-Type"] == ["text/plain"])
            release.yield()
            release.finish()
            #expect(String(buffer: try await response.body.collect(upTo: 100)) == "*****")
        }
    }

    @Test func aBodyHeldWhenTheConnectionClosesIsNeverSent() async throws {
        // `withServer` shuts the client down on every path, a failure's too (a client released
        // without its shutdown stops the whole test process); the server's second shutdown does nothing.
        try await withServer(client: ClientOptions(http1Only: true)) { server, client in
            let (gate, release) = AsyncStream<Void>.makeStream()
            defer { release.finish() }
            server.route("/held") { _ in
                TestServer.Response(body: Data("*****".utf8)) { for await _ in gate { break } }
            }
            let response = try await client.execute(HTTPClientRequest(url: server.url("/held").absoluteString), timeout: .seconds(120))
            #expect(response.headers["Content-Length"] == ["5"])
            // Never released: the server's shutdown closes the connection, which cancels the wait.
            // Had the body gone with the head, the client would still read it whole.
            try await server.shutdown()
            var received = 0
            await #expect(throws: (any Error).self) {
                for try await part in response.body { received += part.readableBytes }
            }
            #expect(received == 0)
        }
    }

    @Test func recordingKeepsRequestsWhenAsked() async throws {
        var configuration = TestServer.Configuration()
        configuration.recordsRequests = true
        try await withServer(configuration) { server, client in
            #expect(server.requestCount == 0)
            _ = try await client.fetch(server.url("/anything/one?a=1"), method: .PATCH, headers: ["X-Mark": "m"], body: [1, 2, 3])
            _ = try await client.fetch(server.url("/status/404"))
            let recorded = server.receivedRequests
            #expect(recorded.count == 2)
            #expect(server.requestCount == 2)
            #expect(recorded.first?.method == .patch)
            #expect(recorded.first?.target == "/anything/one?a=1")
            #expect(recorded.first?.headerFields[HTTPField.Name("x-mark")!] == "m")
            #expect(recorded.first?.body == Data([1, 2, 3]))
            #expect(recorded.last?.path == "/status/404")
            server.resetRequestLog()
            #expect(server.receivedRequests.isEmpty)
            #expect(server.requestCount == 0)
        }
    }

    @Test func countingWithoutRecording() async throws {
        try await withServer { server, client in
            _ = try await client.fetch(server.url("/get"))
            #expect(server.requestCount == 1)
            #expect(server.receivedRequests.isEmpty)
        }
    }

    @Test func shutdownClosesOpenConnections() async throws {
        // `withServer`, for the client's shutdown on every path (see above).
        try await withServer(client: ClientOptions(http1Only: true)) { server, client in
            // 60 s of body: it cannot end on its own before the shutdown, even when this thread stalls
            // on a loaded machine between the head and the shutdown (CI saw a 5 s body end first).
            // (The timeout bounds the head only: AsyncHTTPClient drops the deadline once the head is in.)
            let response = try await client.execute(
                HTTPClientRequest(url: server.url("/courier/slow-body/1200?interval=0.05").absoluteString), timeout: .seconds(120))
            try await server.shutdown()
            await #expect(throws: (any Error).self) {
                for try await _ in response.body {}
            }
            // No check that a new request to the port fails: another test's server, started in
            // parallel, may have been given the port the moment it was free (CI saw one answer).
        }
    }
}
