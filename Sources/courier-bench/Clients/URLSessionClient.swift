import Foundation
import FoundationNetworking

/// FoundationNetworking's URLSession (libcurl underneath on Linux) with the async `data(for:)`.
final class URLSessionClient: AsyncBenchClient {
    private let session: URLSession
    private let request: URLRequest

    init(url: URL, connections: Int) {
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = connections
        // Nothing is cached on Linux anyway; say so, so that no cache lookup is measured.
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        self.session = URLSession(configuration: configuration)
        self.request = URLRequest(url: url)
    }

    func fetch() async -> Bool {
        do {
            let (data, response) = try await self.session.data(for: self.request)
            return (response as? HTTPURLResponse)?.statusCode == 200 && !data.isEmpty
        } catch {
            FailureReasons.record("\(error)")
            return false
        }
    }

    func shutdown() async {
        self.session.finishTasksAndInvalidate()
    }
}
