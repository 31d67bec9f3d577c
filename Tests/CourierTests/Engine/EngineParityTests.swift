@testable import Courier
import CourierTesting
@testable import CourierURLSession
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// What sits above the engine seam behaves the same on every engine: one test body for Courier's
/// own ``NIOEngine`` and for ``URLSessionEngine`` (Foundation's URLSession, libcurl on Linux),
/// against a ``TestServer`` over HTTP/1.1: parameters and JSON, a body with its upload progress,
/// redirects followed and refused by the session's ``Redirector``, cookies kept by Courier's store
/// (URLSession's is off), a status the serializer refuses, cancellation of a body under way, a
/// request timeout, a download with its progress, a port nothing listens on, multipart forms and
/// streamed bodies (which URLSessionEngine reads whole first). Then what the URLSession engine
/// alone does: where it writes long streamed bodies, and what it refuses rather than ignores.
@Suite("Engines: one behaviour above the seam")
struct EngineParityTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case nio
        case urlSession

        var testDescription: String { self.rawValue }

        func manager(baseURL: URL?, configuration: SessionConfiguration = .default, streamedBodies: URL? = nil) -> HTTPSessionManager {
            switch self {
            case .nio: HTTPSessionManager(baseURL: baseURL, configuration: configuration)
            case .urlSession:
                HTTPSessionManager(
                    baseURL: baseURL,
                    engine: URLSessionEngine(streamedBodyDirectory: streamedBodies ?? FileManager.default.temporaryDirectory),
                    configuration: configuration)
            }
        }
    }

    /// A manager for `kind` on `server`, invalidated after `body`; then neither it nor its engine
    /// is alive.
    private func withManager(
        _ kind: Kind, _ server: TestServer, configuration: SessionConfiguration = .default, streamedBodies: URL? = nil,
        _ body: (HTTPSessionManager) async throws -> Void
    ) async throws {
        try await withManagerThatEnds({ kind.manager(baseURL: server.baseURL, configuration: configuration, streamedBodies: streamedBodies) }, body)
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

    /// A redirect status without a `Location` is the answer (RFC 9110 15.4: nothing to follow), on
    /// every engine: the serializer refuses its status and keeps its body (on URLSession's engine,
    /// without it: FoundationNetworking drops a 301–308's body). URLSession's engine ended such a
    /// task with "URLSession ended the task without a response".
    @Test(arguments: Kind.allCases)
    func aRedirectWithoutALocationIsTheAnswer(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                for code in [300, 301, 302, 303, 307, 308] {
                    server.route("/nowhere/\(code)") { _ in
                        TestServer.Response(status: .init(code: code), headerFields: [.contentType: "text/plain"], body: Data("stay".utf8))
                    }
                    let refused = await #expect(throws: CourierError.self) { try await manager.get("nowhere/\(code)") }
                    #expect(refused?.code == .unacceptableStatusCode, "\(code): \(refused.map { "\($0)" } ?? "")")
                    #expect(refused?.response?.status.code == code)
                    if kind == .nio || code == 300 { #expect(refused?.data == Data("stay".utf8), "\(code)") }
                }
            }
        }
    }

    /// An interim head is not the response, on every engine: after a `103 Early Hints` (and a
    /// `102 Processing` before it) the task gets the final `200` and its body, without the hints'
    /// fields; a request that sets `Expect: 100-continue` itself gets the answer that follows the
    /// server's `100 Continue`. URLSessionEngine took the first head FoundationNetworking handed
    /// over (it hands over every header block) as the response, and the 200's body came under it.
    @Test(arguments: Kind.allCases)
    func interimHeadsAreNotTheResponse(_ kind: Kind) async throws {
        let hints = "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        try await ScriptedHTTPServer.with({ _, _, head in
            .respond(head.hasPrefix("GET /processing ") ? "HTTP/1.1 102 Processing\r\n\r\n" + hints : hints)
        }) { server in
            try await withManagerThatEnds({ kind.manager(baseURL: server.baseURL) }) { manager in
                for path in ["hints", "processing"] {
                    let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL.appendingPathComponent(path)))
                    #expect(response.response.status.code == 200, "\(path)")
                    #expect(response.value == Data("ok".utf8), "\(path)")
                    #expect(response.response.headerFields[HTTPField.Name("Link")!] == nil, "\(path)")
                }
            }
        }
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                // TestServer answers the expectation with `100 Continue`, then the request.
                var expecting = Request(method: .post, url: server.url("/anything"), headerFields: [.contentType: "text/plain", .expect: "100-continue"])
                expecting.body = .data(Data("abc".utf8))
                let echoed = try await manager.response(for: expecting, serializer: JSONResponseSerializer())
                #expect(echoed.response.status == .ok)
                #expect((echoed.value as? [String: Any])?["data"] as? String == "abc")
            }
        }
    }

    /// A redirect the session declines because its cache holds the target (fresh) ends the task
    /// with the stored response, its body alone, on every engine. On URLSessionEngine the 302's
    /// page came first: FoundationNetworking hands a declined redirect's body over after its head,
    /// and the engine went on delivering what its task received after the head was refused.
    @Test(arguments: Kind.allCases)
    func aRedirectDeclinedForTheCachesAnswerBringsThatAnswerAlone(_ kind: Kind) async throws {
        try await withTestServer { server in
            server.route("/fresh") { _ in
                TestServer.Response(headerFields: [.cacheControl: "max-age=600", .contentType: "text/plain"], body: Data("fresh".utf8))
            }
            server.route("/hop") { _ in
                TestServer.Response(
                    status: .found, headerFields: [.location: "/fresh", .contentType: "text/html"],
                    body: Data("<html><body><a href=\"/fresh\">Found</a></body></html>".utf8))
            }
            try await self.withManager(kind, server) { manager in
                let stored = try await manager.data(for: Request(url: server.url("/fresh")))
                #expect(String(decoding: stored.value, as: UTF8.self) == "fresh")
                let redirected = try await manager.data(for: Request(url: server.url("/hop")))
                #expect(redirected.response.status == .ok)
                #expect(String(decoding: redirected.value, as: UTF8.self) == "fresh")
            }
        }
    }

    /// A connection the server ends after the request was sent is `connectionClosed` on every
    /// engine, never `connectionFailed` (which says no request went out, and which a retry policy
    /// may take as safe to send again). URLSession's engine called libcurl's lost connection
    /// `connectionFailed`.
    @Test(arguments: Kind.allCases)
    func aConnectionLostAfterTheRequestWentOutIsClosedNotFailed(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                for path in ["courier/close-after-head", "courier/truncated/1000", "courier/reset"] {
                    let lost = await #expect(throws: CourierError.self) { try await manager.get(path) }
                    #expect(lost?.code == .connectionClosed, "\(path): \(lost.map { "\($0)" } ?? "")")
                }
            }
        }
    }

    /// A timeout of NaN or infinity, or one under a second, works on every engine. (URLSession's
    /// engine passed it on as it was: FoundationNetworking's `Int(timeoutInterval) * 1000` stopped
    /// the process on NaN and infinity, and made 0.9 s a timeout of 1 ms.)
    @Test(arguments: Kind.allCases)
    func anyTimeoutIsTakenAsTheNIOEngineTakesIt(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                for timeout in [TimeInterval.nan, .infinity, 0.9, 1e300] {
                    var request = Request(url: server.url("/get"))
                    request.options.timeoutInterval = timeout
                    let response = try await manager.data(for: request)
                    #expect(response.response.status == .ok, "\(timeout)")
                }
            }
        }
        #expect(URLSessionEngine.foundationTimeout(.nan) == 60)
        #expect(URLSessionEngine.foundationTimeout(-1) == 1)
        #expect(URLSessionEngine.foundationTimeout(0.2) == 1)
        #expect(URLSessionEngine.foundationTimeout(.infinity) == 1e9)
    }

    /// A body of sixty bytes that comes over sixty seconds, cancelled after its first byte: the
    /// task ends cancelled before the rest of the body came. (Ten bytes over ten seconds, before:
    /// a full run crowded onto one core took longer than that to cancel.)
    @Test(arguments: Kind.allCases)
    func aCancelledBodyEndsAtOnce(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let task = manager.dataTask(with: Request(url: server.url("/drip?duration=60&numbytes=60")), completionHandler: { _, _, _ in })
                let progress = try #require(manager.downloadProgress(for: task))
                task.resume()
                #expect(await eventually { progress.completedUnitCount > 0 })
                task.cancel()
                #expect(await eventually { task.state == .completed })
                #expect(task.error?.code == .cancelled)
                #expect(progress.completedUnitCount < 60, "the body had not all come")
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

    /// A challenge nobody answers (no credential) is the task's response, heard once: the head of a
    /// `401` reaches the session once, and the task ends with it. URLSession's engine delivered it
    /// twice (from the challenge, then from FoundationNetworking's response): a download opened its
    /// file a second time.
    @Test(arguments: Kind.allCases)
    func anUnansweredChallengeIsOneResponse(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let heads = NIOLockedValueBox(0)
                manager.hooks.dataTaskDidReceiveResponse = { _, _, _ in
                    heads.withLockedValue { $0 += 1 }
                    return .allow
                }
                let refused = await #expect(throws: CourierError.self) { try await manager.get("basic-auth/ann/secret") }
                #expect(refused?.response?.status.code == 401)
                #expect(heads.withLockedValue { $0 } == 1)
                #expect(server.requestCount == 1)
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

    /// Invalidating the manager while the server holds its requests ends each once, cancelled;
    /// the manager and its engine are gone after (`withManager`). The server answers only once
    /// the test let it, after the tasks ended: with `/delay/10` instead, one loaded full run saw
    /// all three answers arrive before the invalidation (both engines at once, 21 s for the test).
    @Test(arguments: Kind.allCases)
    func invalidatingEndsRunningTasksOnce(_ kind: Kind) async throws {
        try await withTestServer { server in
            let gate = ReleaseGate(server)
            defer { gate.releaseAll() }
            try await self.withManager(kind, server) { manager in
                let ends = NIOLockedValueBox<[CourierError.Code?]>([])
                let tasks = (0..<3).map { _ in
                    manager.dataTask(with: Request(url: gate.url), completionHandler: { _, _, error in
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

    /// A multipart form (a field and a file part), a one-shot stream of unknown length, and a
    /// replayable stream sent again through a 307: each reaches the server whole, the upload
    /// progress counting every byte. (URLSessionEngine refused every streamed body at first,
    /// multipart forms included.)
    @Test(arguments: Kind.allCases)
    func multipartFormsAndStreamedBodiesGoOut(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let form = try await manager.post("post", parameters: ["album": "cats"]) { form in
                    form.appendPart(withFileData: Data("meow".utf8), name: "photo", fileName: "cat.txt", mimeType: "text/plain")
                }
                let echoedForm = try #require(form.value as? [String: Any])
                #expect(echoedForm["form"] as? [String: String] == ["album": "cats"])
                #expect(echoedForm["files"] as? [String: String] == ["photo": "meow"])

                let chunk = String(repeating: "0123456789abcdef", count: 1024)
                var streamed = Request(method: .post, url: server.url("/anything"), headerFields: [.contentType: "text/plain"])
                streamed.body = .stream(Self.chunks(Array(repeating: chunk, count: 20)), length: .unknown)
                let sent = NIOLockedValueBox<Int64>(0)
                let echoed = try await manager.response(for: streamed, serializer: JSONResponseSerializer(), uploadProgress: { progress in
                    sent.withLockedValue { $0 = max($0, progress.completedUnitCount) }
                })
                #expect((echoed.value as? [String: Any])?["data"] as? String == String(repeating: chunk, count: 20))
                #expect(sent.withLockedValue { $0 } == Int64(20 * chunk.utf8.count))

                var replayed = Request(method: .post, url: server.url("/redirect-to?url=/anything&status_code=307"), headerFields: [.contentType: "text/plain"])
                replayed.body = .replayableStream(length: .known(12)) { Self.chunks(["hello ", "replay"]) }
                let again = try await manager.response(for: replayed, serializer: JSONResponseSerializer())
                let document = try #require(again.value as? [String: Any])
                #expect(again.request.url.path == "/anything")
                #expect(document["data"] as? String == "hello replay")
                #expect(document["method"] as? String == "POST")
            }
        }
    }

    /// A 308 the session declines is asked about once, on every engine: the redirect hook runs
    /// once and the 308 is the response. (FoundationNetworking proposes a 308 as any redirect,
    /// then hands the declined one over as the response; URLSessionEngine took that head for a 308
    /// to follow itself and asked the session again: the hook, the redirector, the monitors and
    /// the redirect's cookies twice.)
    @Test(arguments: Kind.allCases)
    func aDeclined308IsAskedAboutOnce(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let asked = NIOLockedValueBox(0)
                manager.hooks.taskWillPerformHTTPRedirection = { _, _, _, _ in
                    asked.withLockedValue { $0 += 1 }
                    return nil
                }
                var anyStatus = HTTPResponseSerializer()
                anyStatus.acceptableStatusCodes = IndexSet(200..<400)
                let response = try await manager.response(
                    for: Request(url: server.url("/redirect-to?url=/get&status_code=308")), serializer: anyStatus)
                #expect(response.response.status.code == 308)
                #expect(asked.withLockedValue { $0 } == 1)
                #expect(server.requestCount == 1, "the redirect was not followed")
            }
        }
    }

    /// A 307 or 308 keeps the method and the body: data, a file and a replayable stream each reach
    /// the redirect's target whole, and a GET through a 308 is followed. (On URLSessionEngine,
    /// FoundationNetworking sent a 307's or a 308's POST with no body at all: the engine now
    /// follows those itself.)
    @Test(arguments: Kind.allCases)
    func redirectsThatKeepTheBodySendItAgain(_ kind: Kind) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-parity-\(UUID().uuidString).txt")
        try Data("from a file".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let bodies: [(String, RequestBody)] = [
                    ("from data", .data(Data("from data".utf8))),
                    ("from a file", .file(file)),
                    ("from a stream", .replayableStream(length: .known(13)) { Self.chunks(["from a ", "stream"]) }),
                ]
                for status in [307, 308] {
                    for (text, body) in bodies {
                        var request = Request(
                            method: .post, url: server.url("/redirect-to?url=/anything&status_code=\(status)"), headerFields: [.contentType: "text/plain"])
                        request.body = body
                        let response = try await manager.response(for: request, serializer: JSONResponseSerializer())
                        let document = try #require(response.value as? [String: Any])
                        #expect(response.request.url.path == "/anything", "\(status) \(text)")
                        #expect(document["data"] as? String == text, "\(status) \(text)")
                        #expect(document["method"] as? String == "POST", "\(status) \(text)")
                    }
                }
                let got = try await manager.get("redirect-to", parameters: ["url": "/get", "status_code": "308"])
                #expect(got.request.url.path == "/get")
                #expect((got.value as? [String: Any])?["url"] as? String == server.url("/get").absoluteString)
            }
        }
    }

    /// The session's retry policy sends a refused request again (a 503, twice more) and then
    /// gives the last refusal; a download resumes from its resume data with a range request
    /// (the kept bytes, then the rest); a server-sent event stream that the server ends after two
    /// events reconnects with `Last-Event-ID` until all five came, in order.
    @Test(arguments: Kind.allCases)
    func retriesResumedDownloadsAndEventStreamsAreTheSessions(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                var policy = RetryPolicy(retryLimit: 2)
                policy.initialBackoff = .milliseconds(1)
                manager.interceptor = policy
                let refused = await #expect(throws: CourierError.self) { try await manager.get("status/503") }
                #expect(refused?.response?.status.code == 503)
                #expect(server.requestCount == 3, "the first request and two retries")
                manager.interceptor = nil

                let whole = try await manager.data(for: Request(url: server.url("/range/2000"))).value
                let partial = DownloadDestination.temporaryFileURL(in: nil)
                defer { try? FileManager.default.removeItem(at: partial) }
                try whole.prefix(700).write(to: partial)
                let resume = ResumeData(
                    request: Request(url: server.url("/range/2000")), temporaryFileURL: partial, bytesReceived: 700, expectedLength: 2000,
                    entityTag: "\"range2000\"", lastModified: nil)
                let download = try await manager.download(resumingFrom: resume)
                #expect(download.response.status == .partialContent)
                #expect(try Data(contentsOf: download.fileURL) == whole)
                try? FileManager.default.removeItem(at: download.fileURL)

                var options = ServerSentEventStream.Options()
                options.retryDelay = .milliseconds(10)
                var ids: [String] = []
                for try await event in manager.eventStream(Request(url: server.url("/courier/sse?count=5&close-after=2")), options: options) {
                    if let id = event.id { ids.append(id) }
                }
                #expect(ids == ["1", "2", "3", "4", "5"])
            }
        }
    }

    /// A request's redirect policy holds on either engine: past its maximum, or back to a URL it
    /// already requested when cycles are not allowed, the task fails with `tooManyRedirects`
    /// (302s that URLSession follows and 308s that URLSessionEngine follows itself); with
    /// `.disallow` the redirect is the response. (URLSessionEngine gave the last 3xx as the response
    /// past the maximum, and did not read `allowCycles`.)
    @Test(arguments: Kind.allCases)
    func redirectPoliciesHoldOnEveryEngine(_ kind: Kind) async throws {
        try await withTestServer { server in
            for status in [HTTPResponse.Status.found, .permanentRedirect] {
                server.route("/loop-\(status.code)") { _ in
                    TestServer.Response(status: status, headerFields: [.location: "/loop-\(status.code)"], body: Data())
                }
            }
            try await self.withManager(kind, server) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                for code in [302, 308] {
                    var limited = Request(url: server.url("/redirect/3"))
                    limited.options.redirectPolicy = .follow(max: 2, allowCycles: true)
                    if code == 308 { limited.url = server.url("/loop-308") }
                    let tooMany = await #expect(throws: CourierError.self, "\(code)") { try await manager.data(for: limited) }
                    #expect(tooMany?.code == .tooManyRedirects, "\(code): \(tooMany.map { "\($0)" } ?? "")")

                    var cycle = Request(url: server.url("/loop-\(code)"))
                    cycle.options.redirectPolicy = .follow(max: 10, allowCycles: false)
                    let looped = await #expect(throws: CourierError.self, "\(code)") { try await manager.data(for: cycle) }
                    #expect(looped?.code == .tooManyRedirects, "\(code): \(looped.map { "\($0)" } ?? "")")
                    #expect(looped?.message.contains("cycle") == true, "\(code): \(looped.map { "\($0)" } ?? "")")

                    var disallowed = Request(url: server.url("/loop-\(code)"))
                    disallowed.options.redirectPolicy = .disallow
                    var anyStatus = HTTPResponseSerializer()
                    anyStatus.acceptableStatusCodes = IndexSet(200..<400)
                    let response = try await manager.response(for: disallowed, serializer: anyStatus)
                    #expect(response.response.status.code == code)
                }
            }
        }
    }

    /// The session's redirect policy holds on every engine for a request that sets none: with
    /// `.disallow` the redirect is the response; a request's own policy still wins. (URLSessionEngine
    /// read the request's option alone and followed by NIOEngine's default.)
    @Test(arguments: Kind.allCases)
    func theSessionsRedirectPolicyHoldsOnEveryEngine(_ kind: Kind) async throws {
        var configuration = SessionConfiguration.default
        configuration.redirectPolicy = .disallow
        try await withTestServer { server in
            try await self.withManager(kind, server, configuration: configuration) { manager in
                var anyStatus = HTTPResponseSerializer()
                anyStatus.acceptableStatusCodes = IndexSet(200..<400)
                let refused = try await manager.response(for: Request(url: server.url("/redirect/1")), serializer: anyStatus)
                #expect(refused.response.status.code == 302)

                var following = Request(url: server.url("/redirect/1"))
                following.options.redirectPolicy = .follow(max: 2, allowCycles: true)
                let followed = try await manager.response(for: following, serializer: anyStatus)
                #expect(followed.response.status == .ok)
                #expect(followed.request.url.path == "/get")
            }
        }
    }

    /// An empty body is no body, on every engine: a GET with `.data(Data())` (or a stream of known
    /// length 0) is a GET, and a POST with one is a POST with an empty body. (URLSessionEngine made an
    /// upload task of it, and FoundationNetworking fails a GET with any body: `connectionFailed`.)
    @Test(arguments: Kind.allCases)
    func anEmptyBodyIsNoBody(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let bodies: [(String, RequestBody)] = [
                    ("data", .data(Data())),
                    ("stream", .stream(Self.chunks([]), length: .known(0))),
                ]
                for (name, body) in bodies {
                    var get = Request(url: server.url("/get"))
                    get.body = body
                    let got = try await manager.data(for: get)
                    #expect(got.response.status == .ok, "\(name)")
                }
                var post = Request(method: .post, url: server.url("/anything"))
                post.body = .data(Data())
                let posted = try await manager.response(for: post, serializer: JSONResponseSerializer())
                let document = try #require(posted.value as? [String: Any])
                #expect(document["method"] as? String == "POST")
                #expect(document["data"] as? String == "")
            }
        }
    }

    /// A body whose stream throws, or that gives fewer or more bytes than it declared, fails the
    /// task with `bodyReadFailed` on either engine.
    @Test(arguments: Kind.allCases)
    func aBodyThatFailsOrMisstatesItsLengthFailsTheTask(_ kind: Kind) async throws {
        struct Broken: Error {}
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                let bodies: [(String, RequestBody)] = [
                    ("throws", .stream(AsyncThrowingStream<ByteBuffer, any Error> { $0.yield(ByteBuffer(string: "abc")); $0.finish(throwing: Broken()) }, length: .unknown)),
                    ("short", .stream(Self.chunks(["abcd"]), length: .known(10))),
                    // One chunk past the length: NIOEngine finds it before sending anything. (Split as
                    // "abcd" and "efghij", the server had a whole request after the first and its
                    // answer could come before the second chunk was read: an answer before the body
                    // was read is delivered, by design.)
                    ("long", .stream(Self.chunks(["abcdefghij"]), length: .known(4))),
                ]
                for (name, body) in bodies {
                    var request = Request(method: .post, url: server.url("/post"))
                    request.body = body
                    let failed = await #expect(throws: CourierError.self, "\(name)") { try await manager.data(for: request) }
                    #expect(failed?.code == .bodyReadFailed, "\(name): \(failed.map { "\($0)" } ?? "")")
                }
            }
        }
    }

    /// A body whose stream waits for ever after its first chunk, deaf to cancellation: cancelling
    /// the task ends it at once, cancelled, without waiting for the stream.
    @Test(arguments: Kind.allCases)
    func cancellingWhileTheBodyIsReadEndsTheTaskAtOnce(_ kind: Kind) async throws {
        let gate = Gate()
        try await withTestServer { server in
            try await self.withManager(kind, server) { manager in
                var request = Request(method: .post, url: server.url("/post"))
                request.body = .stream(StubbornChunks(first: ByteBuffer(string: "first"), gate: gate), length: .unknown)
                let task = manager.dataTask(with: request, completionHandler: { _, _, _ in })
                task.resume()
                #expect(await eventually { gate.isWaitedOn }, "the engine took the first chunk and waits for the next")
                task.cancel()
                #expect(await eventually { task.state == .completed })
                #expect(task.error?.code == .cancelled)
                gate.open()
            }
        }
    }

    // MARK: The URLSession engine alone

    /// A streamed body spooled to a file while URLSession sends it is readable by this user alone
    /// (0600), as Courier's download files are: it is the caller's request (a form, credentials),
    /// and NIO's default mode (0644) let every user of the machine read it.
    @Test func aSpooledBodysFileIsTheUsersAlone() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withTestServer { server in
            let answer = Gate()
            server.route("/held") { _ in
                await answer.wait()
                return TestServer.Response(body: Data("ok".utf8))
            }
            let manager = SessionManager(engine: URLSessionEngine(streamedBodyMemoryLimit: 1024, streamedBodyDirectory: folder))
            let chunk = String(repeating: "0123456789abcdef", count: 64)
            var long = Request(method: .post, url: server.url("/held"))
            long.body = .stream(Self.chunks([chunk, chunk]), length: .unknown)
            let task = manager.dataTask(with: long, completionHandler: { _, _, _ in })
            task.resume()
            // The body reached the server (which holds its answer), so its file is in the folder.
            #expect(await eventually { answer.isWaitedOn })
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(names.count == 1, "\(names)")
            for name in names {
                let attributes = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)
                #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "\(attributes)")
            }
            answer.open()
            #expect(await eventually { task.state == .completed })
            #expect(task.error == nil, "\(String(describing: task.error))")
            await manager.invalidate(cancelingTasks: true)
        }
    }

    /// Past its memory limit, a streamed body is written to a file in the engine's folder before
    /// it goes out, and the file is gone once the exchange ended: sent, failed or cancelled while
    /// the body was read. Within the limit no file is written (a folder that does not exist is
    /// never touched).
    @Test func longStreamedBodiesGoThroughAFileThatIsRemoved() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-spool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func leftovers() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? ["unreadable"] }
        try await withTestServer { server in
            let manager = SessionManager(engine: URLSessionEngine(streamedBodyMemoryLimit: 1024, streamedBodyDirectory: folder))
            let chunk = String(repeating: "0123456789abcdef", count: 64)
            var long = Request(method: .post, url: server.url("/anything"), headerFields: [.contentType: "text/plain"])
            long.body = .stream(Self.chunks(Array(repeating: chunk, count: 40)), length: .unknown)
            let echoed = try await manager.data(for: long)
            let document = try JSONSerialization.jsonObject(with: echoed.value) as? [String: Any]
            #expect(document?["data"] as? String == String(repeating: chunk, count: 40))
            #expect(leftovers().isEmpty, "the body's file was removed: \(leftovers())")

            var broken = Request(method: .post, url: server.url("/post"))
            broken.body = .stream(Self.chunks([chunk, chunk]), length: .known(10_000))
            let failed = await #expect(throws: CourierError.self) { try await manager.data(for: broken) }
            #expect(failed?.code == .bodyReadFailed)
            #expect(leftovers().isEmpty, "a failed body's file was removed: \(leftovers())")

            let gate = Gate()
            var stuck = Request(method: .post, url: server.url("/post"))
            stuck.body = .stream(StubbornChunks(first: ByteBuffer(string: chunk + chunk), gate: gate), length: .unknown)
            let task = manager.dataTask(with: stuck, completionHandler: { _, _, _ in })
            task.resume()
            // Past the limit: the body is being written to its file (NIOFileSystem names it once it
            // is closed), and the stream waits for ever.
            #expect(await eventually { gate.isWaitedOn })
            task.cancel()
            #expect(await eventually { task.state == .completed })
            #expect(task.error?.code == .cancelled)
            gate.open()
            #expect(await eventually { leftovers().isEmpty }, "a cancelled body's file was removed: \(leftovers())")
            await manager.invalidate(cancelingTasks: true)

            let nowhere = folder.appendingPathComponent("missing/folder")
            let unwritable = SessionManager(engine: URLSessionEngine(streamedBodyMemoryLimit: 1024, streamedBodyDirectory: nowhere))
            var short = Request(method: .post, url: server.url("/post"))
            short.body = .stream(Self.chunks(["within the limit"]), length: .unknown)
            _ = try await unwritable.data(for: short)
            var longer = Request(method: .post, url: server.url("/post"))
            longer.body = .stream(Self.chunks([chunk, chunk]), length: .unknown)
            let refused = await #expect(throws: CourierError.self) { try await unwritable.data(for: longer) }
            #expect(refused?.code == .fileSystemFailure, "\(refused.map { "\($0)" } ?? "")")
            await unwritable.invalidate(cancelingTasks: true)
        }
    }

    /// Invalidating the manager while a task's streamed body is still being read (its stream deaf
    /// to cancellation) ends the task cancelled and returns; the engine does not wait for the stream.
    @Test func invalidatingWhileABodyIsReadDoesNotWaitForIt() async throws {
        let gate = Gate()
        try await withTestServer { server in
            try await self.withManager(.urlSession, server) { manager in
                var request = Request(method: .post, url: server.url("/post"))
                request.body = .stream(StubbornChunks(first: ByteBuffer(string: "first"), gate: gate), length: .unknown)
                let task = manager.dataTask(with: request, completionHandler: { _, _, _ in })
                task.resume()
                #expect(await eventually { gate.isWaitedOn })
                await manager.invalidate(cancelingTasks: true)
                #expect(task.state == .completed)
                #expect(task.error?.code == .cancelled)
                #expect(server.requestCount == 0, "nothing was sent")
            }
        }
        gate.open()
    }

    /// A redirect hook that cancels its task ends it cancelled, the redirect not followed.
    /// (URLSessionEngine answered URLSession's question about the redirect after the cancel had
    /// reached URLSession's task, which FoundationNetworking had ended without the answer: it
    /// stopped the process, "Received callback for HTTP redirection, but we're not waiting for it".)
    @Test func aRedirectHookThatCancelsItsTaskEndsItCancelled() async throws {
        try await withTestServer { server in
            try await self.withManager(.urlSession, server) { manager in
                manager.hooks.taskWillPerformHTTPRedirection = { _, task, _, proposed in
                    task.cancel()
                    return proposed
                }
                let cancelled = await #expect(throws: CourierError.self) { try await manager.data(for: Request(url: server.url("/redirect-to?url=/get"))) }
                #expect(cancelled?.code == .cancelled, "\(cancelled.map { "\($0)" } ?? "")")
                #expect(server.requestCount == 1, "the redirect was not followed")
            }
        }
    }

    /// A redirect the session decides after the request's timeout ends the task timed out.
    /// (FoundationNetworking stops waiting for the answer when the timeout fires, without ending
    /// its task: URLSessionEngine's answer after that stopped the process, and a task whose
    /// answer never came would never have ended.)
    @Test func aRedirectDecidedAfterTheTimeoutTimesOut() async throws {
        try await withTestServer { server in
            try await self.withManager(.urlSession, server) { manager in
                manager.hooks.taskWillPerformHTTPRedirection = { _, _, _, proposed in
                    // Waits out the request's timeout (1 s), which must fire meanwhile: a deadline
                    // FoundationNetworking keeps on its own clock and tells nobody of, so there is
                    // no event to wait for. Ten times the timeout, for a loaded machine.
                    Thread.sleep(forTimeInterval: 10)
                    return proposed
                }
                var request = Request(url: server.url("/redirect-to?url=/get"))
                request.options.timeoutInterval = 1
                let timedOut = await #expect(throws: CourierError.self) { try await manager.data(for: request) }
                #expect(timedOut?.code == .timedOut, "\(timedOut.map { "\($0)" } ?? "")")
                #expect(server.requestCount == 1, "the redirect was not followed")
            }
        }
    }

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

    /// A `Set-Cookie` with a control character reaches the cookie parser with it, which ignores
    /// the cookie (RFC 6265bis 5.6), as on NIOEngine. The URLSession engine made a space of it
    /// (`HTTPField(name:value:)`): `a\u{1}b=c` was stored as `a b=c`, and `Sec\u{1}ure` lost its
    /// cookie's Secure, which then went over `http`.
    @Test func aSetCookieWithAControlCharacterKeepsItOnTheURLSessionEngine() throws {
        let url = URL(string: "https://example.com/")!
        let answer = try #require(
            HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Set-Cookie": "a\u{1}b=c, sid=x; Sec\u{1}ure, ok=1"]))
        let response = try #require(URLSessionEngine.response(from: answer))
        let fields = response.headerFields[values: .setCookie]
        #expect(fields == ["a\u{1}b=c", "sid=x; Sec\u{1}ure", "ok=1"])
        let store = MemoryCookieStorage(publicSuffixes: PublicSuffixList(rules: "com\n"))
        store.storeCookies(from: response, for: url)
        #expect(store.allCookies.map(\.name).sorted() == ["ok"], "both cookies with a control character are ignored")
        #expect(store.cookieHeader(for: URL(string: "http://example.com/")!) == "ok=1")
    }


    /// A policy URLSession cannot apply fails every exchange, naming what to use instead; so do
    /// trailer fields. Neither is quietly ignored.
    /// A header value holding a control character other than tab (which
    /// `HTTPField(name:lenientValue:)` keeps) is refused by either engine before anything is sent,
    /// with the same error (``Request/checkFieldValues()``).
    @Test(arguments: Kind.allCases)
    func aControlCharacterInAFieldValueIsRefusedBeforeAnythingIsSent(_ kind: Kind) async throws {
        try await withTestServer { server in
            try await withManager(kind, server) { manager in
                var request = Request(url: server.url("/get"))
                request.headerFields.append(HTTPField(name: HTTPField.Name("Weird-Value")!, lenientValue: Array("a".utf8) + [0x01]))
                let error = await #expect(throws: CourierError.self) { try await manager.data(for: request) }
                #expect(error?.code == .invalidRequest)
                #expect(error?.message.contains("header field Weird-Value holds the control character 0x01") == true, "\(String(describing: error))")
                #expect(server.requestCount == 0, "nothing reached the server")
            }
        }
    }

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
            var trailed = Request(method: .post, url: server.url("/post"))
            trailed.body = .data(Data("x".utf8), trailers: [HTTPField.Name("Courier-Checksum")!: "1"])
            let refused = await #expect(throws: CourierError.self) { try await plain.data(for: trailed) }
            #expect(refused?.code == .unsupportedOption)
            #expect(server.requestCount == 0, "nothing reached the server")
            await plain.invalidate(cancelingTasks: true)
        }
    }

    /// A GET or a HEAD with bytes in its body is refused before anything is sent, naming the
    /// engine that sends it: FoundationNetworking fails such a GET, which came out as
    /// `connectionFailed` (no request went out, safe to send again: it never could go out).
    @Test func aGetOrHeadWithABodyIsRefused() async throws {
        try await withTestServer { server in
            try await self.withManager(.urlSession, server) { manager in
                let bodies: [(String, RequestBody)] = [
                    ("data", .data(Data("x".utf8))),
                    ("stream", .stream(Self.chunks(["x"]), length: .unknown)),
                ]
                for method in [HTTPRequest.Method.get, .head] {
                    for (name, body) in bodies {
                        var request = Request(method: method, url: server.url("/anything"))
                        request.body = body
                        let refused = await #expect(throws: CourierError.self) { try await manager.data(for: request) }
                        #expect(refused?.code == .unsupportedOption, "\(method) \(name): \(refused.map { "\($0)" } ?? "")")
                        #expect(refused?.message.contains("NIOEngine") == true, "\(method) \(name)")
                    }
                }
                #expect(server.requestCount == 0, "nothing reached the server")
            }
        }
    }

    /// An answer FoundationNetworking cannot read fails as an invalid response, not as
    /// `connectionFailed` (which says no request went out, and which a retry policy takes as safe
    /// to send again): a header value with a byte that is not UTF-8 (its header callback refuses
    /// the line), a line without a colon, a status of four digits, a gzip body that does not
    /// decode. Each came out as `connectionFailed` (the four-digit status as `invalidURL`).
    @Test func anAnswerURLSessionCannotReadIsAnInvalidResponse() async throws {
        let answers: [String: [UInt8]] = [
            "latin1": Array("HTTP/1.1 200 OK\r\nX-Name: caf".utf8) + [0xE9] + Array("\r\nContent-Length: 2\r\n\r\nok".utf8),
            "colon": Array("HTTP/1.1 200 OK\r\nX-Broken\r\nContent-Length: 2\r\n\r\nok".utf8),
            "status": Array("HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok".utf8),
            "gzip": Array("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 10\r\n\r\nnot gzip!!".utf8),
        ]
        try await ScriptedHTTPServer.with({ _, _, head in
            let path = head.split(separator: " ").dropFirst().first.map { String($0.dropFirst()) } ?? ""
            guard let bytes = answers[path] else { return .close }
            return .respondBytes(bytes)
        }) { server in
            try await withManagerThatEnds({ Kind.urlSession.manager(baseURL: server.baseURL) }) { manager in
                for path in answers.keys.sorted() {
                    let failed = await #expect(throws: CourierError.self, "\(path)") {
                        try await manager.data(for: Request(url: server.baseURL.appendingPathComponent(path)))
                    }
                    #expect(failed?.code == .invalidResponse, "\(path): \(failed.map { "\($0)" } ?? "")")
                }
            }
        }
    }

    /// libcurl's words for a failure FoundationNetworking gives no code of its own: a connection
    /// never made is `connectionFailed`, before the request went out only; what the engine cannot
    /// tell is an invalid response, never a connection that failed.
    @Test func libcurlFailuresWithoutACodeAreMappedByWhatWentOut() {
        let request = Request(url: URL(string: "http://127.0.0.1:1/")!)
        func code(_ words: String, reachedServer: Bool = false) -> CourierError.Code {
            let error = URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: words])
            return Bridge.courierError(error, request: request, reachedServer: reachedServer).code
        }
        #expect(code("Failed to connect to 2001:db8::1 port 80 after 1026 ms: Couldn't connect to server") == .connectionFailed)
        #expect(code("Could not resolve proxy: proxy.invalid") == .connectionFailed)
        #expect(code("Failed to connect to 2001:db8::1 port 80 after 1026 ms: Couldn't connect to server", reachedServer: true) == .invalidResponse)
        #expect(code("Failed writing header") == .invalidResponse)
        #expect(code("Error while processing content unencoding: incorrect header check", reachedServer: true) == .invalidResponse)
        #expect(code("Header without colon") == .invalidResponse)
        #expect(code("transfer closed with 10 bytes remaining to read", reachedServer: true) == .connectionClosed)
        #expect(code("Recv failure: Connection reset by peer") == .connectionClosed)
        #expect(code("SSL certificate problem: unable to get local issuer certificate") == .serverTrustEvaluationFailed)
        let refused = URLError(.cannotConnectToHost, userInfo: [NSLocalizedDescriptionKey: "Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server"])
        #expect(Bridge.courierError(refused, request: request, reachedServer: false).code == .connectionFailed)
        let unsupported = URLError(.unsupportedURL, userInfo: [NSLocalizedDescriptionKey: "Unsupported response code in HTTP response"])
        #expect(Bridge.courierError(unsupported, request: request, reachedServer: false).code == .invalidResponse)
    }

    /// A `URLProtocol` can answer any `Int` as the status: one past 999 (which `HTTPResponse`
    /// cannot hold, and stopped the process) fails the request as an invalid response.
    @Test func aStatusPast999FromAURLProtocolFailsTheRequest() async throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [FourDigitStatusProtocol.self]
        let manager = SessionManager(engine: URLSessionEngine(configuration: configuration))
        let error = await #expect(throws: CourierError.self) {
            try await manager.data(for: Request(url: URL(string: "http://four-digits.invalid/x")!))
        }
        #expect(error?.code == .invalidResponse, "\(error.map { "\($0)" } ?? "")")
        #expect(error?.message.contains("1000") == true)
        await manager.invalidate(cancelingTasks: true)
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

    /// `strings` as a stream of chunks, one each.
    static func chunks(_ strings: [String]) -> AsyncThrowingStream<ByteBuffer, any Error> {
        AsyncThrowingStream { continuation in
            for string in strings { continuation.yield(ByteBuffer(string: string)) }
            continuation.finish()
        }
    }
}

/// A door that tasks wait at, deaf to cancellation, until it opens.
final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var wasWaitedOn = false
    }

    private let state = NIOLockedValueBox(State())

    /// Whether someone waited (or waits) at the door.
    var isWaitedOn: Bool { self.state.withLockedValue { $0.wasWaitedOn } }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = self.state.withLockedValue { state -> Bool in
                state.wasWaitedOn = true
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiters = self.state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// A body that gives its first chunk, then waits at `gate`, whatever cancellation says, and ends.
struct StubbornChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let first: ByteBuffer
    let gate: Gate

    struct AsyncIterator: AsyncIteratorProtocol {
        var first: ByteBuffer?
        let gate: Gate

        mutating func next() async throws -> ByteBuffer? {
            if let first {
                self.first = nil
                return first
            }
            await self.gate.wait()
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(first: self.first, gate: self.gate) }
}

/// Answers every request with status 1000 and no body.
final class FourDigitStatusProtocol: URLProtocol {
    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }
    override func startLoading() {
        let response = HTTPURLResponse(url: self.request.url!, statusCode: 1000, httpVersion: "HTTP/1.1", headerFields: [:])!
        self.client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        self.client?.urlProtocolDidFinishLoading(self)
    }
    override func stopLoading() {}
}
