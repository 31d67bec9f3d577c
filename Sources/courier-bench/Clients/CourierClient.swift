import Courier
import CourierTesting
import CourierURLSession
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A Courier manager for the bench: the base URL is the server's root and requests name the path
/// relative to it, as an app's API client does.
enum CourierSetup {
    /// The defaults, without the response cache and cookie store (`stores` false), and without
    /// task notifications and task metrics (`lean`): the variants the bench compares.
    static func configuration(stores: Bool, lean: Bool) -> SessionConfiguration {
        var configuration = SessionConfiguration.default
        if !stores {
            configuration.responseCache = nil
            configuration.httpCookieStorage = nil
        }
        if lean {
            configuration.postsTaskNotifications = false
            configuration.collectsTaskMetrics = false
        }
        return configuration
    }

    static func manager(
        url: URL, connections: Int, stores: Bool = true, lean: Bool = false, unixSocket: String? = nil,
        engine: CourierClient.EngineKind = .nio
    ) -> (manager: HTTPSessionManager, path: String) {
        var configuration = Self.configuration(stores: stores, lean: lean)
        configuration.httpMaximumConnectionsPerHost = connections
        if let unixSocket, let host = url.host() { configuration.unixSocketPaths = [host: unixSocket] }
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        let path = String(components.percentEncodedPath.drop { $0 == "/" })
            + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        components.percentEncodedPath = "/"
        components.percentEncodedQuery = nil
        if engine == .urlSession {
            let sessionConfiguration = URLSessionConfiguration.ephemeral
            sessionConfiguration.httpMaximumConnectionsPerHost = connections
            return (HTTPSessionManager(baseURL: components.url!, engine: URLSessionEngine(configuration: sessionConfiguration), configuration: configuration), path)
        }
        let policy = url.scheme == "https" ? Self.trustingTestRoot : SecurityPolicy.default
        return (HTTPSessionManager(baseURL: components.url!, configuration: configuration, securityPolicy: policy), path)
    }

    /// The default policy also trusting CourierTesting's root: with `--tls`, nginx presents its
    /// localhost chain.
    static var trustingTestRoot: SecurityPolicy {
        var policy = SecurityPolicy.default
        policy.additionalTrustedCertificates = (try? Certificate.certificates(pemEncoded: TestCertificates.rootCA)) ?? []
        return policy
    }
}

/// Courier's async API: `response(method:urlString:serializer:)` with a ``DataResponseSerializer``
/// (status validated, body returned as `Data`).
final class CourierClient: AsyncBenchClient {
    /// What is set on the manager besides the defaults.
    enum Instrumentation {
        case none
        /// `interceptor = Interceptor()` and one event monitor that does nothing.
        case emptyChainAndMonitor
        /// An adapter that returns the request as it is, and the monitor.
        case adapterAndMonitor
        /// No response cache and no cookie store (the defaults have both).
        case noStores
        /// No task notifications and no task metrics (the defaults have both).
        case lean
    }

    private let manager: HTTPSessionManager
    private let path: String

    /// Which engine the manager runs on.
    enum EngineKind {
        case nio
        /// CourierURLSession's `URLSessionEngine`, allowed `connections` connections to the host.
        case urlSession
    }

    init(url: URL, connections: Int, instrumentation: Instrumentation = .none, unixSocket: String? = nil, engine: EngineKind = .nio) {
        (self.manager, self.path) = CourierSetup.manager(
            url: url, connections: connections, stores: instrumentation != .noStores, lean: instrumentation == .lean,
            unixSocket: unixSocket, engine: engine)
        switch instrumentation {
        case .none, .noStores, .lean:
            break
        case .emptyChainAndMonitor:
            self.manager.interceptor = Interceptor()
            self.manager.eventMonitors = [NoOpMonitor()]
        case .adapterAndMonitor:
            self.manager.interceptor = Adapter { request, _ in request }
            self.manager.eventMonitors = [NoOpMonitor()]
        }
    }

    /// A monitor that receives every event and does nothing with it.
    struct NoOpMonitor: EventMonitor {
        let queue = DispatchQueue(label: "courier-bench.monitor")
    }

    func fetch() async -> Bool {
        do {
            let response = try await self.manager.response(method: .get, urlString: self.path, serializer: DataResponseSerializer())
            return response.response.status.code == 200 && response.data?.isEmpty == false
        } catch {
            FailureReasons.record("\(error.code): \(error.message)")
            return false
        }
    }

    func shutdown() async {
        await self.manager.invalidate(cancelingTasks: true)
    }
}

/// Courier's AFNetworking-style API: `dataTask(method:urlString:success:failure:)`, completion
/// handlers on a concurrent queue. The manager's serializer is a ``DataResponseSerializer`` so
/// that, as in the other rows, no JSON is decoded.
final class CourierCallbackClient: CallbackBenchClient {
    private let manager: HTTPSessionManager
    private let path: String

    init(url: URL, connections: Int) {
        (self.manager, self.path) = CourierSetup.manager(url: url, connections: connections)
        self.manager.responseSerializer = DataResponseSerializer()
        self.manager.completionQueue = DispatchQueue(label: "courier-bench.completion", attributes: .concurrent)
    }

    func fetch(_ completion: @escaping @Sendable (Bool) -> Void) {
        self.manager.dataTask(
            method: .get,
            urlString: self.path,
            success: { task, object in
                completion(task.response?.status.code == 200 && (object as? Data)?.isEmpty == false)
            },
            failure: { _, error in
                FailureReasons.record("\(error.code): \(error.message)")
                completion(false)
            }
        )
    }

    func shutdown() async {
        await self.manager.invalidate(cancelingTasks: true)
    }
}
