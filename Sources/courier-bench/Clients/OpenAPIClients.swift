import AsyncHTTPClient
import Courier
import CourierOpenAPI
import Foundation
import NIOCore
import OpenAPIAsyncHTTPClient
import OpenAPIRuntime

/// The same swift-openapi-generator client (`OpenAPI/Generated`, one operation: `GET /small`) on
/// two transports: `CourierTransport` over a Courier manager, and swift-openapi-async-http-client's
/// `AsyncHTTPClientTransport` over an AsyncHTTPClient `HTTPClient`. Each request decodes the JSON.
final class OpenAPIBenchClient: AsyncBenchClient {
    enum Transport {
        case courier
        /// `CourierTransport` over a manager with `postsTaskNotifications` and
        /// `collectsTaskMetrics` off.
        case courierLean
        case ahc
    }

    private let client: Client
    private let shutdownTransport: @Sendable () async -> Void

    init(url: URL, connections: Int, transport: Transport) {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        // The server's root without a trailing slash: AsyncHTTPClientTransport appends the
        // operation's path (`/small`) to the server URL's as it is.
        components.percentEncodedPath = ""
        components.percentEncodedQuery = nil
        let serverURL = components.url!
        switch transport {
        case .courier, .courierLean:
            let (manager, _) = CourierSetup.manager(url: url, connections: connections, lean: transport == .courierLean)
            self.client = Client(serverURL: serverURL, transport: CourierTransport(manager: manager))
            self.shutdownTransport = { await manager.invalidate(cancelingTasks: true) }
        case .ahc:
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
            if url.scheme == "https" { configuration.tlsConfiguration = AHCClient.trustingTestRoot }
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            self.client = Client(
                serverURL: serverURL,
                transport: AsyncHTTPClientTransport(configuration: .init(client: http, timeout: .seconds(30))))
            self.shutdownTransport = { try? await http.shutdown() }
        }
    }

    func fetch() async -> Bool {
        do {
            return try await self.client.getSmall().ok.body.json.msg.isEmpty == false
        } catch {
            FailureReasons.record("\(error)")
            return false
        }
    }

    func shutdown() async {
        await self.shutdownTransport()
    }
}
