import Courier
import CourierTesting
import Foundation
import Testing

/// ``PinningMatrix`` over a real socket, through NIOEngine's https path (AsyncHTTPClient): each
/// row must give AFNetworking's answer, or the documented deviation of that path (``PinningMatrix/Row/ahc``).
///
/// Every policy trusts ``TestCertificates/rootCA`` beside the system's roots (a private authority).
/// Where this path differs (AHC shows only the leaf; BoringSSL anchors only on self-signed
/// certificates): a pinned intermediate anchors through its twin (``AnchorTwin`` in Courier); pinned
/// authorities are the roots even without invalid certificates allowed; a pinned authority's key in
/// public-key mode is its anchor, so the chain is checked even when invalid certificates are
/// allowed; a policy mixing leaf pins with authority pins needs the leaf to be pinned.
@Suite("Pinning matrix over HTTPS (AsyncHTTPClient path)", .serialized)
struct PinningMatrixTests {
    @Test(arguments: PinningMatrix.table)
    func row(_ row: PinningMatrix.Row) async throws {
        try await GeneratedCertificates.prepared()
        let passes = row.ahc ?? row.passes
        var policy = try PinningMatrix.policy(for: row)
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        let server = TestServer.Configuration.https(try PinningMatrix.identity(row.identity))
        try await withTestServer(server) { server in
            try await withManager(baseURL: server.baseURL, securityPolicy: policy) { manager in
                let started = ContinuousClock.now
                do {
                    let response = try await manager.get("get")
                    #expect(passes, "\(row) passed")
                    #expect(response.response.status == .ok)
                } catch let error as CourierError {
                    #expect(!passes, "\(row) failed: \(error)")
                    #expect(error.code == .serverTrustEvaluationFailed || error.code == .tlsFailure, "\(row): \(error)")
                    #expect(server.requestCount == 0, "no request reaches an untrusted server")
                    #expect(ContinuousClock.now - started < .seconds(8), "fails well before the 10 s connect timeout")
                }
            }
        }
    }
}
