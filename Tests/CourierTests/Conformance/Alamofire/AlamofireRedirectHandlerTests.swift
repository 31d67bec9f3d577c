import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `Tests/RedirectHandlerTests.swift`. Alamofire's session-wide
/// `RedirectHandler` is Courier's `hooks.taskWillPerformHTTPRedirection` (AFNetworking's
/// `setTaskWillPerformHTTPRedirectionBlock:`): return the request to follow, another request to
/// change the hop, or nil to stop and deliver the 3xx. Courier has no per-request redirect handler.
@Suite("Conformance: Alamofire RedirectHandlerTests")
struct AlamofireRedirectHandlerConformanceTests {
    /// The final response and body of a GET of `/redirect/1` (302 to `/get`) with `decide` as the hook.
    static func redirected(
        _ decide: @escaping @Sendable (TestServer, Request) -> Request?
    ) async throws -> (response: HTTPResponse, request: Request, body: Data, server: URL) {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                var hooks = manager.hooks
                hooks.taskWillPerformHTTPRedirection = { _, _, _, request in decide(server, request) }
                manager.hooks = hooks
                var serializer = DataResponseSerializer()
                serializer.http.acceptableStatusCodes = IndexSet(integersIn: 200..<400)
                let response = try await manager.response(for: Request(url: server.url("/redirect/1")), serializer: serializer)
                return (response.response, response.request, response.value, server.baseURL)
            }
        }
    }

    @Test func testThatSessionRedirectHandlerCanFollowRedirects() async throws {
        let result = try await Self.redirected { _, request in request }
        #expect(result.response.status == .ok)
        #expect(result.request.url.path == "/get")
        #expect(!result.body.isEmpty)
    }

    @Test func testThatSessionRedirectHandlerCanNotFollowRedirects() async throws {
        let result = try await Self.redirected { _, _ in nil }
        #expect(result.response.status.code == 302)
        #expect(result.request.url.path == "/redirect/1")
    }

    @Test func testThatSessionRedirectHandlerCanModifyRedirects() async throws {
        let result = try await Self.redirected { server, _ in Request(method: .patch, url: server.url("/patch")) }
        #expect(result.response.status == .ok)
        #expect(result.request.url.path == "/patch")
        #expect(result.request.method == .patch)
    }
}
