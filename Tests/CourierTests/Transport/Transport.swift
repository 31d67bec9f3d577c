import Courier
import CourierTesting
import Foundation
import Testing

/// The transports every engine behaviour is tested over ("every transport, one test body"): each
/// test in this folder takes one as its argument, starts its ``TestServer`` and a manager set up
/// for it with ``run(server:configure:_:)``, and runs the same body on each.
///
/// Which protocol carried the requests is checked from the server's side:
/// ``run(server:configure:_:)`` expects every request the server received to have come over
/// ``httpVersion`` (`TransportMetricsTests` checks the client's side, `TransactionMetrics`).
enum Transport: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// HTTP/1.1 in cleartext.
    case http1
    /// HTTP/1.1 over TLS: the server offers `h2` and `http/1.1`, the session allows only HTTP/1.1.
    case http1TLS
    /// HTTP/2 over TLS, negotiated through ALPN.
    case http2

    var testDescription: String {
        switch self {
        case .http1: "HTTP/1.1"
        case .http1TLS: "HTTP/1.1 over TLS"
        case .http2: "HTTP/2"
        }
    }

    /// The transports over TLS.
    static let secure: [Transport] = [.http1TLS, .http2]

    var isSecure: Bool { self != .http1 }

    /// `http` or `https`.
    var scheme: String { self.isSecure ? "https" : "http" }

    /// The version the server must see every request come over (``TestServer/Request/httpVersion``).
    var httpVersion: String { self == .http2 ? "HTTP/2" : "HTTP/1.1" }

    /// A recording server for this transport, presenting `identity` when it speaks TLS.
    func serverConfiguration(_ identity: TestServer.Identity = .localhost) -> TestServer.Configuration {
        var configuration = self.isSecure ? TestServer.Configuration.https(identity) : TestServer.Configuration()
        configuration.recordsRequests = true
        return configuration
    }

    /// `base` with this transport's HTTP versions, and no response cache: every request must reach
    /// the server.
    func sessionConfiguration(_ base: SessionConfiguration = .default) -> SessionConfiguration {
        var configuration = base
        configuration.httpVersion = self == .http1TLS ? .http1Only : .automatic
        configuration.responseCache = nil
        return configuration
    }

    /// The default policy, also trusting ``TestCertificates/rootCA``.
    static func trustingTestRoot() throws -> SecurityPolicy {
        var policy = SecurityPolicy.default
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        return policy
    }

    /// Runs `body` with a fresh server for this transport and a manager on it (trusting the test
    /// root, with this transport's HTTP versions, no cache, and `configure`'s changes), then
    /// expects every request the server received to have come over ``httpVersion``.
    /// - Parameter wrapEngine: Puts the manager's `NIOEngine` inside another engine (an
    ///   `EventRecordingEngine`); the manager's `engine` is what it returns.
    @discardableResult
    func run<T>(
        identity: TestServer.Identity = .localhost,
        configure: (inout SessionConfiguration) -> Void = { _ in },
        wrapEngine: ((NIOEngine) -> any Engine)? = nil,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ body: (TestServer, HTTPSessionManager) async throws -> T
    ) async throws -> T {
        try await withTestServer(self.serverConfiguration(identity)) { server in
            var configuration = self.sessionConfiguration()
            configure(&configuration)
            let policy = try Self.trustingTestRoot()
            let manager: HTTPSessionManager
            if let wrapEngine {
                let engine = NIOEngine(configuration: NIOEngine.Configuration(configuration), securityPolicy: policy)
                manager = HTTPSessionManager(baseURL: server.baseURL, engine: wrapEngine(engine), configuration: configuration)
            } else {
                manager = HTTPSessionManager(baseURL: server.baseURL, configuration: configuration, securityPolicy: policy)
            }
            manager.completionQueue = TestQueues.completion
            let result: T
            do {
                result = try await body(server, manager)
            } catch {
                await manager.invalidate(cancelingTasks: true)
                throw error
            }
            await manager.invalidate(cancelingTasks: true)
            self.expectCarried(server, sourceLocation: sourceLocation)
            return result
        }
    }

    /// Expects the requests `server` received so far all to have come over ``httpVersion``.
    func expectCarried(_ server: TestServer, sourceLocation: SourceLocation = #_sourceLocation) {
        let versions = server.requestCountsByHTTPVersion
        if !versions.isEmpty {
            #expect(Set(versions.keys) == [self.httpVersion], "requests came over \(versions), not only \(self.httpVersion)", sourceLocation: sourceLocation)
        }
    }

    /// A URL on loopback with nothing listening, in this transport's scheme.
    func refusingURL(_ path: String = "get") -> URL {
        URL(string: "\(self.scheme)://127.0.0.1:\(closedPort())/\(path)")!
    }
}
