import Courier
import CourierTesting
import Foundation
import Testing

@Test func zzDebugConnections() async throws {
    try await withTestServer { server in
        let proxy = try await TestProxy.start(upstreamPort: server.port)
        var configuration = SessionConfiguration.default
        configuration.proxy = .http(host: "127.0.0.1", port: proxy.port)
        try await withManager(baseURL: URL(string: "http://t.invalid/"), configuration: configuration) { manager in
            _ = try await manager.get("get")
            try await Task.sleep(for: .milliseconds(200))
            print("AFTER1", proxy.connectTargets.count)
            for _ in 0..<5 { _ = try await manager.get("get") }
            try await Task.sleep(for: .milliseconds(200))
            print("AFTER6", proxy.connectTargets.count)
        }
        try await proxy.shutdown()
    }
}
