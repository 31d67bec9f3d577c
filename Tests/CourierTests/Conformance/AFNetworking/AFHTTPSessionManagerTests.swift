import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// Twins of AFNetworking's `Tests/Tests/AFHTTPSessionManagerTests.m`, against TestServer and, when
/// `COURIER_HTTPBIN_URL` names one, a real httpbin (the source runs against httpbin too).
@Suite("Conformance: AFNetworking AFHTTPSessionManagerTests")
struct AFHTTPSessionManagerConformanceTests {
    /// A serializer with the header `field: default value`, as the source's REST tests set.
    static func serializerWithDefaultField() -> HTTPRequestSerializer {
        var serializer = HTTPRequestSerializer()
        serializer.setValue("default value", forHTTPHeaderField: "field")
        return serializer
    }

    static let field = HTTPField.Name("field")!

    /// What a callback verb reported: the task, the object and the error.
    struct Outcome: Sendable {
        var task: DataTask?
        var object: (any Sendable)?
        var error: CourierError?
        var json: [String: any Sendable]? { self.object as? [String: any Sendable] }
    }

    /// Runs a callback verb and waits for `success` or `failure`.
    static func outcome(_ start: (@escaping HTTPSessionManager.Success, @escaping HTTPSessionManager.Failure) -> Void) async -> Outcome {
        await awaitCallback { finish in
            start({ task, object in finish(Outcome(task: task, object: object)) }, { task, error in finish(Outcome(task: task, error: error)) })
        }
    }

    @Test func testSharedManagerIsNotEqualToInitedManager() async {
        let manager = HTTPSessionManager(baseURL: nil)
        #expect(HTTPSessionManager.shared !== manager)
        await manager.invalidate(cancelingTasks: true)
    }

