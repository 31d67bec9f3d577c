import Courier
import CourierTesting
import Foundation
import Testing

/// The stale-connection resend (issue 16's item 8) over every HTTP/1.1 transport, proxied ones
/// included: the server closes a kept-alive connection as the next request arrives
/// (`/courier/stale`). An idempotent request goes again on a new connection; a `POST` does not,
/// as it may have reached the server. HTTP/2's counterparts (GOAWAY, `REFUSED_STREAM`) are in
/// `HTTP2PoolTests`: `TestServer` serves every HTTP/2 stream as a first request.
@Suite("Transport: stale connections")
struct TransportStaleConnectionTests {
    /// The HTTP/1.1 transports.
    static let http1 = Transport.allCases.filter { !$0.isHTTP2 }

    @Test(arguments: Self.http1)
    func anIdempotentRequestOnAClosedConnectionGoesAgain(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            manager.responseSerializer = HTTPResponseSerializer()
            let first = try await manager.get("courier/stale")
            #expect(first.data == Data("fresh".utf8))
            let second = try await manager.get("courier/stale")
            #expect(second.data == Data("fresh".utf8), "answered on a new connection")
            #expect(second.metrics?.transactions.last?.isReusedConnection == false)
            if transport.proxyClosesEachConnection {
                // The proxy opens a connection to the server per request: the server never sees
                // one kept alive (the proxy's own closes are what the client meets).
                #expect(server.requestCount == 2)
            } else {
                #expect(server.requestCount == 3, "the request the server closed on went again")
                #expect(server.connectionCount == 2)
            }
        }
    }

    /// Not via the forwarding proxy, which closes every connection after its answer itself:
    /// whether the second `POST` meets that close or a new connection is a race.
    @Test(arguments: Self.http1.filter { !$0.proxyClosesEachConnection })
    func aPOSTOnAClosedConnectionIsNotSentAgain(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            manager.responseSerializer = HTTPResponseSerializer()
            let post = Request(method: .post, url: server.url("/courier/stale"), body: .data(Data("abc".utf8)))
            let first = try await manager.data(for: post)
            #expect(first.value == Data("fresh".utf8))
            let error = await #expect(throws: CourierError.self) { try await manager.data(for: post) }
            #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            #expect(server.requestCount == 2, "the POST the server may have acted on was not sent again")
        }
    }
}
