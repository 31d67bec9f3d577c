import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// Twins of Alamofire's `DownloadResponseMapTestCase`, `DownloadResponseTryMapTestCase`,
/// `DownloadResponseMapErrorTestCase` and `DownloadResponseTryMapErrorTestCase`
/// (`Tests/DownloadTests.swift`).
///
/// A Courier `DownloadResponse` holds the file, not a `Result`: its value is what a serializer
/// makes of the file (`value(serializedBy:)`), which is then mapped; a failed download throws a
/// `CourierError` that keeps the request and the task's metrics, which a `catch` maps. The data
/// tasks' twins of the same tests are in `AlamofireResponseTests.swift`.
@Suite("Conformance: Alamofire DownloadTests, map and mapError")
struct AlamofireDownloadMapConformanceTests {
    typealias R = AlamofireResponseConformanceTests

    /// A download's value: its file, decoded.
    static func downloaded(_ manager: HTTPSessionManager, _ request: Request) async throws(CourierError) -> (DownloadResponse, HTTPBinEchoResponse) {
        let download = try await manager.download(request)
        defer { try? FileManager.default.removeItem(at: download.fileURL) }
        return (download, try download.value(serializedBy: DecodableResponseSerializer(HTTPBinEchoResponse.self)))
    }

    /// A failed download's error mapped in a `catch`: the mapped error holds it, with its request
    /// and metrics.
    static func expectFailureMapped() async throws {
        try await R.withManager { manager, _ in
            let request = R.failing()
            let error = await #expect(throws: R.TestError.self) {
                do throws(CourierError) { _ = try await manager.download(request) } catch { throw R.TestError.error(error: error) }
            }
            guard case .error(let underlying) = error else { Issue.record("not mapped"); return }
            R.expectFailureKeepsRequestAndMetrics(underlying, request: request)
        }
    }

    /// Differs: a download's response holds its file; the value a serializer makes of it is mapped.
    @Test func DownloadResponseMapTestCase_testThatMapTransformsSuccessValue() async throws {
        try await R.withManager { manager, server in
            let (download, echo) = try await Self.downloaded(manager, Request(url: server.url("/get?foo=bar")))
            #expect([echo].map { $0.args?["foo"] ?? "invalid" } == ["bar"])
            #expect(download.response.status == .ok)
            #expect(download.metrics?.transactions.isEmpty == false)
        }
    }

    /// Differs: as `ResponseMapTestCase_testThatMapPreservesFailureError`, for a download.
    @Test func DownloadResponseMapTestCase_testThatMapPreservesFailureError() async throws {
        try await R.withManager { manager, _ in
            let request = R.failing()
            let error = await #expect(throws: CourierError.self) { _ = try await Self.downloaded(manager, request) }
            R.expectFailureKeepsRequestAndMetrics(error, request: request)
        }
    }

    /// Differs: as `DownloadResponseMapTestCase_testThatMapTransformsSuccessValue`.
    @Test func DownloadResponseTryMapTestCase_testThatTryMapTransformsSuccessValue() async throws {
        try await R.withManager { manager, server in
            let (download, echo) = try await Self.downloaded(manager, Request(url: server.url("/get?foo=bar")))
            let foo = try { () throws(R.TransformError) -> String in
                guard let foo = echo.args?["foo"] else { throw R.TransformError() }
                return foo
            }()
            #expect(foo == "bar")
            #expect(download.metrics?.transactions.isEmpty == false)
        }
    }

    /// Differs: the serializer's own failure is thrown by `value(serializedBy:)`, typed.
    @Test func DownloadResponseTryMapTestCase_testThatTryMapCatchesTransformationError() async throws {
        try await R.withManager { manager, server in
            let download = try await manager.download(Request(url: server.url("/bytes/16")))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            let error = #expect(throws: CourierError.self) {
                _ = try download.value(serializedBy: DecodableResponseSerializer(HTTPBinEchoResponse.self))
            }
            #expect(error?.code == .responseSerializationFailed)
            #expect(error?.response?.status == .ok)
        }
    }

    /// Differs: as `DownloadResponseMapTestCase_testThatMapPreservesFailureError`.
    @Test func DownloadResponseTryMapTestCase_testThatTryMapPreservesFailureError() async throws {
        try await R.withManager { manager, _ in
            let request = R.failing()
            let error = await #expect(throws: CourierError.self) { _ = try await manager.download(request) }
            R.expectFailureKeepsRequestAndMetrics(error, request: request)
        }
    }

    /// Differs: as `ResponseMapErrorTestCase_testThatMapErrorTransformsFailureValue`, for a download.
    @Test func DownloadResponseMapErrorTestCase_testThatMapErrorTransformsFailureValue() async throws {
        try await Self.expectFailureMapped()
    }

    /// Differs: as `ResponseMapErrorTestCase_testThatMapErrorPreservesSuccessValue`, for a download.
    @Test func DownloadResponseMapErrorTestCase_testThatMapErrorPreservesSuccessValue() async throws {
        try await R.withManager { manager, server in
            let (download, echo) = try await Self.downloaded(manager, Request(url: server.url("/get")))
            #expect(echo.url == server.url("/get").absoluteString)
            #expect(download.metrics != nil)
        }
    }

    /// Differs: as `ResponseTryMapErrorTestCase_testThatTryMapErrorPreservesSuccessValue`, for a download.
    @Test func DownloadResponseTryMapErrorTestCase_testThatTryMapErrorPreservesSuccessValue() async throws {
        try await R.withManager { manager, server in
            do {
                let (download, _) = try await Self.downloaded(manager, Request(url: server.url("/get")))
                #expect(download.response.status == .ok)
            } catch {
                Issue.record("a success reached the catch: \(error)")
            }
        }
    }

    /// Differs: as `ResponseTryMapErrorTestCase_testThatTryMapErrorCatchesTransformationError`, for a download.
    @Test func DownloadResponseTryMapErrorTestCase_testThatTryMapErrorCatchesTransformationError() async throws {
        try await R.withManager { manager, _ in
            _ = await #expect(throws: R.TransformationError.self) {
                do throws(CourierError) { _ = try await manager.download(R.failing()) } catch { _ = try R.TransformationError.error.alwaysFails() }
            }
        }
    }

    /// Differs: as `ResponseTryMapErrorTestCase_testThatTryMapErrorTransformsError`, for a download.
    @Test func DownloadResponseTryMapErrorTestCase_testThatTryMapErrorTransformsError() async throws {
        try await Self.expectFailureMapped()
    }
}
