import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// AsyncHTTPClient used as a typical user does: the async `execute(_:timeout:)`, then the body
/// collected, on NIO's singleton event loops.
final class AHCClient: AsyncBenchClient {
    private let client: HTTPClient
    private let url: String

    init(url: URL, connections: Int) {
        var configuration = HTTPClient.Configuration()
        // AHC opens 8 connections per host by default; every client in the bench gets the same limit.
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
        if url.scheme == "https" { configuration.tlsConfiguration = Self.trustingTestRoot }
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.url = url.absoluteString
    }

    /// TLS that trusts CourierTesting's root: with `--tls`, nginx presents its localhost chain.
    static var trustingTestRoot: TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates((try? NIOSSLCertificate.fromPEMBytes(Array(TestCertificates.rootCA.utf8))) ?? [])
        return tls
    }

    func fetch() async -> Bool {
        do {
            let response = try await self.client.execute(HTTPClientRequest(url: self.url), timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 20)
            return response.status == .ok && body.readableBytes > 0
        } catch {
            FailureReasons.record("\(error)")
            return false
        }
    }

    func shutdown() async {
        try? await self.client.shutdown()
    }
}
