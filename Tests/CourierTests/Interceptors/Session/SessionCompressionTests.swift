import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

@testable import Courier

@Suite("Session: request bodies compressed through an adapter, and sent as they are to a server that refuses them")
struct SessionCompressionTests {
    @Test("gzip over the wire: the server inflates the body it got; a server answering 415 gets it again uncompressed, and from then on")
    func compression() async throws {
        try await withTestServer { server in
            let payload = Data(String(repeating: #"{"name":"Ada","tags":["a","b"]},"#, count: 200).utf8)
            server.route("/inflate") { request in
                guard request.value(forHTTPHeaderField: "Content-Encoding") == "gzip",
                    let inflated = RequestCompressorTests.inflate(request.body)
                else { return TestServer.Response(status: .badRequest) }
                return .text("\(request.body.count) \(inflated.count)")
            }
            let encodings = NIOLockedValueBox<[String]>([])
            server.route("/plain-only") { request in
                let encoding = request.value(forHTTPHeaderField: "Content-Encoding") ?? "identity"
                encodings.withLockedValue { $0.append(encoding) }
                return encoding == "identity" ? .text("\(request.body.count)") : TestServer.Response(status: .unsupportedMediaType)
            }
            let manager = SessionManager()
            defer { manager.invalidate(cancelingTasks: true) }
            let compressor = RequestCompressor()
            manager.interceptor = compressor
            let inflated = try await manager.response(
                for: Request(method: .post, url: server.url("/inflate"), body: .data(payload)), serializer: StringResponseSerializer())
            let sizes = inflated.value.split(separator: " ").compactMap { Int($0) }
            #expect(sizes.count == 2 && sizes[0] < payload.count / 10 && sizes[1] == payload.count)
            let plain = try await manager.response(
                for: Request(method: .post, url: server.url("/plain-only"), body: .data(payload)), serializer: StringResponseSerializer())
            #expect(plain.value == "\(payload.count)")
            #expect(encodings.withLockedValue { $0 } == ["gzip", "identity"])
            // The same origin is not sent compressed bodies any more.
            _ = try await manager.data(for: Request(method: .post, url: server.url("/plain-only"), body: .data(payload)))
            #expect(encodings.withLockedValue { $0 } == ["gzip", "identity", "identity"])
            #expect(compressor.refusingOriginList.count == 1)
        }
    }
}
