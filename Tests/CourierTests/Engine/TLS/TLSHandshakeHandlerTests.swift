@testable import Courier
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

/// ``TLSHandshakeHandler`` and the client hello on an `EmbeddedChannel`: what goes out, the timeout
/// on the embedded clock, and the typed errors of a handshake that goes wrong.
@Suite("The TLS handshake on an EmbeddedChannel")
struct TLSHandshakeHandlerTests {
    struct Setup {
        let channel: EmbeddedChannel
        let outcome: NIOLockedValueBox<Result<TLSHandshakeResult, any Error>?>
    }

    static func setUp(host: String = "api.example.com", protocols: [TLSConnector.ApplicationProtocol] = [.http2, .http1_1], timeout: TimeAmount = .seconds(10)) throws -> Setup {
        let channel = EmbeddedChannel()
        let connector = TLSConnector(
            serverTrust: ServerTrustPolicies(),
            applicationProtocols: protocols,
            handshakeTimeout: timeout,
            trustStore: TrustStore([Certificate]())
        )
        let handler = try connector.addHandlers(to: channel, host: host, port: 443) { _, _ in }
        let outcome = NIOLockedValueBox<Result<TLSHandshakeResult, any Error>?>(nil)
        handler.result.whenComplete { result in outcome.withLockedValue { $0 = result } }
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        return Setup(channel: channel, outcome: outcome)
    }

    static func clientHello(_ setup: Setup) throws -> String {
        var hello = try #require(try setup.channel.readOutbound(as: ByteBuffer.self))
        return String(decoding: hello.readBytes(length: hello.readableBytes) ?? [], as: UTF8.self)
    }

    static func error(_ setup: Setup) -> CourierError? {
        guard case .failure(let error) = setup.outcome.withLockedValue({ $0 }) else { return nil }
        return error as? CourierError
    }

    @Test func theClientHelloCarriesTheHostAndTheOfferedProtocols() throws {
        let setup = try Self.setUp()
        let hello = try Self.clientHello(setup)
        #expect(hello.contains("api.example.com"), "SNI")
        #expect(hello.contains("h2"))
        #expect(hello.contains("http/1.1"))
        _ = try? setup.channel.finish()
    }

    /// The protocols of the ClientHello's ALPN extension (type 16: a two-byte length, a two-byte
    /// list length two less, then length-prefixed names that fill the list exactly). A search for
    /// the bytes `02 68 32` anywhere also met them in the hello's random bytes, now and then.
    static func offeredProtocols(_ setup: Setup) throws -> [String]? {
        var hello = try #require(try setup.channel.readOutbound(as: ByteBuffer.self))
        let bytes = hello.readBytes(length: hello.readableBytes) ?? []
        var index = 0
        while index + 6 <= bytes.count {
            defer { index += 1 }
            guard bytes[index] == 0, bytes[index + 1] == 16 else { continue }
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            let listLength = Int(bytes[index + 4]) << 8 | Int(bytes[index + 5])
            guard length >= 2, listLength == length - 2, index + 6 + listLength <= bytes.count else { continue }
            var names: [String] = []
            var at = index + 6
            while at < index + 6 + listLength {
                let count = Int(bytes[at])
                guard count > 0, at + 1 + count <= index + 6 + listLength else { break }
                names.append(String(decoding: bytes[(at + 1)..<(at + 1 + count)], as: UTF8.self))
                at += 1 + count
            }
            if at == index + 6 + listLength { return names }
        }
        return nil
    }

    @Test func theALPNListIsH2ThenHTTP11ByDefault() throws {
        let setup = try Self.setUp()
        #expect(try Self.offeredProtocols(setup) == ["h2", "http/1.1"])
        _ = try? setup.channel.finish()
    }

    @Test func http1OnlyOffersOnlyHTTP11() throws {
        let setup = try Self.setUp(protocols: [.http1_1])
        #expect(try Self.offeredProtocols(setup) == ["http/1.1"], "no h2 in the ALPN list")
        _ = try? setup.channel.finish()
    }

