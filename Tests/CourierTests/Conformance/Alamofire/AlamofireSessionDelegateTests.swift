import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `Tests/SessionDelegateTests.swift`: redirects followed by default (on
/// TestServer and, with `COURIER_HTTPBIN_URL`, a real httpbin), and the notifications a task
/// posts. Alamofire's `HTTPURLResponse.url` is the final request's URL here
/// (`DataResponse.request.url`); its `Request.didResume…`/`didComplete…` notifications are
/// Courier's `.taskDidResume` and `.taskDidComplete`, whose object is the task.
@Suite("Conformance: Alamofire SessionDelegateTests")
struct AlamofireSessionDelegateConformanceTests {
    @Test(arguments: Peer.all)
    func testThatRequestWillPerformHTTPRedirectionByDefault(_ peer: Peer) async throws {
        try await peer.run { baseURL in
            try await withManager(baseURL: baseURL, configuration: .ephemeral) { manager in
                let target = baseURL.appendingPathComponent("get").absoluteString
                let response = try await manager.response(
                    method: .get, urlString: "redirect-to", parameters: ["url": target], serializer: DataResponseSerializer())
                #expect(response.request.url.absoluteString == target)
                #expect(response.response.status == .ok)
                #expect(response.data?.isEmpty == false)
            }
        }
    }

    @Test(arguments: Peer.all)
    func testThatRequestWillPerformRedirectionMultipleTimesByDefault(_ peer: Peer) async throws {
        try await peer.run { baseURL in
            try await withManager(baseURL: baseURL, configuration: .ephemeral) { manager in
                let response = try await manager.response(method: .get, urlString: "redirect/5", serializer: DataResponseSerializer())
                #expect(response.response.status == .ok)
                #expect(response.request.url.path == "/get")
                #expect(response.data?.isEmpty == false)
            }
        }
    }

    @Test(arguments: Peer.all)
    func testThatRequestWillPerformRedirectionFor307Response(_ peer: Peer) async throws {
        try await peer.run { baseURL in
            try await withManager(baseURL: baseURL, configuration: .ephemeral) { manager in
                let target = baseURL.appendingPathComponent("get").absoluteString
                let response = try await manager.response(
                    method: .get, urlString: "redirect-to", parameters: ["url": target, "status_code": 307] as [String: any Sendable], serializer: DataResponseSerializer())
                #expect(response.request.url.absoluteString == target)
                #expect(response.response.status == .ok)
            }
        }
    }

    /// The resume and completion notifications of one task, in order, with the task as object.
    static func expectNotifications(_ task: SessionTask, _ log: TaskNotificationLog) async {
        #expect(await log.wait(for: .taskDidComplete, of: task))
        #expect(log.count(.taskDidResume, of: task) == 1)
        #expect(log.count(.taskDidComplete, of: task) == 1)
    }

    @Test func testThatAppropriateNotificationsAreCalledWithRequestForDataRequest() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let log = TaskNotificationLog()
                let statuses = Recorder<Int?>()
                let task = manager.dataTask(with: Request(url: server.url("/get"))) { response, _, _ in statuses.append(response?.status.code) }
                #expect(log.count(.taskDidResume, of: task) == 0)
                task.resume()
                await Self.expectNotifications(task, log)
                // The notification comes after the completion handler ran.
                #expect(statuses.all == [200])
            }
        }
    }

    @Test func testThatDidCompleteNotificationIsCalledWithRequestForDownloadRequests() async throws {
        try await withScratchDirectory { folder in
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let log = TaskNotificationLog()
                    // A destination in the test's own folder: the file is not left in the
                    // temporary directory (without one, it is the caller's to remove).
                    let file = folder.appendingPathComponent("get.json")
                    let task = manager.downloadTask(
                        with: Request(url: server.url("/get")), destination: DownloadDestination { _, _ in file }, completionHandler: nil)
                    task.resume()
                    await Self.expectNotifications(task, log)
                    #expect(task.response?.status == .ok)
                    #expect(task.error == nil)
                    #expect(FileManager.default.fileExists(atPath: file.path))
                }
            }
        }
    }
}
