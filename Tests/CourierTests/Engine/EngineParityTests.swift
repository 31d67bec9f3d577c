@testable import Courier
import CourierTesting
@testable import CourierURLSession
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// What sits above the engine seam behaves the same on every engine: one test body for Courier's
/// own ``NIOEngine`` and for ``URLSessionEngine`` (Foundation's URLSession, libcurl on Linux),
/// against a ``TestServer`` over HTTP/1.1: parameters and JSON, a body with its upload progress,
/// redirects followed and refused by the session's ``Redirector``, cookies kept by Courier's store
/// (URLSession's is off), a status the serializer refuses, cancellation of a body under way, a
/// request timeout, a download with its progress, and a port nothing listens on. Then what the
/// URLSession engine refuses rather than ignores.
@Suite("Engines: one behaviour above the seam")
struct EngineParityTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case nio
        case urlSession

        var testDescription: String { self.rawValue }

        func manager(baseURL: URL?, configuration: SessionConfiguration = .default) -> HTTPSessionManager {
            switch self {
            case .nio: HTTPSessionManager(baseURL: baseURL, configuration: configuration)
            case .urlSession: HTTPSessionManager(baseURL: baseURL, engine: URLSessionEngine(), configuration: configuration)
            }
        }
    }

    /// A manager for `kind` on `server`, invalidated after `body`; then neither it nor its engine
    /// is alive.
    private func withManager(
        _ kind: Kind, _ server: TestServer, configuration: SessionConfiguration = .default,
        _ body: (HTTPSessionManager) async throws -> Void
    ) async throws {
        weak var weakManager: HTTPSessionManager?
        weak var weakEngine: AnyObject?
        do {
            let manager = kind.manager(baseURL: server.baseURL, configuration: configuration)
            weakManager = manager
            weakEngine = manager.engine as AnyObject
            manager.completionQueue = TestQueues.completion
            do {
                try await body(manager)
            } catch {
                await manager.invalidate(cancelingTasks: true)
                throw error
            }
            await manager.invalidate(cancelingTasks: true)
        }
        #expect(await eventually { weakManager == nil && weakEngine == nil }, "the manager and its engine are gone")
    }

    @Test(arguments: Kind.allCases)
    func parametersJSONAndABodyWithItsProgress(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let got = try await manager.get("get", parameters: ["q": "a b", "n": "1"])
                let document = try #require(got.value as? [String: Any])
                #expect(document["args"] as? [String: String] == ["q": "a b", "n": "1"])
                #expect(got.response.headerFields[.contentType] == "application/json")
                // Which engine carried it: NIOEngine reports each hop's metrics, URLSessionEngine none.
                #expect(got.metrics?.transactions.isEmpty == (kind == .urlSession))

                // A compressed body comes decompressed.
                let gzipped = try await manager.get("gzip")
                #expect((gzipped.value as? [String: Any])?["gzipped"] as? Bool == true)

                let body = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0) })
                let sent = NIOLockedValueBox<Int64>(0)
                var request = Request(method: .post, url: server.url("/post"), headerFields: [.contentType: "application/octet-stream"])
                request.body = .data(body)
                let posted = try await manager.response(for: request, serializer: JSONResponseSerializer(), uploadProgress: { progress in
                    sent.withLockedValue { $0 = max($0, progress.completedUnitCount) }
                })
                let echoed = try #require(posted.value as? [String: Any])
                #expect((echoed["headers"] as? [String: String])?["Content-Length"] == "100000")
                #expect(sent.withLockedValue { $0 } == 100_000, "upload progress reached the body's length")
            }
        }
    }

    @Test(arguments: Kind.allCases)
    func redirectsAreTheSessionsToFollowOrRefuse(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                let followed = try await manager.get("redirect/2")
                #expect(followed.response.status == .ok)
                #expect(followed.request.url.path == "/get")

                var refused = Request(url: server.url("/redirect/1"))
                refused.redirector = .doNotFollow
                var anyStatus = HTTPResponseSerializer()
                anyStatus.acceptableStatusCodes = IndexSet(200..<400)
                let response = try await manager.response(for: refused, serializer: anyStatus)
                #expect(response.response.status.code == 302)
                #expect(response.response.headerFields[.location] == "/get")
            }
        }
    }

    @Test(arguments: Kind.allCases)
    func cookiesAreCouriersOnEveryEngine(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                // `/cookies/set` sets the cookie and redirects to `/cookies`, which echoes what came.
                // Two cookies are two `Set-Cookie` fields (URLSession joins them into one value).
                let response = try await manager.get("cookies/set", parameters: ["flavour": "oat", "size": "large"])
                #expect((response.value as? [String: Any])?["cookies"] as? [String: String] == ["flavour": "oat", "size": "large"])
                let stored = manager.configuration.httpCookieStorage?.cookies(for: server.url("/")) ?? []
                #expect(Set(stored.map(\.name)) == ["flavour", "size"])
            }
        }
    }

    @Test(arguments: Kind.allCases)
    func failuresKeepTheirCodes(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let refused = await #expect(throws: CourierError.self) { try await manager.get("status/404") }
                #expect(refused?.code == .unacceptableStatusCode)
                #expect(refused?.response?.status.code == 404)

                var slow = Request(url: server.url("/delay/5"))
                slow.options.timeoutInterval = 0.5
                let timedOut = await #expect(throws: CourierError.self) { try await manager.data(for: slow) }
                #expect(timedOut?.code == .timedOut, "\(timedOut.map { "\($0)" } ?? "")")

                let nowhere = Request(url: URL(string: "http://127.0.0.1:\(closedPort())/get")!)
                let failed = await #expect(throws: CourierError.self) { try await manager.data(for: nowhere) }
                #expect(failed?.code == .connectionFailed, "\(failed.map { "\($0)" } ?? "")")
            }
        }
    }

    /// A body of ten bytes that comes over ten seconds, cancelled after its first byte: the task
    /// ends cancelled before the rest of the body came.
    @Test(arguments: Kind.allCases)
    func aCancelledBodyEndsAtOnce(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let task = manager.dataTask(with: Request(url: server.url("/drip?duration=10&numbytes=10")), completionHandler: { _, _, _ in })
                let progress = try #require(manager.downloadProgress(for: task))
                task.resume()
                #expect(await eventually { progress.completedUnitCount > 0 })
                task.cancel()
                #expect(await eventually { task.state == .completed })
                #expect(task.error?.code == .cancelled)
                #expect(progress.completedUnitCount < 10, "the body had not all come")
            }
        }
    }

    @Test(arguments: Kind.allCases)
    func aDownloadAndItsProgress(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let received = NIOLockedValueBox<Int64>(0)
                let download = try await manager.download(Request(url: server.url("/bytes/200000"))) { progress in
                    received.withLockedValue { $0 = max($0, progress.completedUnitCount) }
                }
                #expect(try Data(contentsOf: download.fileURL).count == 200_000)
                #expect(received.withLockedValue { $0 } == 200_000)
                try? FileManager.default.removeItem(at: download.fileURL)
            }
        }
    }

    /// What the session answers for the engine: a Basic challenge with the stored credential (a
    /// 401, then the request again with `Authorization`), and the cache's revalidation (the second
    /// request carries `If-None-Match`, the server's 304 becomes the stored 200). A HEAD has no body.
    @Test(arguments: Kind.allCases)
    func challengesAndRevalidationAreTheSessions(_ kind: Kind) async throws {
        var configuration = SessionConfiguration.default
        configuration.responseCache = ResponseCache(memoryCapacity: 1 << 20)
        try await withTestServer { server in
            try await self.withManager(kind, server, configuration: configuration) { manager in
                let space = try #require(ProtectionSpace(url: server.baseURL, realm: "Fake Realm", authenticationMethod: .httpBasic))
                manager.credentials.set(HTTPCredential(user: "ann", password: "secret"), for: space)
                let authenticated = try await manager.data(for: Request(url: server.url("/basic-auth/ann/secret")))
                #expect(authenticated.response.status == .ok)

                let first = try await manager.data(for: Request(url: server.url("/etag/v1")))
                #expect(first.source == .network)
                let second = try await manager.data(for: Request(url: server.url("/etag/v1")))
                #expect(second.source == .revalidatedCache)
                #expect(second.value == first.value)

                let head = try await manager.head("get")
                #expect(head.status == .ok)
            }
        }
    }

    /// A streamed body of 10 MiB read only once its first 128 KiB have come in: the session
    /// pauses the exchange at its watermark (NIOEngine stops reading the socket; URLSessionEngine
    /// holds what still arrives) and resumes it as the reader catches up. Every byte comes, in
    /// order. (URLSessionEngine suspended its task at first: some runs stalled until the 60 s
    /// timeout, one for good.)
    @Test(arguments: Kind.allCases)
    func aStreamReadLateGetsEveryByteInOrder(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let received = NIOLockedValueBox<Int64>(0)
                let response = try await manager.stream(Request(url: server.url("/bytes/10485760?seed=7")), downloadProgress: { progress in
                    received.withLockedValue { $0 = max($0, progress.completedUnitCount) }
                })
                // Nothing is read until the reader's buffer is over its watermark (128 KiB).
                #expect(await eventually { received.withLockedValue { $0 } >= 128 * 1024 })
                var body = Data()
                for try await chunk in response.body { body.append(contentsOf: chunk.readableBytesView) }
                let whole = try await manager.data(for: Request(url: server.url("/bytes/10485760?seed=7")))
                #expect(body.count == 10_485_760)
                #expect(body == whole.value, "the same bytes, in the same order")
            }
        }
    }

    /// Invalidating the manager while requests wait on a slow server ends each once, cancelled
    /// (a request that waited the server out would end without an error); the manager and its
    /// engine are gone after (`withManager`).
    @Test(arguments: Kind.allCases)
    func invalidatingEndsRunningTasksOnce(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let ends = NIOLockedValueBox<[CourierError.Code?]>([])
                let tasks = (0..<3).map { _ in
                    manager.dataTask(with: Request(url: server.url("/delay/10")), completionHandler: { _, _, error in
                        ends.withLockedValue { $0.append(error?.code) }
                    })
                }
                tasks.forEach { $0.resume() }
                #expect(await eventually { server.requestCount == 3 })
                await manager.invalidate(cancelingTasks: true)
                #expect(await eventually { ends.withLockedValue { $0.count } == 3 })
                #expect(ends.withLockedValue { $0 } == [.cancelled, .cancelled, .cancelled])
            }
        }
    }

    // MARK: The URLSession engine alone

    @Test func joinedSetCookieFieldsComeApart() {
        #expect(URLSessionEngine.setCookieValues(joined: "a=1") == ["a=1"])
        #expect(URLSessionEngine.setCookieValues(joined: "a=1; Path=/, b=2") == ["a=1; Path=/", "b=2"])
        #expect(
            URLSessionEngine.setCookieValues(joined: "id=x; Expires=Wed, 21 Oct 2026 07:28:00 GMT; Secure, theme=dark; Max-Age=60")
                == ["id=x; Expires=Wed, 21 Oct 2026 07:28:00 GMT; Secure", "theme=dark; Max-Age=60"])
        // A comma inside a value with no name and `=` after it stays in the value.
        #expect(URLSessionEngine.setCookieValues(joined: "list=a,b,c=3") == ["list=a,b", "c=3"])
        #expect(URLSessionEngine.setCookieValues(joined: "note=one, two words; Path=/") == ["note=one, two words; Path=/"])
    }


    /// A policy URLSession cannot apply fails every exchange, naming what to use instead; so does
    /// a streamed body. Neither is quietly ignored.
    @Test func theURLSessionEngineRefusesWhatItCannotDo() async throws {
        try await withTestServer { server in
            var pinning = SecurityPolicy.default
            pinning.pinningMode = .publicKey
            let manager = SessionManager(engine: URLSessionEngine(securityPolicy: pinning))
            let pinned = await #expect(throws: CourierError.self) { try await manager.data(for: Request(url: server.url("/get"))) }
            #expect(pinned?.code == .unsupportedOption)
            #expect(pinned?.message.contains("needs NIOEngine") == true, "\(pinned.map { "\($0)" } ?? "")")
            await manager.invalidate(cancelingTasks: true)

            let plain = SessionManager(engine: URLSessionEngine())
            var streamed = Request(method: .post, url: server.url("/post"))
            streamed.body = .stream(AsyncThrowingStream<ByteBuffer, any Error> { $0.yield(ByteBuffer(string: "x")); $0.finish() }, length: .unknown)
            let refused = await #expect(throws: CourierError.self) { try await plain.data(for: streamed) }
            #expect(refused?.code == .unsupportedOption)
            #expect(server.receivedRequests.isEmpty, "nothing reached the server")
            await plain.invalidate(cancelingTasks: true)
        }
    }

    /// Over TLS it checks the certificate against the system's roots: the test server's private
    /// root is not one, and the request fails as untrusted rather than going through.
    @Test func theURLSessionEngineChecksCertificates() async throws {
        var configuration = TestServer.Configuration.https()
        configuration.recordsRequests = true
        try await withTestServer(configuration) { server in
            let manager = SessionManager(engine: URLSessionEngine())
            let untrusted = await #expect(throws: CourierError.self) { try await manager.data(for: Request(url: server.url("/get"))) }
            #expect(untrusted?.code == .serverTrustEvaluationFailed, "\(untrusted.map { "\($0)" } ?? "")")
            #expect(server.receivedRequests.isEmpty)
            await manager.invalidate(cancelingTasks: true)
        }
    }
}
