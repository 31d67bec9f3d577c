import Courier
import CourierTesting
import Foundation
import NIOCore
import Testing

/// The sample of the DocC article Transfers (Courier.docc/Transfers.md), as written there (printing
/// aside), so that it keeps running.
@Test func readmeTransfersRunAsWritten() async throws {
    let server = try await TestServer.start()
    let fileURL = FileManager.default.temporaryDirectory.appendingPathComponent("courier-readme-upload-\(UUID().uuidString)")
    try Data(repeating: 42, count: 100_000).write(to: fileURL)
    defer { try? FileManager.default.removeItem(at: fileURL) }

    let manager = SessionManager()
    manager.completionQueue = .global()

    let uploaded: Bool = await awaitCallback { finish in
        let upload = manager.uploadTask(with: Request(method: .post, url: server.url("/post")), fromFile: fileURL,
                                        progress: { _ = $0.fractionCompleted }) { response, object, error in
            finish(response?.status == .ok && error == nil)
        }
        upload.resume()
    }
    #expect(uploaded)

    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-readme")
    try? FileManager.default.removeItem(at: folder.appendingPathComponent("alphabet.txt"))
    let download = try await manager.download(Request(url: server.url("/range/50000")),
                                              to: DownloadDestination { _, _ in folder.appendingPathComponent("alphabet.txt") })
    #expect(download.response.status == .ok)
    #expect(try Data(contentsOf: download.fileURL) == alphabet(50000))

    let task = manager.downloadTask(with: Request(url: server.url("/courier/file/1048576?rate=524288")), completionHandler: nil)
    task.resume()
    while task.countOfBytesReceived < 100_000 { try await Task.sleep(for: .milliseconds(50)) }
    let resumeData = await task.cancelProducingResumeData()
    // Resume data, unless the whole file had already arrived: the sample's 2 s download may end
    // while the 50 ms poll waits for a turn on two cores busy with the whole suite.
    #expect(resumeData != nil || task.countOfBytesReceived == 1_048_576, "no resume data after \(task.countOfBytesReceived) bytes")
    if let resumeData {
        let rest = try await manager.download(resumingFrom: resumeData)
        #expect(rest.response.status == .partialContent)
        try? FileManager.default.removeItem(at: rest.fileURL)
    }

    let stream = try await manager.stream(Request(url: server.url("/stream-bytes/100000")))
    var streamed = 0
    for try await chunk in stream.body { streamed += chunk.readableBytes }
    #expect(streamed == 100_000)

    var events: [ServerSentEvent] = []
    for try await event in manager.eventStream(Request(url: server.url("/courier/sse?count=3"))) {
        events.append(event)
    }
    #expect(events.map(\.id) == ["1", "2", "3"], "the server's 204 after the last event ends the loop")

    let slow = manager.dataTask(with: Request(url: server.url("/bytes/20000")), completionHandler: nil)
    slow.resume()
    var last: ProgressSnapshot?
    for await snapshot in slow.progressUpdates(for: .download) { last = snapshot }
    #expect(last?.fractionCompleted == 1)
    await manager.invalidate(cancelingTasks: false)
    try await server.shutdown()
    try? FileManager.default.removeItem(at: folder)
}
