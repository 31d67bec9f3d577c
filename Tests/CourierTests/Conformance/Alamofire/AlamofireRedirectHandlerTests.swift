import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `Tests/RedirectHandlerTests.swift`. Alamofire's session-wide
/// `RedirectHandler` is Courier's `hooks.taskWillPerformHTTPRedirection` (AFNetworking's
/// `setTaskWillPerformHTTPRedirectionBlock:`): return the request to follow, another request to
/// change the hop, or nil to stop and deliver the 3xx. A request's own `Redirector`
/// (`Request.redirector`) decides instead of the hook, as Alamofire's per-request handler does.
@Suite("Conformance: Alamofire RedirectHandlerTests")
struct AlamofireRedirectHandlerConformanceTests {
    /// The final response and body of a GET of `/redirect/1` (302 to `/get`) with `decide` as the
    /// hook (none when nil) and `redirector` as the request's.
    static func redirected(
        redirector: (@Sendable (TestServer) -> Redirector)? = nil,
        hook decide: (@Sendable (TestServer, Request) -> Request?)? = nil
    ) async throws -> (response: HTTPResponse, request: Request, body: Data, server: URL) {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                if let decide {
                    var hooks = manager.hooks
                    hooks.taskWillPerformHTTPRedirection = { _, _, _, request in decide(server, request) }
                    manager.hooks = hooks
                }
                var serializer = DataResponseSerializer()
                serializer.http.acceptableStatusCodes = IndexSet(integersIn: 200..<400)
                var request = Request(url: server.url("/redirect/1"))
                request.redirector = redirector?(server)
                let response = try await manager.response(for: request, serializer: serializer)
                return (response.response, response.request, response.value, server.baseURL)
            }
        }
    }

    @Test func testThatRequestRedirectHandlerCanFollowRedirects() async throws {
        let result = try await Self.redirected(redirector: { _ in .follow })
        #expect(result.response.status == .ok)
        #expect(result.request.url.path == "/get")
        #expect(!result.body.isEmpty)
    }

    @Test func testThatRequestRedirectHandlerCanNotFollowRedirects() async throws {
        let result = try await Self.redirected(redirector: { _ in .doNotFollow })
        #expect(result.response.status.code == 302)
        #expect(result.request.url.path == "/redirect/1")
    }

    @Test func testThatRequestRedirectHandlerCanModifyRedirects() async throws {
        let result = try await Self.redirected(redirector: { server in
            .modify { _, _, _ in Request(method: .patch, url: server.url("/patch")) }
        })
        #expect(result.response.status == .ok)
        #expect(result.request.url.path == "/patch")
        #expect(result.request.method == .patch)
    }

    /// The session's hook would not follow; the request's redirector follows, and wins.
    @Test func testThatRequestRedirectHandlerIsPrioritizedOverSessionRedirectHandler() async throws {
        let result = try await Self.redirected(redirector: { _ in .follow }, hook: { _, _ in nil })
        #expect(result.response.status == .ok)
        #expect(result.request.url.path == "/get")
        // And the other way round.
        let stopped = try await Self.redirected(redirector: { _ in .doNotFollow }, hook: { _, request in request })
        #expect(stopped.response.status.code == 302)
    }

    @Test func testThatFollowRedirectorCanBeCreatedStaticallyFromProtocol() {
        let redirector: Redirector = .follow
        guard case .follow = redirector.behavior else {
            Issue.record("\(redirector.behavior)")
            return
        }
    }

    @Test func testThatDoNotFollowRedirectorCanBeCreatedStaticallyFromProtocol() {
        let redirector: Redirector = .doNotFollow
        guard case .doNotFollow = redirector.behavior else {
            Issue.record("\(redirector.behavior)")
            return
        }
    }

    @Test func testThatModifyRedirectorCanBeCreatedStaticallyFromProtocol() {
        let redirector: Redirector = .modify { _, request, _ in request }
        guard case .modify = redirector.behavior else {
            Issue.record("\(redirector.behavior)")
            return
        }
    }

    @Test func testThatSessionRedirectHandlerCanFollowRedirects() async throws {
        let result = try await Self.redirected(hook: { _, request in request })
        #expect(result.response.status == .ok)
        #expect(result.request.url.path == "/get")
        #expect(!result.body.isEmpty)
    }

    @Test func testThatSessionRedirectHandlerCanNotFollowRedirects() async throws {
        let result = try await Self.redirected(hook: { _, _ in nil })
        #expect(result.response.status.code == 302)
        #expect(result.request.url.path == "/redirect/1")
    }

    @Test func testThatSessionRedirectHandlerCanModifyRedirects() async throws {
        let result = try await Self.redirected(hook: { server, _ in Request(method: .patch, url: server.url("/patch")) })
        #expect(result.response.status == .ok)
        #expect(result.request.url.path == "/patch")
        #expect(result.request.method == .patch)
    }
}
