import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `Tests/AuthenticationTests.swift` (its Digest tests are disabled in the
/// source; Courier's Digest runs against httpbin in `HTTPBinInterceptorTests`). Alamofire's
/// per-request `authenticate(username:password:)` is, in Courier, the request URL's user and
/// password or a credential in `manager.credentials` for the protection space; URLCredentialStorage
/// is `manager.credentials` (a `CredentialStore`).
@Suite("Conformance: Alamofire AuthenticationTests")
struct AlamofireAuthenticationConformanceTests {
    /// The response of `request` on a fresh manager, 4xx accepted (Alamofire's `response` does not validate).
    static func response(
        _ server: TestServer, _ request: Request, configure: (SessionManager) -> Void = { _ in }
    ) async throws -> DataResponse<Data> {
        let manager = SessionManager()
        defer { manager.invalidate(cancelingTasks: true) }
        configure(manager)
        var serializer = DataResponseSerializer()
        serializer.http.acceptableStatusCodes = IndexSet(integersIn: 200..<500)
        return try await manager.response(for: request, serializer: serializer)
    }

    /// `url` with a user and password in it.
    static func url(_ url: URL, user: String, password: String) -> URL {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        components.user = user
        components.password = password
        return components.url!
    }

    /// Differs: the credential rides in the URL (`http://invalid:credentials@host/…`).
    @Test func testHTTPBasicAuthenticationFailsWithInvalidCredentials() async throws {
        try await withTestServer { server in
            let url = Self.url(server.url("/basic-auth/user/password"), user: "invalid", password: "credentials")
            let response = try await Self.response(server, Request(url: url))
            #expect(response.response.status == .unauthorized)
            #expect(response.value.isEmpty)
        }
    }

    /// Differs: the credential rides in the URL (`http://user1:password@host/…`).
    @Test func testHTTPBasicAuthenticationWithValidCredentials() async throws {
        try await withTestServer { server in
            let url = Self.url(server.url("/basic-auth/user1/password"), user: "user1", password: "password")
            let response = try await Self.response(server, Request(url: url))
            #expect(response.response.status == .ok)
            #expect(!response.value.isEmpty)
        }
    }

    @Test func testHTTPBasicAuthenticationWithStoredCredentials() async throws {
        try await withTestServer { server in
            let response = try await Self.response(server, Request(url: server.url("/basic-auth/user2/password"))) { manager in
                let space = ProtectionSpace(url: server.baseURL, realm: "Fake Realm", authenticationMethod: .httpBasic)!
                manager.credentials.set(HTTPCredential(user: "user2", password: "password"), for: space)
            }
            #expect(response.response.status == .ok)
            #expect(!response.value.isEmpty)
        }
    }

    @Test func testHiddenHTTPBasicAuthentication() async throws {
        try await withTestServer { server in
            var request = Request(url: server.url("/hidden-basic-auth/user/password"))
            request.headerFields[.authorization] = "Basic " + Data("user:password".utf8).base64EncodedString()
            let response = try await Self.response(server, request)
            #expect(response.response.status == .ok)
            #expect(!response.value.isEmpty)
        }
    }
}