    @Test(arguments: Peer.all)
    func testThatOperationInvokesCompletionHandlerWithResponseObjectOnSuccess(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let box = NIOLockedValueBox<DataTask?>(nil)
                let (object, error): ((any Sendable)?, CourierError?) = await awaitCallback { finish in
                    let task = manager.dataTask(with: Request(url: base.appendingPathComponent("get"))) { _, object, error in
                        finish((object, error))
                    }
                    box.withLockedValue { $0 = task }
                    task.resume()
                }
                #expect(box.withLockedValue { $0 }?.state == .completed)
                #expect(error == nil)
                #expect(object != nil)
            }
        }
    }

    @Test(arguments: Peer.all)
    func testThatOperationInvokesFailureCompletionBlockWithErrorOnFailure(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let box = NIOLockedValueBox<DataTask?>(nil)
                let error: CourierError? = await awaitCallback { finish in
                    let task = manager.dataTask(with: Request(url: base.appendingPathComponent("status/404"))) { _, _, error in
                        finish(error)
                    }
                    box.withLockedValue { $0 = task }
                    task.resume()
                }
                #expect(box.withLockedValue { $0 }?.state == .completed)
                #expect(error?.code == .unacceptableStatusCode)
                #expect(error?.response?.status.code == 404)
            }
        }
    }

    @Test(arguments: Peer.all)
    func testThatRedirectBlockIsCalledWhen302IsEncountered(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let redirected = NIOLockedValueBox(false)
                var hooks = manager.hooks
                hooks.taskWillPerformHTTPRedirection = { _, _, response, request in
                    if response.status.kind == .redirection { redirected.withLockedValue { $0 = true } }
                    return request
                }
                manager.hooks = hooks
                let outcome = await Self.outcome { success, failure in
                    manager.get("redirect/1", success: success, failure: failure)
                }
                #expect(outcome.error == nil)
                #expect(outcome.task?.state == .completed)
                #expect(redirected.withLockedValue { $0 })
            }
        }
    }

    @Test func testDownloadFileCompletionSpecifiesURLInCompletionBlock() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-conformance-\(UUID().uuidString)")
                defer { try? FileManager.default.removeItem(at: folder) }
                let destinationCalled = NIOLockedValueBox(false)
                let destination = DownloadDestination(options: [.createIntermediateDirectories]) { _, _ in
                    destinationCalled.withLockedValue { $0 = true }
                    return folder.appendingPathComponent("t1.file")
                }
                let (file, error): (URL?, CourierError?) = await awaitCallback { finish in
                    manager.downloadTask(with: Request(url: server.url("/get")), destination: destination) { _, file, error in
                        finish((file, error))
                    }.resume()
                }
                #expect(error == nil)
                #expect(destinationCalled.withLockedValue { $0 })
                #expect(file == folder.appendingPathComponent("t1.file"))
                #expect(file.map { FileManager.default.fileExists(atPath: $0.path) } == true)
            }
        }
    }

    @Test func testThatSerializationErrorGeneratesErrorAndNullTaskForGET() async throws {
        struct Custom: Error {}
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                var serializer = HTTPRequestSerializer()
                serializer.setQueryStringSerialization { _, _ in throw Custom() }
                manager.requestSerializer = serializer
                let taskBox = NIOLockedValueBox<DataTask?>(nil)
                let outcome = await Self.outcome { success, failure in
                    taskBox.withLockedValue { $0 = manager.get("test", parameters: ["key": "value"], success: success, failure: failure) }
                }
                #expect(taskBox.withLockedValue { $0 } == nil)
                #expect(outcome.task == nil)
                #expect(outcome.error?.underlyingError is Custom)
                #expect(server.requestCount == 0)
            }
        }
    }

    @Test(arguments: Peer.all)
    func testSettingHTTPHeadersPerRequestCanReplaceTheDefaultValueSpecifiedInRequestSerializer(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                var serializer = HTTPRequestSerializer()
                serializer.setValue("foo value", forHTTPHeaderField: "X-Foo")
                serializer.setValue("bar value", forHTTPHeaderField: "X-Bar")
                manager.requestSerializer = serializer
                let outcome = await Self.outcome { success, failure in
                    manager.dataTask(
                        method: .get, urlString: "get", headers: [HTTPField.Name("X-Foo")!: "request value"], success: success, failure: failure)
                }
                let headers = try #require(outcome.task?.originalRequest.headerFields)
                #expect(headers[HTTPField.Name("X-Foo")!] == "request value")
                #expect(headers[HTTPField.Name("X-Bar")!] == "bar value")
                let echoed = outcome.json?["headers"] as? [String: any Sendable]
                #expect(echoed?["X-Foo"] as? String == "request value")
            }
        }
    }

    @Test(arguments: Peer.all)
    func testDownloadProgressIsReportedForGET(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                manager.responseSerializer = ImageResponseSerializer()
                let reachedOne = NIOLockedValueBox(false)
                let outcome = await Self.outcome { success, failure in
                    manager.get(
                        "image/png", progress: { progress in if progress.fractionCompleted == 1.0 { reachedOne.withLockedValue { $0 = true } } },
                        success: success, failure: failure)
                }
                #expect(outcome.error == nil)
                #expect(reachedOne.withLockedValue { $0 })
            }
        }
    }

    /// The source posts a bare string as the parameters; Courier's form serializer takes a
    /// dictionary (a top-level string is `.parameterEncodingFailed`), so the 20 KB string is one field.
    @Test(arguments: Peer.all)
    func testUploadProgressIsReportedForPOST(_ peer: Peer) async throws {
        let payload = String(repeating: "AFNetworking", count: 1700)
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let reachedOne = NIOLockedValueBox(false)
                let outcome = await Self.outcome { success, failure in
                    manager.post(
                        "post", parameters: ["payload": payload],
                        progress: { progress in if progress.fractionCompleted == 1.0 { reachedOne.withLockedValue { $0 = true } } },
                        success: success, failure: failure)
                }
                #expect(outcome.error == nil)
                #expect(reachedOne.withLockedValue { $0 })
            }
        }
    }

    @Test(arguments: Peer.all)
    func testUploadProgressIsReportedForStreamingPost(_ peer: Peer) async throws {
        let payload = Data(String(repeating: "AFNetworking", count: 1700).utf8)
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let reachedOne = NIOLockedValueBox(false)
                let outcome = await Self.outcome { success, failure in
                    manager.post(
                        "post",
                        constructingBodyWith: { form in
                            form.appendPart(withFileData: payload, name: "AFNetworking", fileName: "AFNetworking", mimeType: "text/html")
                        },
                        progress: { progress in if progress.fractionCompleted == 1.0 { reachedOne.withLockedValue { $0 = true } } },
                        success: success, failure: failure)
                }
                #expect(outcome.error == nil)
                #expect(reachedOne.withLockedValue { $0 })
            }
        }
    }

    @Test(arguments: Peer.all)
    func testThatSuccessBlockIsCalledFor200(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let outcome = await Self.outcome { success, failure in manager.get("status/200", success: success, failure: failure) }
                #expect(outcome.error == nil)
                #expect(outcome.task?.response?.status == .ok)
            }
        }
    }

    @Test(arguments: Peer.all)
    func testThatFailureBlockIsCalledFor404(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let outcome = await Self.outcome { success, failure in manager.get("status/404", success: success, failure: failure) }
                #expect(outcome.error?.code == .unacceptableStatusCode)
            }
        }
    }

    /// Issue 17: the callback verbs' `success` got a value wrapping nil for a 204.
    @Test(arguments: Peer.all)
    func testThatResponseObjectIsEmptyFor204(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let outcome = await Self.outcome { success, failure in manager.get("status/204", success: success, failure: failure) }
                #expect(outcome.error == nil)
                #expect(outcome.task != nil)
                #expect(outcome.object == nil)
                // The async verb agrees.
                let asyncValue = try await manager.get("status/204").value
                #expect(asyncValue == nil)
            }
        }
    }

    @Test(arguments: Peer.all)
    func testGET(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let outcome = await Self.outcome { success, failure in manager.get("get", success: success, failure: failure) }
                #expect(outcome.error == nil)
                #expect(outcome.json != nil)
            }
        }
    }

    @Test(arguments: Peer.all)
    func testHEAD(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let task: DataTask? = await awaitCallback { finish in
                    manager.head("get", success: { task in finish(task) }, failure: { _, _ in finish(nil) })
                }
                #expect(task?.response?.status == .ok)
            }
        }
    }

    @Test(arguments: Peer.all)
    func testPOST(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                manager.requestSerializer = Self.serializerWithDefaultField()
                let outcome = await Self.outcome { success, failure in
                    manager.post("post", parameters: ["key": "value"], headers: [Self.field: "value"], success: success, failure: failure)
                }
                #expect(outcome.task?.originalRequest.headerFields[Self.field] == "value")
                #expect((outcome.json?["form"] as? [String: any Sendable])?["key"] as? String == "value")
            }
        }
    }

    @Test(arguments: Peer.all)
    func testPOSTWithConstructingBody(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                manager.requestSerializer = Self.serializerWithDefaultField()
                let outcome = await Self.outcome { success, failure in
                    manager.post(
                        "post", parameters: ["key": "value"], headers: [Self.field: "value"],
                        constructingBodyWith: { form in
                            form.appendPart(withFileData: Data("Data".utf8), name: "DataName", fileName: "DataFileName", mimeType: "data")
                        },
                        success: success, failure: failure)
                }
                #expect(outcome.task?.originalRequest.headerFields[Self.field] == "value")
                #expect((outcome.json?["files"] as? [String: any Sendable])?["DataName"] as? String == "Data")
                #expect((outcome.json?["form"] as? [String: any Sendable])?["key"] as? String == "value")
            }
        }
    }

    @Test(arguments: Peer.all)
    func testPUT(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                manager.requestSerializer = Self.serializerWithDefaultField()
                let outcome = await Self.outcome { success, failure in
                    manager.put("put", parameters: ["key": "value"], headers: [Self.field: "value"], success: success, failure: failure)
                }
                #expect(outcome.task?.originalRequest.headerFields[Self.field] == "value")
                #expect((outcome.json?["form"] as? [String: any Sendable])?["key"] as? String == "value")
            }
        }
    }

    @Test(arguments: Peer.all)
    func testDELETE(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                manager.requestSerializer = Self.serializerWithDefaultField()
                let outcome = await Self.outcome { success, failure in
                    manager.delete("delete", parameters: ["key": "value"], headers: [Self.field: "value"], success: success, failure: failure)
                }
                #expect(outcome.task?.originalRequest.headerFields[Self.field] == "value")
                #expect((outcome.json?["args"] as? [String: any Sendable])?["key"] as? String == "value")
            }
        }
    }

    @Test(arguments: Peer.all)
    func testPATCH(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                manager.requestSerializer = Self.serializerWithDefaultField()
                let outcome = await Self.outcome { success, failure in
                    manager.patch("patch", parameters: ["key": "value"], headers: [Self.field: "value"], success: success, failure: failure)
                }
                #expect(outcome.task?.originalRequest.headerFields[Self.field] == "value")
                #expect((outcome.json?["form"] as? [String: any Sendable])?["key"] as? String == "value")
            }
        }
    }

    @Test(arguments: Peer.all)
    func testHiddenBasicAuthentication(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                var serializer = HTTPRequestSerializer()
                serializer.setAuthorizationHeaderField(username: "user", password: "password")
                manager.requestSerializer = serializer
                let outcome = await Self.outcome { success, failure in
                    manager.get("hidden-basic-auth/user/password", success: success, failure: failure)
                }
                #expect(outcome.error == nil)
                #expect(outcome.json?["authenticated"] as? Bool == true)
            }
        }
    }

    // MARK: Security policy

    static func pinningPolicy(_ mode: SecurityPolicy.PinningMode) throws -> SecurityPolicy {
        SecurityPolicy(pinningMode: mode, pinnedCertificates: Set(try Certificate.certificates(pemEncoded: TestCertificates.rootCA)))
    }

    @Test func testValidSecureNoPinningSecurityPolicy() throws {
        try SecurityPolicy(pinningMode: .none).validate(baseURL: URL(string: "https://example.com"))
    }

    @Test func testValidInsecureNoPinningSecurityPolicy() throws {
        try SecurityPolicy(pinningMode: .none).validate(baseURL: URL(string: "http://example.com"))
    }

    @Test func testValidCertificatePinningSecurityPolicy() throws {
        try Self.pinningPolicy(.certificate).validate(baseURL: URL(string: "https://example.com"))
    }

    /// AFNetworking raises an exception; Courier throws a typed error (and a manager made with
    /// such a pair fails every request with it).
    @Test func testInvalidCertificatePinningSecurityPolicy() throws {
        let policy = try Self.pinningPolicy(.certificate)
        #expect { try policy.validate(baseURL: URL(string: "http://example.com")) } throws: { error in
            Conformance.isCourierError(error, .invalidRequest)
        }
    }

    @Test func testValidPublicKeyPinningSecurityPolicy() throws {
        try Self.pinningPolicy(.publicKey).validate(baseURL: URL(string: "https://example.com"))
    }

    @Test func testInvalidPublicKeyPinningSecurityPolicy() throws {
        let policy = try Self.pinningPolicy(.publicKey)
        #expect { try policy.validate(baseURL: URL(string: "http://example.com")) } throws: { error in
            Conformance.isCourierError(error, .invalidRequest)
        }
    }

    /// Differs: AFNetworking refuses a pinning policy on a manager without a base URL. Courier
    /// accepts it: such a manager sends absolute URLs, and the policy is enforced on every TLS
    /// connection it makes.
    @Test func testInvalidCertificatePinningSecurityPolicyWithoutBaseURL() throws {
        try Self.pinningPolicy(.certificate).validate(baseURL: nil)
    }

    /// Differs, as ``testInvalidCertificatePinningSecurityPolicyWithoutBaseURL()``.
    @Test func testInvalidPublicKeyPinningSecurityPolicyWithoutBaseURL() throws {
        try Self.pinningPolicy(.publicKey).validate(baseURL: nil)
    }

    /// The source pins google.com's certificate and asks apple.com; here TestServer presents its
    /// `localhost` chain and the pin is a self-signed certificate of another server.
    @Test func testInvalidServerTrustProducesCorrectErrorForCertificatePinning() async throws {
        try await Self.pinMismatch(.certificate)
    }

    @Test func testInvalidServerTrustProducesCorrectErrorForPublicKeyPinning() async throws {
        try await Self.pinMismatch(.publicKey)
    }

    static func pinMismatch(_ mode: SecurityPolicy.PinningMode) async throws {
        try await withTestServer(.https()) { server in
            var policy = SecurityPolicy(
                pinningMode: mode, pinnedCertificates: Set(try Certificate.certificates(pemEncoded: TestCertificates.selfSignedLeaf)))
            policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
            try await withManager(baseURL: server.baseURL, securityPolicy: policy) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                let outcome = await Self.outcome { success, failure in manager.get("get", success: success, failure: failure) }
                let error = try #require(outcome.error)
                #expect(error.code == .serverTrustEvaluationFailed)
                let failure = try #require(error.underlyingError as? ServerTrustFailure)
                // The chain verifies against the roots; certificate mode then finds no path to a
                // pin, public-key mode no pinned key: both are a pin mismatch.
                #expect(failure.reason == .pinMismatch)
                #expect(failure.host == "localhost" || failure.host == "127.0.0.1")
                #expect(server.requestCount == 0)
            }
        }
    }
}

