import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// The examples of the DocC article Cookies and the HTTP cache (Courier.docc/CookiesAndCache.md),
/// run against TestServer with its paths.
@Suite("README: cookies and the HTTP cache")
struct ReadmeCookiesAndCacheTests {
    @Test func theExamplesRunAsWritten() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-readme-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withTestServer { server in
            server.route("/login", methods: [.post]) { _ in
                var response = TestServer.Response.json("{}")
                response.headerFields[.setCookie] = "session=s3cr3t; Path=/; HttpOnly"
                return response
            }
            server.route("/account") { request in
                .json("{\"cookie\": \"\(request.value(forHTTPHeaderField: "Cookie") ?? "")\"}")
            }
            server.route("/feed") { _ in
                var response = TestServer.Response.json("[1, 2, 3]")
                response.headerFields[.cacheControl] = "max-age=60"
                return response
            }

            // Cookies.
            var configuration = SessionConfiguration.default
            configuration.httpCookieStorage = try FileCookieStorage(fileURL: folder.appendingPathComponent("cookies.txt"))
            let manager = HTTPSessionManager(baseURL: server.baseURL, configuration: configuration)
            manager.completionQueue = TestQueues.completion
            _ = try await manager.post("login", parameters: ["user": "ann", "password": "secret"])  // stored, and saved
            let account = try await manager.get("account")                                          // sent
            #expect(account.value.json?["cookie"] as? String == "session=s3cr3t")
            await manager.invalidate(cancelingTasks: false)
            (configuration.httpCookieStorage as? FileCookieStorage)?.flush()
            #expect(try String(contentsOf: folder.appendingPathComponent("cookies.txt"), encoding: .utf8).contains("\tsession\ts3cr3t\n"))

            // HTTP cache.
            var cacheConfiguration = SessionConfiguration.default
            cacheConfiguration.responseCache = try ResponseCache(memoryCapacity: 4 << 20, diskCapacity: 64 << 20,
                                                                 directory: folder.appendingPathComponent(".cache/http"))
            let cached = HTTPSessionManager(baseURL: server.baseURL, configuration: cacheConfiguration)
            cached.completionQueue = TestQueues.completion
            let page = try await cached.get("feed")
            #expect(page.source == .network)
            #expect(try await cached.get("feed").source == .cache)
            await cached.invalidate(cancelingTasks: false)
        }
    }
}
