import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTPCompression
import NIOSSL
import Tracing

extension NIOEngine {
    /// Translates Courier's configuration and security policy into AsyncHTTPClient's.
    static func clientConfiguration(
        _ configuration: NIOEngine.Configuration,
        trust: ServerTrustEvaluator
    ) -> HTTPClient.Configuration {
        var client = HTTPClient.Configuration()
        // AHC starts a span per request with the tracer bootstrapped in `InstrumentationSystem`.
        // When none was bootstrapped that tracer is a no-op whose spans still cost about 4 % of
        // the client's CPU per request (span, attributes, a parse of the URL): skip them then.
        if client.tracing.tracer is NoOpTracer {
            client.tracing.tracer = nil
        }
        client.tlsConfiguration = trust.tlsConfiguration()
        // The policy's check of each connection's leaf, before any request byte is written.
        client.http1_1ConnectionDebugInitializer = trust.connectionInitializer()
        client.http2ConnectionDebugInitializer = trust.connectionInitializer()
        // Courier follows redirects itself, asking the task's delegate about each hop.
        client.redirectConfiguration = .disallow
        // The idle (read) deadline is the exchange's own: see `NIOExchange.idleTimeout`.
        client.timeout = HTTPClient.Configuration.Timeout(
            connect: .nanoseconds(Int64(configuration.connectTimeout * 1e9)),
            read: nil
        )
        var pool = HTTPClient.Configuration.ConnectionPool(
            idleTimeout: .nanoseconds(Int64(configuration.connectionIdleTimeout * 1e9)),
            concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, configuration.maximumConnectionsPerHost)
        )
        // A refused connection or a bad certificate must fail now, not after the connect timeout
        // of back-off retries (AHC would otherwise retry about 15 handshakes within a 10 s
        // connect timeout).
        pool.retryConnectionEstablishment = false
        client.connectionPool = pool
        switch configuration.httpVersion.base {
        case .http1Only: client.httpVersion = .http1Only
        case .automatic: client.httpVersion = .automatic
        }
        switch configuration.decompression {
        case .disabled: client.decompression = .disabled
        case .enabled(let ratio): client.decompression = .enabled(limit: .ratio(max(1, ratio)))
        }
        // AHC takes one proxy for every request: the https one, else the http one (no bypass list).
        if let proxy = configuration.proxy?.https ?? configuration.proxy?.http {
            switch proxy.kind {
            case .http:
                let authorization = proxy.username.map {
                    HTTPClient.Authorization.basic(username: $0, password: proxy.password ?? "")
                }
                client.proxy = .server(host: proxy.host, port: proxy.port, authorization: authorization)
            case .socks:
                client.proxy = .socksServer(host: proxy.host, port: proxy.port)
            }
        }
        return client
    }
}
