import Foundation
import Logging
import NIOCore
import NIOPosix

extension NIOEngine.Configuration {
    /// The engine settings a session's configuration asks for.
    public init(_ session: SessionConfiguration) {
        self.init()
        self.requestTimeout = session.timeoutIntervalForRequest
        self.resourceTimeout = session.timeoutIntervalForResource
        self.connectTimeout = session.timeoutIntervalForConnect
        self.maximumConnectionsPerHost = session.httpMaximumConnectionsPerHost
        self.connectionIdleTimeout = session.connectionIdleTimeout
        self.http2PingInterval = session.http2PingInterval
        self.http2PingTimeout = session.http2PingTimeout
        self.expectContinueThreshold = session.expectContinueThreshold
        self.expectContinueTimeout = session.expectContinueTimeout
        self.httpVersion = session.httpVersion
        self.decompression = session.decompression
        self.redirectPolicy = session.redirectPolicy
        self.userAgent = session.userAgent
        // A configuration that names no proxy (an empty environment, say) is no proxy.
        self.proxy = session.proxy.flatMap { $0.isEmpty ? nil : $0 }
        self.unixSocketPaths = session.unixSocketPaths
        self.hostAddresses = session.hostAddresses
        self.hostNameResolver = session.hostNameResolver
    }
}

extension NIOEngine {
    /// Makes an engine with a session's configuration.
    /// - Parameters:
    ///   - configuration: Timeouts, connection limits, HTTP versions, decompression, proxy.
    ///   - securityPolicy: Which servers to trust.
    ///   - eventLoopGroup: The event loops to run on; NIO's shared singleton by default.
    ///   - logger: Where the engine logs connection-level events (`.debug` and below); none by default.
    public convenience init(
        configuration: SessionConfiguration,
        securityPolicy: SecurityPolicy = .default,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger? = nil
    ) {
        self.init(
            configuration: Configuration(configuration), securityPolicy: securityPolicy, eventLoopGroup: eventLoopGroup, logger: logger)
    }

    /// Makes an engine with a session's configuration and a security policy per host.
    /// - Parameters:
    ///   - configuration: Timeouts, connection limits, HTTP versions, decompression, proxy.
    ///   - serverTrust: Which policy applies to which host.
    ///   - eventLoopGroup: The event loops to run on; NIO's shared singleton by default.
    ///   - logger: Where the engine logs connection-level events (`.debug` and below); none by default.
    public convenience init(
        configuration: SessionConfiguration,
        serverTrust: ServerTrustPolicies,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger? = nil
    ) {
        self.init(configuration: Configuration(configuration), serverTrust: serverTrust, eventLoopGroup: eventLoopGroup, logger: logger)
    }
}

extension SessionConfiguration {
    /// The redirect policy `request` goes by: its own (``RequestOptions/redirectPolicy``), else the
    /// session's, as the engine reads it.
    func redirectPolicy(for request: Request) -> RedirectPolicy {
        request.options.redirectPolicy ?? self.redirectPolicy
    }
}

extension SessionConfiguration {
    /// Whether the engine hands `request` a coded response's body decoded: the session
    /// decompresses (``decompression``) and the request's `Accept-Encoding`, if it names one,
    /// accepts gzip or deflate. The cache keeps such bodies in that form only.
    func decodesBodies(for request: Request) -> Bool {
        guard case .enabled = self.decompression else { return false }
        return HopHandler.decodesResponse(to: request)
    }
}
