import CourierTesting
import Foundation
import HTTPTypes

/// CourierTesting's in-process `TestServer` as a bench server: a custom route answers
/// `GET /small` with the same 13 bytes of JSON nginx serves.
final class TestServerBackend: BenchServer {
    let url: URL
    private let server: TestServer
    var summary: String { "TestServer (in process) at \(self.url.absoluteString)" }

    private init(server: TestServer) {
        self.server = server
        self.url = server.url("/small")
    }

    static func start() async throws -> TestServerBackend {
        let server = try await TestServer.start()
        let body = Data(ServerLauncher.body.utf8)
        server.route("/small", methods: [.get]) { _ in
            TestServer.Response(status: .ok, headerFields: [.contentType: "application/json"], body: body)
        }
        return TestServerBackend(server: server)
    }

    func stop() async {
        try? await self.server.shutdown()
    }
}
