import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import Testing

/// Twins of AFNetworking's `Tests/Tests/AFURLSessionManagerTests.m`, against TestServer (the
/// source downloads a large image from the Internet; here TestServer's `/bytes/N` and
/// `/courier/file/N`). Background sessions and method swizzling have no twin (see
/// `Docs/CONFORMANCE.md`).
@Suite("Conformance: AFNetworking AFURLSessionManagerTests")
struct AFURLSessionManagerConformanceTests {
    /// A plain session manager, invalidated afterwards.
    static func withLocalManager<T>(_ body: (SessionManager, TestServer) async throws -> T) async throws -> T {
        try await withTestServer { server in
            let manager = SessionManager()
            manager.completionQueue = TestQueues.completion
            manager.responseSerializer = HTTPResponseSerializer()
            do {
                let result = try await body(manager, server)
                await manager.invalidate(cancelingTasks: true)
                return result
            } catch {
                await manager.invalidate(cancelingTasks: true)
                throw error
            }
        }
    }

    /// Calls `onOne` once when a progress reaches 1.0.
    final class ReachedOne: Sendable {
        let box = NIOLockedValueBox(false)
        var reached: Bool { self.box.withLockedValue { $0 } }
        var handler: @Sendable (Progress) -> Void {
            { progress in if progress.fractionCompleted == 1.0 { self.box.withLockedValue { $0 = true } } }
        }
    }

    @Test func testDataTaskDoesReportDownloadProgress() async throws {
        try await Self.withLocalManager { manager, server in
            let reached = ReachedOne()
            let error: CourierError? = await awaitCallback { finish in
                manager.dataTask(with: Request(url: server.url("/bytes/262144")), downloadProgress: reached.handler) { _, _, error in
                    finish(error)
                }.resume()
            }
            #expect(error == nil)
            #expect(reached.reached)
        }
    }

    /// KVO has no Swift twin on Linux; `progressUpdates(for:)` is Courier's observable progress:
    /// it starts at the current value, never goes backwards and ends at 1.0. (It hands a slow
    /// consumer the newest value only, so the values in between depend on the machine's load.)
    @Test func testDataTaskDownloadProgressCanBeKVOd() async throws {
        try await Self.withLocalManager { manager, server in
            // Paced (512 KiB/s) so that progress is seen between 0 and 1.
            let task = manager.dataTask(with: Request(url: server.url("/courier/file/262144?rate=524288")), completionHandler: nil)
            let updates = task.progressUpdates(for: .download)
            task.resume()
            var fractions: [Double] = []
            for await snapshot in updates { fractions.append(snapshot.fractionCompleted) }
            #expect(fractions.count >= 2)
            #expect(fractions.first == 0)
            #expect(fractions.last == 1.0)
            #expect(fractions == fractions.sorted())
        }
    }

    @Test func testDownloadTaskDoesReportProgress() async throws {
        try await Self.withLocalManager { manager, server in
            let reached = ReachedOne()
            let (file, error): (URL?, CourierError?) = await awaitCallback { finish in
                manager.downloadTask(with: Request(url: server.url("/courier/file/262144")), progress: reached.handler) { _, file, error in
                    finish((file, error))
                }.resume()
            }
            defer { file.map { try? FileManager.default.removeItem(at: $0) } }
            #expect(error == nil)
            #expect(reached.reached)
        }
    }

    /// `resetSession: NO`: the invalidated manager keeps its engine, and a task made afterwards
    /// fails with `.sessionInvalidated` without reaching the server.
    @Test func testSessionIsStillValid() async throws {
        try await withTestServer { server in
            let manager = SessionManager()
            manager.completionQueue = TestQueues.completion
            let engine = manager.engine
            await manager.invalidate(cancelingTasks: true)
            #expect(manager.engine as AnyObject === engine as AnyObject)
            let error: CourierError? = await awaitCallback { finish in
                manager.dataTask(with: Request(url: server.url("/get"))) { _, _, error in finish(error) }.resume()
            }
            #expect(error?.code == .sessionInvalidated)
            #expect(server.requestCount == 0)
        }
    }

    @Test func testUploadTaskDoesReportProgress() async throws {
        let payload = Data(String(repeating: "AFNetworking", count: 1700).utf8)
        try await Self.withLocalManager { manager, server in
            let reached = ReachedOne()
            let error: CourierError? = await awaitCallback { finish in
                manager.uploadTask(with: Request(method: .post, url: server.url("/post")), fromData: payload, progress: reached.handler) {
                    _, _, error in finish(error)
                }.resume()
            }
            #expect(error == nil)
            #expect(reached.reached)
        }
    }

    /// As ``testDataTaskDownloadProgressCanBeKVOd()``, for the upload direction.
    @Test func testUploadProgressCanBeKVOd() async throws {
        let payload = Data(String(repeating: "AFNetworking", count: 1700).utf8)
        try await Self.withLocalManager { manager, server in
            let task = manager.uploadTask(with: Request(method: .post, url: server.url("/post")), fromData: payload, completionHandler: nil)
            let updates = task.progressUpdates(for: .upload)
            task.resume()
            var last = 0.0
            for await snapshot in updates { last = snapshot.fractionCompleted }
            #expect(last == 1.0)
        }
    }

