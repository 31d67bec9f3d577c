@testable import Courier
import CourierTesting
import Foundation
import Testing

/// A pinned CA-issued leaf anchoring trust (certificate mode, invalid certificates allowed, the
/// domain name validated): the engine makes a client per host, each checking its own host's name.
@Suite("A pinned CA-issued leaf: one pool per host")
struct LeafAnchorPoolTests {
    @Test func eachHostHasItsOwnPoolCheckedAgainstItsOwnName() async throws {
        let generated = try await GeneratedCertificates.prepared()
        // The leaf names 127.0.0.1 only, and its CA is trusted by nobody.
        var policy = SecurityPolicy(
            pinningMode: .certificate,
            pinnedCertificates: Set(try Certificate.certificates(pemEncoded: generated.ipOnlyLeaf))
        )
        policy.allowInvalidCertificates = true
        let identity = TestServer.Identity.custom("iponly", chainPEM: [generated.ipOnlyLeaf], keyPEM: generated.ipOnlyKey)
        try await withTestServer(.https(identity)) { server in
            let engine = NIOEngine(securityPolicy: policy)
            let manager = HTTPSessionManager(engine: engine)
            manager.completionQueue = TestQueues.completion
            let response = try await manager.get("https://127.0.0.1:\(server.port)/get")
            #expect(response.response.status == .ok)
            do {
                _ = try await manager.get("https://LOCALHOST:\(server.port)/get")
                Issue.record("localhost is not named by the pinned leaf")
            } catch {
                let failure = (error as? CourierError)?.underlyingError as? ServerTrustFailure
                #expect(failure?.reason == .nameMismatch, "\(error)")
                #expect(failure?.host == "localhost")
            }
            #expect(server.requestCount == 1, "no request reached the server under the wrong name")
            #expect(Set(engine.pools[0].hosts?.hosts ?? []) == ["127.0.0.1", "localhost"])
            let again = try await manager.get("https://127.0.0.1:\(server.port)/get")
            #expect(again.response.status == .ok)
            #expect(engine.pools[0].hosts?.hosts.count == 2, "a host's pool is made once")

            await manager.invalidate(cancelingTasks: true)
            let deadline = ContinuousClock.now + .seconds(5)
            while server.openConnectionCount > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(server.openConnectionCount == 0, "every per-host client was shut down")
            #expect(engine.pools[0].hosts?.pool(forHost: "example.test") == nil, "no client is made after shutdown")
        }
    }

    /// The served leaf, the pin, and why the connection is refused.
    @Test(arguments: [("expired", "expired", ServerTrustFailure.Reason.expired), ("private", "other", .pinMismatch)])
    func refusalsSayWhy(_ served: String, _ pinned: String, _ reason: ServerTrustFailure.Reason) async throws {
        let generated = try await GeneratedCertificates.prepared()
        let (leaf, key) = served == "expired" ? (generated.expiredLeaf, generated.expiredKey) : (generated.localhostLeaf, generated.localhostKey)
        let pin = pinned == "other" ? generated.intermediateLeaf : leaf
        var policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: Set(try Certificate.certificates(pemEncoded: pin)))
        policy.allowInvalidCertificates = true
        try await withTestServer(.https(.custom(served, chainPEM: [leaf], keyPEM: key))) { server in
            try await withManager(baseURL: server.baseURL, securityPolicy: policy) { manager in
                let error = await #expect(throws: CourierError.self) { try await manager.get("get") }
                let failure = error?.underlyingError as? ServerTrustFailure
                #expect(failure?.reason == reason, "\(String(describing: error))")
                #expect(failure?.host == "127.0.0.1")
                #expect(server.requestCount == 0)
            }
        }
    }

    @Test func onlyPoliciesThatCheckNamesThemselvesHavePerHostPools() throws {
        let leaf = Set(try Certificate.certificates(pemEncoded: TestCertificates.localhostLeaf))
        var policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: leaf)
        #expect(!ServerTrustEvaluator.needsHost(policy), "the chain is verified by BoringSSL, name included")
        policy.allowInvalidCertificates = true
        #expect(ServerTrustEvaluator.needsHost(policy))
        policy.validatesDomainName = false
        #expect(!ServerTrustEvaluator.needsHost(policy), "no name to check: one client serves every host")
        #expect(ServerTrustEvaluator.anchorsOnLeaf(policy))
        let selfSigned = Set(try Certificate.certificates(pemEncoded: TestCertificates.selfSignedLeaf))
        var anchored = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: selfSigned)
        anchored.allowInvalidCertificates = true
        #expect(!ServerTrustEvaluator.needsHost(anchored), "a self-signed pin is BoringSSL's anchor")
        #expect(NIOEngine(securityPolicy: .default).pools[0].hosts == nil)
    }
}
