import Courier
import CourierTesting
import Foundation
import NIOCore
import Testing

/// Failures of the peer or the connection, each a typed error.
@Suite("Transport: errors")
struct TransportErrorTests {
    @Test(arguments: Transport.allCases)
    func aRefusedConnectionFailsPromptly(_ transport: Transport) async throws {
        // A pool retrying with back-off until the connect timeout would report a timeout: a
        // refusal must come as itself (no clock needed, the error's code tells). Through a
        // tunnel the proxy is refused: its refusal names it; a forwarding proxy answers for the
        // server, with a 5xx of its own (tinyproxy: 500), which nobody can tell from the server's.
        // (A connect timeout of 60 s, not 30 s: a full CI run held every test for about 36 s.)
        try await transport.run(configure: { $0.timeoutIntervalForConnect = 60 }) { _, manager in
            let error = await #expect(throws: CourierError.self) {
                try await manager.get(transport.refusingURL().absoluteString)
            }
            #expect(error?.request != nil)
            if !transport.isProxied {
                #expect(error?.code == .connectionFailed, "\(String(describing: error))")
            } else if transport == .http1ViaHTTPProxy {
                #expect(error?.code == .unacceptableStatusCode, "\(String(describing: error))")
                #expect((500..<600).contains(error?.response?.status.code ?? 0), "\(String(describing: error))")
            } else {
                let proxy = try #require(transport.proxy)
                #expect(error?.code == .proxyRefused, "\(String(describing: error))")
                #expect(error?.message.contains("proxy \(proxy.host):\(proxy.port)") == true, "\(String(describing: error))")
            }
        }
    }

    @Test(arguments: Transport.allCases)
    func aTruncatedBodyIsTheConnectionClosing(_ transport: Transport) async throws {
        try await transport.run { _, manager in
            manager.responseSerializer = HTTPResponseSerializer()
            await #expect {
                try await manager.get("courier/truncated/1000")
            } throws: { error in
                (error as? CourierError)?.code == .connectionClosed
            }
        }
    }

    @Test(arguments: Transport.allCases)
    func aConnectionClosedAfterTheHeadIsTheConnectionClosing(_ transport: Transport) async throws {
        try await transport.run { _, manager in
            manager.responseSerializer = HTTPResponseSerializer()
            await #expect {
                try await manager.get("courier/close-after-head")
            } throws: { error in
                (error as? CourierError)?.code == .connectionClosed
            }
        }
    }

    @Test(arguments: Transport.allCases)
    func aResetBeforeTheAnswerIsATypedError(_ transport: Transport) async throws {
        try await transport.run { _, manager in
            await #expect {
                try await manager.get("courier/reset")
            } throws: { error in
                [.connectionClosed, .invalidResponse].contains((error as? CourierError)?.code)
            }
        }
    }

    @Test(arguments: Transport.allCases)
    func aConnectionLostMidBodyIsThrownByTheIterationAfterEveryByte(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let stream = try await manager.stream(Request(url: server.url("/courier/truncated/1000")))
            var received = 0
            let error = await #expect(throws: CourierError.self) {
                for try await chunk in stream.body { received += chunk.readableBytes }
            }
            #expect(error?.code == .connectionClosed)
            #expect(received == 1000, "every byte that arrived reaches the consumer before the error")
        }
    }

    @Test(arguments: Transport.allCases)
    func aBodyOverTheMaximumIsRefused(_ transport: Transport) async throws {
        try await transport.run(configure: { $0.maximumResponseBodySize = 100_000 }) { _, manager in
            await #expect {
                try await manager.response(method: .get, urlString: "courier/big/1000000", serializer: DataResponseSerializer())
            } throws: { error in
                let error = error as? CourierError
                return error?.code == .responseTooLarge && error?.response?.status == .ok
            }
            let small = try await manager.response(method: .get, urlString: "bytes/1000", serializer: DataResponseSerializer())
            #expect(small.value.count == 1000)
        }
    }

    /// Cleartext has no certificate to refuse: the TLS transports only.
    @Test(arguments: Transport.secure)
    func anUntrustedCertificateFailsBeforeAnyRequest(_ transport: Transport) async throws {
        try await transport.run(identity: .selfSigned) { server, manager in
            await #expect {
                try await manager.get("get")
            } throws: { error in
                (error as? CourierError)?.code == .serverTrustEvaluationFailed
                    && ((error as? CourierError)?.underlyingError as? ServerTrustFailure)?.reason == .untrustedRoot
            }
            #expect(server.requestCount == 0, "no request byte was sent")
        }
    }
}
