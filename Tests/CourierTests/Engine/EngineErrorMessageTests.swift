@testable import Courier
import CourierTesting
import Foundation
import NIOHTTP2
import Testing

/// What the engine's errors say: the proxy named as the proxy, HTTP/2 codes by RFC 9113's names.
@Suite("Engine error messages")
struct EngineErrorMessageTests {
    @Test(arguments: ["http", "socks"])
    func aProxyThatCannotBeReachedIsNamedAsTheProxy(kind: String) async throws {
        let port = closedPort()
        var configuration = SessionConfiguration.default
        configuration.proxy = kind == "http" ? .http(host: "127.0.0.1", port: port) : .socks(host: "127.0.0.1", port: port)
        let manager = SessionManager(configuration: configuration)
        defer { manager.invalidate(cancelingTasks: true) }
        let error = await #expect(throws: CourierError.self) {
            _ = try await manager.data(for: Request(url: URL(string: "http://courier-target.invalid/get")!))
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.hasSuffix("could not connect to the proxy 127.0.0.1:\(port)") == true, "\(String(describing: error))")
    }

    @Test func aServerThatCannotBeReachedIsNamedWithoutTheWordProxy() async throws {
        let port = closedPort()
        let manager = SessionManager(configuration: .default)
        defer { manager.invalidate(cancelingTasks: true) }
        let error = await #expect(throws: CourierError.self) {
            _ = try await manager.data(for: Request(url: URL(string: "http://127.0.0.1:\(port)/get")!))
        }
        #expect(error?.message.hasSuffix(": could not connect to 127.0.0.1:\(port)") == true, "\(String(describing: error))")
    }

    /// A Unicode host, percent-encoded in the URL, is connected to by its IDNA name: that is
    /// still the server, not a proxy.
    @Test func aUnicodeServerThatCannotBeReachedIsNamedWithoutTheWordProxy() async throws {
        let port = closedPort()
        var configuration = SessionConfiguration.default
        configuration.hostAddresses = ["xn--bcher-kva.example": ["127.0.0.1"]]
        let manager = SessionManager(configuration: configuration)
        defer { manager.invalidate(cancelingTasks: true) }
        let error = await #expect(throws: CourierError.self) {
            _ = try await manager.data(for: Request(url: URL(string: "http://b%C3%BCcher.example:\(port)/get")!))
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.hasSuffix(": could not connect to xn--bcher-kva.example:\(port)") == true, "\(String(describing: error))")
    }

    @Test func http2ErrorCodesHaveTheirRFCNames() {
        #expect(NIOEngine.name(of: .internalError) == "INTERNAL_ERROR")
        #expect(NIOEngine.name(of: .refusedStream) == "REFUSED_STREAM")
        #expect(NIOEngine.name(of: .enhanceYourCalm) == "ENHANCE_YOUR_CALM")
        #expect(NIOEngine.name(of: .http11Required) == "HTTP_1_1_REQUIRED")
        #expect(NIOEngine.name(of: HTTP2ErrorCode(networkCode: 0x42)) == "error code 0x42")
        #expect(HTTP2StreamResetByCourier(errorCode: .protocolError).description == "Courier reset the HTTP/2 stream (PROTOCOL_ERROR)")
    }

    @Test func boringSSLReasonsReadInWords() {
        let raw = "sslError([Error: 268435703 error:100000f7:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER at /x/ssl/tls_record.cc:231])"
        #expect(ServerTrustFailure.handshakeReason(raw) == "the server did not answer in TLS (a plain HTTP server?) (WRONG_VERSION_NUMBER)")
        #expect(ServerTrustFailure.handshakeReason("error:1:SSL routines:OPENSSL_internal:SOMETHING_NEW at /x.cc:1") == "SOMETHING_NEW")
        #expect(ServerTrustFailure.handshakeReason("the server closed the connection during the handshake") == "the server closed the connection during the handshake")
    }

    /// An https URL to a server that speaks plain HTTP: the TLS failure says so, without the
    /// policy (which did not refuse anything) or BoringSSL's source paths.
    @Test func tlsToAPlainServerSaysSo() async throws {
        try await withTestServer(TestServer.Configuration()) { server in
            let manager = SessionManager(configuration: .default)
            defer { manager.invalidate(cancelingTasks: true) }
            let error = await #expect(throws: CourierError.self) {
                _ = try await manager.data(for: Request(url: URL(string: "https://127.0.0.1:\(server.port)/get")!))
            }
            #expect(error?.code == .tlsFailure)
            #expect(error?.message.hasSuffix("127.0.0.1: the TLS handshake failed: the server did not answer in TLS (a plain HTTP server?) (WRONG_VERSION_NUMBER)") == true, "\(String(describing: error))")
        }
    }
}
