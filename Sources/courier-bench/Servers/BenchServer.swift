import Foundation

/// A server the clients are measured against. It answers `GET url` with 200 and a small body.
protocol BenchServer: AnyObject, Sendable {
    /// What to print: the server and how it runs.
    var summary: String { get }
    /// The URL every client requests.
    var url: URL { get }
    /// A Unix-domain socket the server also listens on, speaking what ``url`` speaks; nil for none.
    var unixSocketPath: String? { get }
    /// Stops the server if the bench started it; waits until it is gone.
    func stop() async
}

extension BenchServer {
    var unixSocketPath: String? { nil }
}

/// A server the user started (`--url`): the bench neither starts nor stops it.
final class ExternalServer: BenchServer {
    let url: URL
    var summary: String { "external server at \(self.url.absoluteString)" }

    init(url: URL) { self.url = url }

    func stop() async {}
}

enum ServerLauncher {
    /// The path of the tiny resource the started servers serve.
    static let path = "/small"
    /// The body it answers with: 13 bytes of JSON.
    static let body = #"{"msg":"hi!"}"#

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The server `arguments` ask for, started and answering.
    static func start(_ arguments: Arguments) async throws -> any BenchServer {
        if arguments.tls {
            guard arguments.url == nil, arguments.server != .testserver else {
                throw Failure(description: "--tls and --http2 start nginx themselves: leave out --url and --server testserver")
            }
            return try await NginxServer.start(tls: true, http2: arguments.http2)
        }
        if let text = arguments.url {
            // https: the clients trust CourierTesting's root CA, so the server presents a chain
            // from it (TestCertificates' localhost chain, as with --tls).
            guard let url = URL(string: text), let host = url.host, ["http", "https"].contains(url.scheme) else {
                throw Failure(description: "--url needs an http or https URL, not '\(text)'")
            }
            guard ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host) else {
                throw Failure(description: "--url must be on loopback (127.0.0.1, localhost or ::1), not \(host)")
            }
            return ExternalServer(url: url)
        }
        switch arguments.server {
        case .nginx:
            return try await NginxServer.start()
        case .testserver:
            return try await TestServerBackend.start()
        case .auto:
            if NginxServer.isInstalled {
                return try await NginxServer.start()
            }
            return try await TestServerBackend.start()
        }
    }
}
