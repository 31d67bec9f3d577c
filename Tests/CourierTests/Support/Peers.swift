import CourierTesting
import Foundation

/// A server the conformance tests run against: always the in-process TestServer, and a real
/// httpbin when `COURIER_HTTPBIN_URL` names one (`.ci/run` starts PyPI's httpbin under gunicorn).
enum Peer: Sendable, CustomTestStringConvertible {
    case testServer
    case httpbin(URL)

    static var all: [Peer] {
        var peers: [Peer] = [.testServer]
        if let value = ProcessInfo.processInfo.environment["COURIER_HTTPBIN_URL"], let url = URL(string: value) {
            peers.append(.httpbin(url))
        }
        return peers
    }

    var testDescription: String {
        switch self {
        case .testServer: "TestServer"
        case .httpbin(let url): "httpbin at \(url.absoluteString)"
        }
    }

    /// Runs `body` with the peer's base URL.
    func run<T>(_ body: (URL) async throws -> T) async throws -> T {
        switch self {
        case .testServer:
            try await withTestServer { server in try await body(server.baseURL) }
        case .httpbin(let url):
            try await body(url)
        }
    }
}

import Testing
