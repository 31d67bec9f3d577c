// Ported from AsyncHTTPClient's Tests/AsyncHTTPClientTests/HTTPClientTests.swift and
// AsyncAwaitEndToEndTests.swift (https://github.com/swift-server/async-http-client), Copyright (c)
// 2018-2022 Apple Inc. and the AsyncHTTPClient project authors, licensed under the Apache
// License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// Twins of AsyncHTTPClient's redirect tests: its redirect configuration (`.follow(max:allowCycles:)`)
/// is Courier's ``NIOEngine/RedirectPolicy``, its `response.history` the task's
/// ``TaskMetrics/transactions`` (each hop's request and response head). AHC's HTTPBin
/// `/redirect/target` (a 302 to the URL in `X-Target-Redirect-URL`) is httpbin's `/redirect-to`
/// on a TestServer, or a route of the test's own. AHC's async tests run over HTTP/2 (its
/// HTTPBin's `.http2` mode): those are run over HTTP/2 here too, where a redirected `POST` turned
/// `GET` must send its head without DATA, and the next hop's `:authority` names the new origin.
@Suite("Conformance: AsyncHTTPClient redirects")
struct AHCRedirectTests {
    /// A manager with no cache (a redirect is cacheable, and these tests ask the same URLs again),
    /// trusting the test root, with `policy` as the session's redirect policy.
    static func withRedirectingManager<T>(
        _ policy: NIOEngine.RedirectPolicy = .follow(max: 10, allowCycles: true), _ body: (HTTPSessionManager) async throws -> T
    ) async throws -> T {
        var configuration = SessionConfiguration.default
        configuration.responseCache = nil
        configuration.redirectPolicy = policy
        return try await withManager(baseURL: nil, configuration: configuration, securityPolicy: try Transport.trustingTestRoot(), body)
    }

    /// A 302 to `location`.
    static func found(_ location: String, status: HTTPResponse.Status = .found) -> TestServer.Response {
        TestServer.Response(status: status, headerFields: [.location: location], body: Data())
    }

