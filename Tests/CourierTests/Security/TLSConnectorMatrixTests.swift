@testable import Courier
import CourierTesting
import Foundation
import NIOCore
import Testing

/// ``PinningMatrix`` over real sockets through Courier's own TLS (``TLSConnector``): every row
/// gives AFNetworking's answer, and a refused server fails in the handshake with a typed reason.
/// ``TestCertificates/rootCA`` stands for the system's roots.
@Suite("Pinning matrix over TLS on Courier's own connections")
struct TLSConnectorMatrixTests {
    @Test(arguments: PinningMatrix.table)
    func row(_ row: PinningMatrix.Row) async throws {
        try await GeneratedCertificates.prepared()
        let connector = TLSConnector(
            serverTrust: ServerTrustPolicies(default: try PinningMatrix.policy(for: row)),
            trustStore: TrustStore(try Certificate.certificates(pemEncoded: TestCertificates.rootCA))
        )
        try await withTestServer(.https(try PinningMatrix.identity(row.identity))) { server in
            do {
                let connection = try await TLSProbe.handshake(connector, port: server.port)
                #expect(row.passes, "\(row) was trusted")
                try await connection.channel.close()
            } catch let error as CourierError {
                #expect(!row.passes, "\(row) was refused: \(error)")
                #expect(error.code == .serverTrustEvaluationFailed, "\(row): \(error)")
                #expect((error.underlyingError as? ServerTrustFailure)?.host == "127.0.0.1")
            }
            #expect(server.requestCount == 0)
        }
    }
}
