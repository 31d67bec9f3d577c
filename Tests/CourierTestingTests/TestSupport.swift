import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// A response with its whole body.
struct Fetched {
    var response: HTTPClientResponse
    var body: ByteBuffer

    var status: Int { Int(self.response.status.code) }
    var text: String { String(buffer: self.body) }
    var bytes: [UInt8] { Array(self.body.readableBytesView) }

    func header(_ name: String) -> String? { self.response.headers.first(name: name) }

    /// The body as a JSON object.
    func json() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(self.bytes), options: [.fragmentsAllowed])
        return try #require(object as? [String: Any], "not a JSON object: \(self.text)")
    }
}

/// How a test's client behaves.
struct ClientOptions {
    var http1Only = false
    var verifyHostname = true
}

/// Starts a server and an AsyncHTTPClient (trusting the test root CA, not following redirects),
/// runs `body`, then shuts both down.
func withServer(
    _ configuration: TestServer.Configuration = TestServer.Configuration(),
    client options: ClientOptions = ClientOptions(),
    _ body: (TestServer, HTTPClient) async throws -> Void
) async throws {
    try await TestServer.withServer(configuration) { server in
        let client = makeClient(options)
        do {
            try await body(server, client)
            try await client.shutdown()
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}

/// An AsyncHTTPClient for tests: trusts ``TestCertificates/rootCA``, does not follow redirects,
/// does not retry failed connections, gives up after a few seconds.
func makeClient(_ options: ClientOptions = ClientOptions()) -> HTTPClient {
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.trustRoots = .certificates(try! NIOSSLCertificate.fromPEMBytes(Array(TestCertificates.rootCA.utf8)))
    if !options.verifyHostname { tls.certificateVerification = .noHostnameVerification }
    var configuration = HTTPClient.Configuration(
        tlsConfiguration: tls,
        redirectConfiguration: .disallow,
        timeout: .init(connect: .seconds(120), read: .seconds(120)),
        decompression: .disabled
    )
    configuration.connectionPool.retryConnectionEstablishment = false
    if options.http1Only { configuration.httpVersion = .http1Only }
    return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
}

extension HTTPClient {
    /// Sends a request and collects the body (up to 16 MiB).
    func fetch(
        _ url: URL,
        method: HTTPMethod = .GET,
        headers: HTTPHeaders = [:],
        body: [UInt8]? = nil
    ) async throws -> Fetched {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = method
        request.headers = headers
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        // A bound on a hang (AsyncHTTPClient applies it until the head is in): the whole suite
        // runs beside this on two cores, and has stalled single requests for 20 s.
        let response = try await self.execute(request, timeout: .seconds(60))
        let collected = try await response.body.collect(upTo: 16 << 20)
        return Fetched(response: response, body: collected)
    }
}
