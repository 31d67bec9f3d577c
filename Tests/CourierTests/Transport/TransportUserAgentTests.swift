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

    /// The default is the process's own, in AFNetworking's form: the one the request serializer sets.
    @Test func theDefaultIsTheProcesssOwn() {
        #expect(SessionConfiguration().userAgent == DefaultHeaders.currentUserAgent)
        #expect(NIOEngine.Configuration().userAgent == nil, "the engine alone sends none, as AsyncHTTPClient")
        #expect(NIOEngine.Configuration(SessionConfiguration()).userAgent == DefaultHeaders.currentUserAgent)
    }
}
