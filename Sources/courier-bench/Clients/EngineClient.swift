import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore

/// Courier's engine alone, driven through the ``Engine`` seam as the session drives it, with no
/// session above it: no task, delegate, serializer, cache, cookies, monitors or completion queue.
/// Its row against `courier` is what the layers above the engine cost; against `ahc`, what the
/// engine costs beside AsyncHTTPClient's.
final class EngineClient: AsyncBenchClient {
    private let engine: NIOEngine
    private let request: Request

    init(url: URL, connections: Int, unixSocket: String? = nil) {
        var configuration = NIOEngine.Configuration()
        configuration.maximumConnectionsPerHost = connections
        if let unixSocket, let host = url.host() { configuration.unixSocketPaths = [host: unixSocket] }
        let policy = url.scheme == "https" ? CourierSetup.trustingTestRoot : SecurityPolicy.default
        self.engine = NIOEngine(configuration: configuration, securityPolicy: policy)
        self.request = Request(url: url)
    }

    func fetch() async -> Bool {
        await withCheckedContinuation { continuation in
            _ = self.engine.execute(self.request, delegate: Collector(continuation))
        }
    }

    func shutdown() async {
        try? await self.engine.shutdown()
    }

    /// Counts the body and tells, once, whether the status was 200 with a body.
    private final class Collector: ExchangeDelegate {
        private struct State {
            var status = 0
            var bytes = 0
            var continuation: CheckedContinuation<Bool, Never>?
        }

        private let state: NIOLockedValueBox<State>

        init(_ continuation: CheckedContinuation<Bool, Never>) {
            self.state = NIOLockedValueBox(State(continuation: continuation))
        }

        func exchange(didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {}

        func exchange(willPerformRedirection response: HTTPResponse, newRequest: Request) -> Request? { newRequest }

        func exchange(didReceive response: HTTPResponse, url: URL) -> ResponseDisposition {
            self.state.withLockedValue { $0.status = response.status.code }
            return .allow
        }

        func exchange(didReceive chunk: ByteBuffer) {
            self.state.withLockedValue { $0.bytes += chunk.readableBytes }
        }

        func exchange(didCompleteWith error: CourierError?) {
            let (continuation, succeeded) = self.state.withLockedValue { state in
                defer { state.continuation = nil }
                return (state.continuation, error == nil && state.status == 200 && state.bytes > 0)
            }
            if let error { FailureReasons.record("\(error.code): \(error.message)") }
            continuation?.resume(returning: succeeded)
        }
    }
}