    // AHC: testLoopDetectionRedirectLimit (`/redirect/infinite1` and `infinite2` send the client
    // to each other; with cycles disallowed, the second visit of a URL fails)
    @Test func aCycleBetweenTwoURLsFailsWhenCyclesAreDisallowed() async throws {
        var serverConfiguration = TestServer.Configuration.https()
        serverConfiguration.recordsRequests = true
        try await withTestServer(serverConfiguration) { server async throws in
            server.route("/infinite1") { _ in Self.found("/infinite2") }
            server.route("/infinite2") { _ in Self.found("/infinite1") }
            try await Self.withRedirectingManager(.follow(max: 5, allowCycles: false)) { manager async throws in
                let error = await #expect(throws: CourierError.self) {
                    _ = try await manager.responseOfAnyStatus(for: Request(url: server.url("/infinite1")))
                }
                #expect(error?.code == .tooManyRedirects, "\(String(describing: error))")
                #expect(error?.message.contains("cycle") == true, "\(String(describing: error))")
                #expect(error?.response?.status == .found)
                // The redirect back to the first URL is refused, not sent (nor the limit of 5 reached).
                #expect(server.receivedRequests.map(\.path) == ["/infinite1", "/infinite2"])
            }
        }
    }

    // AHC: testRedirectToTheInitialURLDoesThrowOnFirstRedirect (a URL that redirects to itself,
    // with a maximum of one: the cycle is named, not the limit)
    @Test func aRedirectToTheRequestsOwnURLFailsAtOnceWhenCyclesAreDisallowed() async throws {
        var serverConfiguration = TestServer.Configuration.https()
        serverConfiguration.recordsRequests = true
        try await withTestServer(serverConfiguration) { server async throws in
            try await Self.withRedirectingManager(.follow(max: 1, allowCycles: false)) { manager async throws in
                let selfURL = server.url("/target")
                server.route("/target") { _ in Self.found(selfURL.absoluteString) }
                let error = await #expect(throws: CourierError.self) {
                    _ = try await manager.responseOfAnyStatus(for: Request(url: selfURL))
                }
                #expect(error?.code == .tooManyRedirects, "\(String(describing: error))")
                #expect(error?.message.contains("cycle") == true, "\(String(describing: error))")
                #expect(server.receivedRequests.map(\.path) == ["/target"])
            }
        }
    }

    // AHC: testCountRedirectLimit (`/redirect/infinite1` with cycles allowed: the maximum ends it)
    @Test func aCycleIsFollowedUpToTheMaximumWhenCyclesAreAllowed() async throws {
        var serverConfiguration = TestServer.Configuration.https()
        serverConfiguration.recordsRequests = true
        try await withTestServer(serverConfiguration) { server async throws in
            server.route("/infinite1") { _ in Self.found("/infinite2") }
            server.route("/infinite2") { _ in Self.found("/infinite1") }
            try await Self.withRedirectingManager(.follow(max: 10, allowCycles: true)) { manager async throws in
                let error = await #expect(throws: CourierError.self) {
                    _ = try await manager.responseOfAnyStatus(for: Request(url: server.url("/infinite1")))
                }
                #expect(error?.code == .tooManyRedirects, "\(String(describing: error))")
                #expect(error?.message.contains("more than 10 redirects") == true, "\(String(describing: error))")
                // The first request and ten redirects; the eleventh redirect is not followed.
                #expect(server.receivedRequests.count == 11)
            }
        }
    }

    // AHC: testHttpRedirect (`/redirect/https?port=`: from http to an https server, followed;
    // `response.history` is the two hops)
    @Test func aRedirectFromHTTPToHTTPSIsFollowed() async throws {
        try await withTestServer { plain async throws in
            try await withTestServer(.https()) { secure async throws in
                let target = secure.url("/get")
                plain.route("/redirect/https") { _ in Self.found(target.absoluteString) }
                try await Self.withRedirectingManager { manager async throws in
                    let response = try await manager.responseOfAnyStatus(for: Request(url: plain.url("/redirect/https")))
                    #expect(response.response.status == .ok)
                    #expect(response.request.url == target)
                    let hops = try #require(response.metrics?.transactions)
                    #expect(hops.map(\.request.url) == [plain.url("/redirect/https"), target])
                    #expect(hops.map { $0.response?.status.code } == [302, 200])
                    #expect(plain.requestCount == 1 && secure.requestCount == 1)
                }
            }
        }
    }

    // AHC: testHttpHostRedirect, testRedirectChangesHostHeader (from `127.0.0.1` to `localhost`
    // on the same port: the second request's `Host` (HTTP/1.1) or `:authority` (HTTP/2) names
    // the new host, not the first)
    @Test(arguments: [false, true])
    func aRedirectToAnotherHostNameChangesTheHostField(http2: Bool) async throws {
        var serverConfiguration = http2 ? TestServer.Configuration.https() : TestServer.Configuration()
        serverConfiguration.recordsRequests = true
        try await withTestServer(serverConfiguration) { server async throws in
            let scheme = http2 ? "https" : "http"
            let first = URL(string: "\(scheme)://127.0.0.1:\(server.port)/redirect/target")!
            let target = URL(string: "\(scheme)://localhost:\(server.port)/echohostheader")!
            server.route("/redirect/target") { _ in Self.found(target.absoluteString) }
            server.route("/echohostheader") { request in .text(request.value(forHTTPHeaderField: "Host") ?? "none") }
            try await Self.withRedirectingManager { manager async throws in
                let response = try await manager.responseOfAnyStatus(for: Request(url: first))
                #expect(response.response.status == .ok)
                #expect(response.data.map { String(decoding: $0, as: UTF8.self) } == "localhost:\(server.port)")
                #expect(response.metrics?.transactions.map(\.request.url) == [first, target])
                #expect(server.receivedRequests.map { $0.value(forHTTPHeaderField: "Host") } == ["127.0.0.1:\(server.port)", "localhost:\(server.port)"])
                #expect(server.requestCountsByHTTPVersion == [http2 ? "HTTP/2" : "HTTP/1.1": 2], "\(server.requestCountsByHTTPVersion)")
            }
        }
    }

    // AHC: testPostConvertedToGetOn301Redirect, testPostConvertedToGetOn302Redirect,
    // testPostConvertedToGetOn303Redirect (AsyncAwaitEndToEndTests, over HTTP/2): the first hop
    // is the POST with its body, the second a GET with neither body nor the fields that
    // described it.
    @Test(arguments: [301, 302, 303])
    func aPostRedirectedBecomesAGetOverHTTP2(status: Int) async throws {
        var serverConfiguration = TestServer.Configuration.https()
        serverConfiguration.recordsRequests = true
        try await withTestServer(serverConfiguration) { server async throws in
            server.route("/redirect/\(status)") { _ in Self.found("/anything", status: HTTPResponse.Status(code: status)) }
            try await Self.withRedirectingManager { manager async throws in
                var request = Request(method: .post, url: server.url("/redirect/\(status)"), body: .data(Data("test body".utf8)))
                request.headerFields[.contentType] = "text/plain"
                let response = try await manager.responseOfAnyStatus(for: request)
                #expect(response.response.status == .ok)
                let hops = try #require(response.metrics?.transactions)
                #expect(hops.map(\.request.method) == [.post, .get])
                #expect(hops.first?.response?.status.code == status)
                let received = server.receivedRequests
                #expect(received.map(\.method) == [.post, .get])
                #expect(received.first?.body == Data("test body".utf8))
                let second = try #require(received.last)
                #expect(second.body.isEmpty)
                #expect(second.value(forHTTPHeaderField: "Content-Type") == nil)
                #expect(second.value(forHTTPHeaderField: "Content-Length") == nil)
                #expect(server.requestCountsByHTTPVersion == ["HTTP/2": 2], "\(server.requestCountsByHTTPVersion)")
            }
        }
    }

    // AHC: testGetMethodUnchangedOnRedirect (over HTTP/2)
    @Test func aGetRedirectedStaysAGetOverHTTP2() async throws {
        var serverConfiguration = TestServer.Configuration.https()
        serverConfiguration.recordsRequests = true
        try await withTestServer(serverConfiguration) { server async throws in
            try await Self.withRedirectingManager { manager async throws in
                let response = try await manager.responseOfAnyStatus(for: Request(url: server.url("/redirect/1")))
                #expect(response.response.status == .ok)
                #expect(response.metrics?.transactions.map(\.request.method) == [.get, .get])
                #expect(server.receivedRequests.map(\.path) == ["/redirect/1", "/get"])
            }
        }
    }

    // AHC: testCancelingRequestAfterRedirect (the redirect followed, the task cancelled while the
    // second hop waits for its answer: it fails as cancelled, not with the first hop's 302)
    @Test func aTaskCancelledAfterItsRedirectFailsAsCancelled() async throws {
        try await withTestServer { server async throws in
            let arrival = ArrivalAction()
            server.route("/redirect/target") { _ in Self.found("/wait") }
            server.routeCallingOnArrival("/wait", arrival)
            try await Self.withRedirectingManager { manager async throws in
                manager.responseSerializer = HTTPResponseSerializer()
                let completions = Recorder<CourierError?>()
                let task = manager.dataTask(with: Request(url: server.url("/redirect/target"))) { _, _, error in completions.append(error) }
                arrival.set { task.cancel() }
                task.resume()
                #expect(await completions.wait { !$0.isEmpty })
                #expect(completions.all.first??.code == .cancelled, "\(completions.all)")
                #expect(server.requestCount == 2)
            }
        }
    }
}