    @Test func theSessionsHTTPVersionDecidesWhatIsOffered() {
        #expect(TLSConnector.ApplicationProtocol.offered(for: .automatic) == [.http2, .http1_1])
        #expect(TLSConnector.ApplicationProtocol.offered(for: .http1Only) == [.http1_1])
        #expect(TLSConnector.ApplicationProtocol.http2.rawValue == "h2")
        #expect(TLSConnector.ApplicationProtocol.http1_1.rawValue == "http/1.1")
    }

    @Test func anAddressIsNotSentAsServerName() throws {
        #expect(TLSConnector.serverNameIndication(for: "127.0.0.1") == nil)
        #expect(TLSConnector.serverNameIndication(for: "::1") == nil)
        #expect(TLSConnector.serverNameIndication(for: "[::1]") == nil)
        // An IPv6 address with a zone is an address too (before, it went out as a name).
        #expect(TLSConnector.serverNameIndication(for: "fe80::1%eth0") == nil)
        #expect(TLSConnector.serverNameIndication(for: "name%x.example") == "name%x.example")
        #expect(TLSConnector.serverNameIndication(for: "example.com.") == "example.com")
        let setup = try Self.setUp(host: "127.0.0.1")
        #expect(!(try Self.clientHello(setup)).contains("127.0.0.1"))
        _ = try? setup.channel.finish()
    }

    /// SNI's host name is ASCII (RFC 6066 3): a Unicode host goes out in its IDNA form, lower
    /// case. It went out as its UTF-8 bytes (`bücher.example`), which names no server.
    @Test func aUnicodeNameIsSentInItsASCIIForm() throws {
        #expect(TLSConnector.serverNameIndication(for: "Bücher.Example") == "xn--bcher-kva.example")
        #expect(TLSConnector.serverNameIndication(for: "bücher.example.") == "xn--bcher-kva.example")
        #expect(TLSConnector.serverNameIndication(for: "API.Example.COM") == "api.example.com")
        let setup = try Self.setUp(host: "bücher.example")
        let hello = try Self.clientHello(setup)
        #expect(hello.contains("xn--bcher-kva.example"), "SNI")
        #expect(!hello.contains("bücher"))
        _ = try? setup.channel.finish()
    }

    @Test func theHandshakeTimesOutOnTheLoopsClock() throws {
        let setup = try Self.setUp(timeout: .seconds(5))
        _ = try Self.clientHello(setup)
        setup.channel.embeddedEventLoop.advanceTime(by: .milliseconds(4999))
        #expect(setup.outcome.withLockedValue { $0 } == nil, "not before the timeout")
        setup.channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        let error = try #require(Self.error(setup))
        #expect(error.code == .timedOut)
        #expect(error.message.contains("api.example.com:443"))
        #expect(error.message.contains("TLS handshake"))
        #expect(!setup.channel.isActive, "the connection is closed")
    }

    @Test func bytesThatAreNotTLSFailTheHandshake() throws {
        let setup = try Self.setUp()
        _ = try Self.clientHello(setup)
        var garbage = setup.channel.allocator.buffer(capacity: 64)
        garbage.writeString("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        _ = try? setup.channel.writeInbound(garbage)
        let error = try #require(Self.error(setup))
        #expect(error.code == .tlsFailure)
        let failure = try #require(error.underlyingError as? ServerTrustFailure)
        #expect(failure.reason == .handshakeFailure)
        #expect(failure.host == "api.example.com")
        #expect(!setup.channel.isActive)
    }

    @Test func aConnectionClosedDuringTheHandshake() throws {
        let setup = try Self.setUp()
        _ = try Self.clientHello(setup)
        setup.channel.pipeline.fireChannelInactive()
        let error = try #require(Self.error(setup))
        #expect(error.code == .tlsFailure)
        #expect((error.underlyingError as? ServerTrustFailure)?.reason == .handshakeFailure)
        _ = try? setup.channel.finish()
    }
}
