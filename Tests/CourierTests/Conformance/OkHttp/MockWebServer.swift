import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers

/// OkHttp's MockWebServer, played by a TestServer for the OkHttp suites: one queue of scripted
/// responses for every path the suite routes (each request takes the next; an empty queue
/// answers `500 MockWebServer queue empty`, so a test that asks for one more response than
/// OkHttp's fails on it), and the requests it received, recorded.
struct MockWebServer: Sendable {
    /// MockWebServer's queue.
    final class Script: Sendable {
        private let queue = NIOLockedValueBox<[TestServer.Response]>([])

        func enqueue(_ response: TestServer.Response) {
            self.queue.withLockedValue { $0.append(response) }
        }

        func next() -> TestServer.Response {
            self.queue.withLockedValue { queue in
                queue.isEmpty ? TestServer.Response.text("MockWebServer queue empty", status: .internalServerError) : queue.removeFirst()
            }
        }

        var remaining: Int { self.queue.withLockedValue { $0.count } }
    }

    let server: TestServer
    let script: Script

    func enqueue(_ response: TestServer.Response) { self.script.enqueue(response) }

    func url(_ path: String) -> URL { self.server.url(path) }

    /// The requests that reached the server, oldest first (MockWebServer's `takeRequest()`).
    var requests: [TestServer.Request] { self.server.receivedRequests }

    /// Runs `body` with a MockWebServer on `host` that answers `paths` from its queue.
    static func with<T>(host: String = "127.0.0.1", paths: [String], _ body: (MockWebServer) async throws -> T) async throws -> T {
        var configuration = TestServer.Configuration()
        configuration.recordsRequests = true
        configuration.host = host
        return try await withTestServer(configuration) { server in
            let script = Script()
            for path in paths { server.route(path) { _ in script.next() } }
            return try await body(MockWebServer(server: server, script: script))
        }
    }
}

extension SessionManager {
    /// Sends `request` as OkHttp's `execute()` does: any status is a response, its body as data.
    func responseOfAnyStatus(for request: Request) async throws -> DataResponse<Data> {
        var serializer = DataResponseSerializer()
        serializer.http.acceptableStatusCodes = IndexSet(integersIn: 100..<600)
        return try await self.response(for: request, serializer: serializer)
    }
}
