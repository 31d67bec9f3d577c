import Foundation

// TODO(lead): finish this adapter once `TestServer` lands in CourierTesting (built in parallel on
// another branch). Intended shape, per the brief:
//
//     let server = try await TestServer.start(...)   // a route answering GET /small with 200 and
//                                                    // `ServerLauncher.body` as application/json
//     return TestServerBackend(server: server, url: server.baseURL.appendingPathComponent("small"))
//
// and `stop()` shutting it down. Until then `--server testserver` (and `auto` without nginx)
// fails with the message below; nginx and `--url` work.

/// The in-process `TestServer` of CourierTesting as a bench server.
final class TestServerBackend: BenchServer {
    let url: URL
    var summary: String { "TestServer (in process) at \(self.url.absoluteString)" }

    private init(url: URL) { self.url = url }

    static func start() async throws -> TestServerBackend {
        throw ServerLauncher.Failure(
            description: "TestServer not available yet: install nginx (apt-get install nginx-light) or pass --url")
    }

    func stop() async {}
}