    // MARK: Issue #2702: resume and suspend notifications

    enum Kind: String, CaseIterable, Sendable { case data, upload, download }

    static func delayedTask(_ kind: Kind, _ manager: SessionManager, _ server: TestServer) -> SessionTask {
        let request = Request(url: server.url("/delay/1"))
        switch kind {
        case .data: return manager.dataTask(with: request, completionHandler: nil)
        case .upload: return manager.uploadTask(with: Request(method: .post, url: server.url("/delay/1")), fromData: Data(), completionHandler: nil)
        case .download: return manager.downloadTask(with: request, completionHandler: nil)
        }
    }

    static func resumeNotification(_ kind: Kind) async throws {
        try await Self.withLocalManager { manager, server in
            let task = Self.delayedTask(kind, manager, server)
            let note = await Conformance.notification(.taskDidResume, object: task) {
                task.resume()
                task.suspend()
                task.resume()
            }
            #expect(note?.object as? SessionTask === task)
            task.cancel()
        }
    }

    static func suspendNotification(_ kind: Kind) async throws {
        try await Self.withLocalManager { manager, server in
            let task = Self.delayedTask(kind, manager, server)
            let note = await Conformance.notification(.taskDidSuspend, object: task) {
                task.resume()
                task.suspend()
                task.resume()
            }
            #expect(note?.object as? SessionTask === task)
            task.cancel()
        }
    }

    @Test func testDidResumeNotificationIsReceivedByLocalDataTaskAfterResume() async throws { try await Self.resumeNotification(.data) }
    @Test func testDidSuspendNotificationIsReceivedByLocalDataTaskAfterSuspend() async throws { try await Self.suspendNotification(.data) }
    @Test func testDidResumeNotificationIsReceivedByLocalUploadTaskAfterResume() async throws { try await Self.resumeNotification(.upload) }
    @Test func testDidSuspendNotificationIsReceivedByLocalUploadTaskAfterSuspend() async throws { try await Self.suspendNotification(.upload) }
    @Test func testDidResumeNotificationIsReceivedByLocalDownloadTaskAfterResume() async throws { try await Self.resumeNotification(.download) }
    @Test func testDidSuspendNotificationIsReceivedByLocalDownloadTaskAfterSuspend() async throws { try await Self.suspendNotification(.download) }

    // MARK: Download file notifications

    @Test func testTaskMoveSuccessfullyAfterDownloading() async throws {
        try await Self.withLocalManager { manager, server in
            let destinationURL = FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: destinationURL) }
            let task = manager.downloadTask(
                with: Request(url: server.url("/courier/file/65536")), destination: DownloadDestination { _, _ in destinationURL },
                completionHandler: nil)
            let note = await Conformance.notification(.downloadTaskDidMoveFile, object: task) { task.resume() }
            #expect(note != nil)
            #expect(FileManager.default.fileExists(atPath: destinationURL.path))
        }
    }

    /// The destination is a path in a folder that cannot be made (under a regular file).
    @Test func testTaskMoveFailedAfterDownloading() async throws {
        try await Self.withLocalManager { manager, server in
            let blocker = FileManager.default.temporaryDirectory.appendingPathComponent("courier-\(UUID().uuidString)")
            try Data("a file, not a folder".utf8).write(to: blocker)
            defer { try? FileManager.default.removeItem(at: blocker) }
            let task = manager.downloadTask(
                with: Request(url: server.url("/courier/file/65536")),
                destination: DownloadDestination { _, _ in blocker.appendingPathComponent("b/c") }, completionHandler: nil)
            let note = await Conformance.notification(.downloadTaskDidFailToMoveFile, object: task) { task.resume() }
            #expect(note != nil)
        }
    }
}

/// Issue 19's twin: task metrics reach an event monitor (Courier's
/// `setTaskDidFinishCollectingMetricsBlock:`), before the completion notification.
extension AFURLSessionManagerConformanceTests {
    /// Differs: the metrics are Courier's `TaskMetrics` (per attempt: start, head, end, redirects,
    /// bytes each way), delivered to `EventMonitor.task(_:didFinishCollecting:)`; the completion
    /// notification does not carry them.
    @Test func testSessionTaskDoesReportMetrics() async throws {
        try await Self.withLocalManager { manager, server in
            let collected = NIOLockedValueBox<[TaskMetrics]>([])
            var monitor = ClosureEventMonitor()
            monitor.taskDidFinishCollectingMetrics = { _, metrics in collected.withLockedValue { $0.append(metrics) } }
            manager.eventMonitors = [monitor]
            let file: URL? = await awaitCallback { finish in
                manager.downloadTask(with: Request(url: server.url("/bytes/100000"))) { _, file, _ in finish(file) }.resume()
            }
            if let file { try? FileManager.default.removeItem(at: file) }
            #expect(file != nil)
            #expect(await eventually { collected.withLockedValue { $0.count } == 1 })
            let metrics = collected.withLockedValue { $0.first }
            #expect(metrics?.attempts.count == 1)
            #expect(metrics?.response?.status == .ok)
            #expect(metrics?.bytesReceived == 100_000)
            #expect(metrics.map { $0.duration > .zero } == true)
        }
    }
}
