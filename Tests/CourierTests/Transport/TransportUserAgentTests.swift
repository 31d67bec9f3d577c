@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// The session's `User-Agent` (``SessionConfiguration/userAgent``) over every transport: added to
/// a request that names none as its head goes out, never twice, never to the request the task
/// reports, and not at all when the configuration has none.
@Suite("Transport: the default User-Agent")
struct TransportUserAgentTests {
    /// The `User-Agent` values of the requests the server received for `path`, in order.
    static func userAgents(_ server: TestServer, _ path: String) -> [[String]] {
        server.receivedRequests.filter { $0.target == path }.map { $0.headerFields[values: .userAgent] }
    }

    @Test(arguments: Transport.allCases)
    func aRequestWithoutOneGetsTheSessions(_ transport: Transport) async throws {
        try await transport.run(configure: { $0.userAgent = "Courier-Test/1.0 (Linux; loopback)" }) { server, manager in
            let bare = try await manager.response(for: Request(url: server.url("/anything/bare")), serializer: DataResponseSerializer())
            #expect(bare.request.headerFields[.userAgent] == nil, "the request the task reports is the one given")
            #expect(Self.userAgents(server, "/anything/bare") == [["Courier-Test/1.0 (Linux; loopback)"]])

            var own = Request(url: server.url("/anything/own"))
            own.headerFields[.userAgent] = "Mine/2"
            _ = try await manager.response(for: own, serializer: DataResponseSerializer())
            #expect(Self.userAgents(server, "/anything/own") == [["Mine/2"]], "a request's own is sent as it is, alone")

            // AFNetworking's serializer sets the process's own on the request.
            _ = try await manager.response(method: .get, urlString: "/anything/serialized", serializer: DataResponseSerializer())
            #expect(Self.userAgents(server, "/anything/serialized") == [[DefaultHeaders.currentUserAgent]])
        }
    }

    @Test(arguments: Transport.allCases)
    func noneWhenTheConfigurationHasNone(_ transport: Transport) async throws {
        try await transport.run(configure: { $0.userAgent = nil }) { server, manager in
            _ = try await manager.response(for: Request(url: server.url("/anything/bare")), serializer: DataResponseSerializer())
            #expect(Self.userAgents(server, "/anything/bare") == [[]])
        }
    }

    /// A caller's `Proxy-Authorization` is for a forwarding proxy (RFC 9110 11.7.2): the server
    /// never gets it, through a tunnel (HTTP/1.1 or HTTP/2 inside `CONNECT`, SOCKS5) or with no
    /// proxy. Before, the request inside a tunnel carried it to every origin. (A forwarding proxy
    /// takes it; whether it passes it on is the proxy's business.)
    @Test(arguments: Transport.allCases)
    func theCallersProxyCredentialNeverReachesTheServerThroughATunnel(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            var request = Request(url: server.url("/anything/proxy-credential"))
            request.headerFields[.proxyAuthorization] = "Bearer caller-proxy-token"
            _ = try? await manager.response(for: request, serializer: DataResponseSerializer())
            // (The forwarding proxy takes the caller's credential in place of the session's, and
            // may refuse it: nothing to check at the server.)
            guard transport != .http1ViaHTTPProxy else { return }
            let received = server.receivedRequests.filter { $0.target == "/anything/proxy-credential" }
            #expect(!received.isEmpty)
            #expect(received.allSatisfy { $0.headerFields[.proxyAuthorization] == nil }, "\(received.map(\.headerFields))")
        }
    }

    /// The default is the process's own, in AFNetworking's form: the one the request serializer sets.
    @Test func theDefaultIsTheProcesssOwn() {
        #expect(SessionConfiguration().userAgent == DefaultHeaders.currentUserAgent)
        #expect(NIOEngine.Configuration().userAgent == nil, "the engine alone sends none, as AsyncHTTPClient")
        #expect(NIOEngine.Configuration(SessionConfiguration()).userAgent == DefaultHeaders.currentUserAgent)
    }
}
