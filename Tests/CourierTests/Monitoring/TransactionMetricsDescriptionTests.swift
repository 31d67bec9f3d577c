import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import Courier

@Suite("Monitoring: a transaction's summary (TransactionMetrics.description, courier --verbose)")
struct TransactionMetricsDescriptionTests {
    /// A finished https transaction on a new connection: every phase a whole number of milliseconds.
    static func transaction() throws -> TransactionMetrics {
        let start = ContinuousClock.now
        func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }
        var metrics = TransactionMetrics(request: Request(url: try #require(URL(string: "https://example.com/a"))), fetchStart: start)
        metrics.domainLookupStart = at(0)
        metrics.domainLookupEnd = at(1)
        metrics.connectStart = at(1)
        metrics.secureConnectionStart = at(2)
        metrics.secureConnectionEnd = at(5)
        metrics.connectEnd = at(5)
        metrics.requestStart = at(5)
        metrics.requestEnd = at(6)
        metrics.responseStart = at(10)
        metrics.responseEnd = at(12)
        metrics.response = HTTPResponse(status: .ok)
        metrics.networkProtocolName = "h2"
        metrics.localSocketAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 50_000)
        metrics.remoteSocketAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 443)
        metrics.tlsProtocolVersion = .v1_3
        metrics.tlsCipherSuite = .TLS_AES_128_GCM_SHA256
        metrics.countOfRequestHeaderBytesSent = 40
        metrics.countOfResponseHeaderBytesReceived = 60
        metrics.countOfResponseBodyBytesReceived = 6
        metrics.countOfResponseBodyBytesAfterDecoding = 6
        return metrics
    }

    @Test("Four lines: the exchange, the connection (the TLS version named once, then the suite), the phases, the bytes")
    func summary() throws {
        let lines = try Self.transaction().description.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines.first == "GET https://example.com/a 200 over HTTP/2")
        #expect(lines.dropFirst().first == "new connection to 127.0.0.1:443 from 127.0.0.1:50000, TLS 1.3 TLS_AES_128_GCM_SHA256")
        #expect(
            lines.dropFirst(2).first
                == "lookup 1.000 ms, connect 4.000 ms, TLS 3.000 ms, request 1.000 ms, wait 4.000 ms, response 2.000 ms, total 12.000 ms")
        #expect(lines.last == "sent 40 + 0 bytes, received 60 + 6 bytes")
    }

    @Test("IPv6 addresses are bracketed before their ports")
    func ipv6Endpoints() throws {
        var metrics = try Self.transaction()
        metrics.localSocketAddress = try SocketAddress(ipAddress: "::1", port: 50_000)
        metrics.remoteSocketAddress = try SocketAddress(ipAddress: "::1", port: 443)
        let lines = metrics.description.split(separator: "\n").map(String.init)
        #expect(lines.dropFirst().first == "new connection to [::1]:443 from [::1]:50000, TLS 1.3 TLS_AES_128_GCM_SHA256")
    }

    @Test("Cleartext through a proxy, reused: no TLS part")
    func cleartext() throws {
        var metrics = try Self.transaction()
        metrics.tlsProtocolVersion = nil
        metrics.tlsCipherSuite = nil
        metrics.isReusedConnection = true
        metrics.isProxyConnection = true
        let connection = metrics.description.split(separator: "\n").dropFirst().first.map(String.init)
        #expect(connection == "reused connection through a proxy to 127.0.0.1:443 from 127.0.0.1:50000")
    }
}
