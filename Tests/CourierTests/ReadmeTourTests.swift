import Courier
import CourierTesting
import Foundation
import Testing

/// The README's tour, as written there (printing aside), so that it keeps running.
@Test func readmeTourRunsAsWritten() async throws {
    let server = try await TestServer.start()
    let manager = HTTPSessionManager(baseURL: server.baseURL)
    manager.completionQueue = .global()

    let response = try await manager.get("get", parameters: ["q": "courier", "page": 2])
    #expect(response.response.status == .ok)
    #expect((response.value.json?["args"] as? [String: any Sendable])?["q"] as? String == "courier")

    let posted: Bool = await awaitCallback { finish in
        manager.post("post", parameters: ["name": "Ada"], success: { task, object in
            finish(task.taskIdentifier > 0 && object != nil)
        }, failure: { task, error in
            Issue.record("failed: \(error.code) \(error.message)")
            finish(false)
        })
    }
    #expect(posted)

    struct Echo: Decodable, Sendable { let args: [String: String] }
    let echo = try await manager.get("get", parameters: ["lang": "swift"], as: Echo.self)
    #expect(echo.value.args == ["lang": "swift"])

    var request = Request(method: .put, url: server.url("/put"), body: .data(Data("hello".utf8)))
    request.headerFields[.contentType] = "text/plain"
    let fractions = Recorder<Double>()
    let echoed = try await manager.response(for: request, serializer: DataResponseSerializer(),
                                            uploadProgress: { fractions.append($0.fractionCompleted) })
    #expect(echoed.value.count > 0)
    #expect(fractions.all.last == 1.0)

    await manager.invalidate(cancelingTasks: false)
    try await server.shutdown()
}

/// The snippet of the CourierTesting catalog's landing page (CourierTesting.docc/CourierTesting.md).
@Test func readmeTestingSnippetRuns() async throws {
    let server = try await TestServer.start(.https())
    server.route("/hello") { _ in .text("hi") }
    var policy = SecurityPolicy.default
    policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
    let manager = HTTPSessionManager(baseURL: server.baseURL, securityPolicy: policy)
    manager.responseSerializer = StringResponseSerializer()
    let hello = try await manager.get("hello")
    #expect(hello.value as? String == "hi")
    await manager.invalidate(cancelingTasks: false)
    try await server.shutdown()
}