/// Issue 19's twin: AFNetworking's authentication challenge handler is Courier's
/// `hooks.taskDidReceiveAuthenticationChallenge`.
extension AFHTTPSessionManagerConformanceTests {
    /// Differs: the hook returns a `ChallengeDisposition` (`.useCredential(…)`,
    /// `.performDefaultHandling`, …) rather than either a credential or a boxed disposition.
    @Test func testAuthenticationChallengeHandlerCredentialResult() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                manager.responseSerializer = HTTPResponseSerializer()
                let realms = NIOLockedValueBox<[String?]>([])
                var hooks = manager.hooks
                hooks.taskDidReceiveAuthenticationChallenge = { _, _, challenge in
                    realms.withLockedValue { $0.append(challenge.protectionSpace.realm) }
                    if challenge.protectionSpace.realm == "Fake Realm" {
                        return .useCredential(HTTPCredential(user: "user", password: "passwd"))
                    }
                    return .performDefaultHandling
                }
                manager.hooks = hooks
                let outcome = await Self.outcome { success, failure in
                    manager.get("basic-auth/user/passwd", success: success, failure: failure)
                }
                #expect(outcome.error == nil, "the request should succeed")
                #expect(outcome.task?.response?.status == .ok)
                #expect(realms.withLockedValue { $0 } == ["Fake Realm"])
            }
        }
    }
}
