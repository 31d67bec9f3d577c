// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/CertificatePinnerTest.kt
// (https://github.com/square/okhttp, commit 1682d9b, after 5.4.0), Copyright (C) 2014 Square,
// Inc., licensed under the Apache License, Version 2.0.

import Courier
import Testing

/// Twins of the part of OkHttp's `CertificatePinnerTest` that Courier has a concept for: pins
/// per host (``ServerTrustPolicies``, exact names and `*.` wildcards) checked against the chain a
/// server presented (``SecurityPolicy/evaluateServerTrust(_:forDomain:)`` in public-key mode, the
/// counterpart of OkHttp's SHA-256 pins of a SubjectPublicKeyInfo). OkHttp's `pinner.check(host,
/// chain)` is `policy(forHost: host).evaluateServerTrust(chain, forDomain: host)`, with policies
/// that check pins only, as OkHttp's pinner (invalid certificates allowed, no name check).
/// OkHttp's `HeldCertificate`s A1, B1 and C1 are three generated leaves with keys of their own
/// (``GeneratedCertificates``'s `localhost`, wildcard and IP-only leaves); A2, A1's key in
/// another certificate, is the re-issued `localhost` leaf.
///
/// Where Courier answers otherwise on purpose, the test asserts Courier's answer and says what
/// OkHttp expects and the rule Courier follows instead ("OkHttp expects"). Left out, no
/// counterpart: pins written as text (`sha256/…`, `sha1/…`: `malformedPin`, `malformedBase64`,
/// `testBadPin`, `testBadAlgorithm`, `testGoodPin`, `testMatchesSha256`, `testMatchesSha1`,
/// `pinList`), the `**.` pattern (`checkForHostnameWithDoubleAsterisk`) and a host pattern
/// refused when added (`testBadHost`): a key of ``ServerTrustPolicies`` is a name or `*.` and a
/// name.
@Suite("Conformance: OkHttp CertificatePinnerTest")
struct OkHttpCertificatePinnerTests {
    /// OkHttp's `certA1`, `certB1`, `certC1` and `A2` (A1's key).
    struct Held {
        let certA1: Certificate
        let certB1: Certificate
        let certC1: Certificate
        let certA2: Certificate

        static func make() async throws -> Held {
            let generated = try await GeneratedCertificates.prepared()
            func one(_ pem: String) throws -> Certificate { try #require(try Certificate.certificates(pemEncoded: pem).first) }
            return Held(
                certA1: try one(generated.localhostLeaf),
                certB1: try one(generated.wildcardLeaf),
                certC1: try one(generated.ipOnlyLeaf),
                certA2: try one(generated.localhostReissuedLeaf)
            )
        }
    }

    /// A policy that checks the pins alone, as OkHttp's pinner: none for no pin.
    static func pinning(_ pins: [Certificate]) -> SecurityPolicy {
        var policy = SecurityPolicy(pinningMode: pins.isEmpty ? .none : .publicKey, pinnedCertificates: Set(pins))
        policy.allowInvalidCertificates = true
        policy.validatesDomainName = false
        return policy
    }

    /// OkHttp's `CertificatePinner.Builder().add(host, pins…)…build()`.
    static func pinner(_ entries: [(String, [Certificate])]) -> ServerTrustPolicies {
        var policies = ServerTrustPolicies(default: Self.pinning([]))
        for (host, pins) in entries { policies[host] = Self.pinning(pins) }
        return policies
    }

    /// OkHttp's `check(host, chain)`: whether it passes.
    static func check(_ pinner: ServerTrustPolicies, _ host: String, _ chain: [Certificate]) async -> Bool {
        do {
            try await pinner.policy(forHost: host).evaluateServerTrust(chain, forDomain: host)
            return true
        } catch {
            return false
        }
    }

    /// Multiple certificates generated from the same keypair have the same pin.
    @Test func sameKeypairSamePin() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("example.com", [held.certA1])])
        #expect(await Self.check(pinner, "example.com", [held.certA2]))
        #expect(!(await Self.check(pinner, "example.com", [held.certB1])))
    }

    @Test func successfulCheck() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("example.com", [held.certA1])])
        #expect(await Self.check(pinner, "example.com", [held.certA1]))
    }

    /// Courier looks for a pinned key on the chain path building finds from the leaf (the
    /// certificates as far as they chain by name and signature, when no root is reached), as
    /// AFNetworking reads the chain `SecTrust` evaluated: B1 did not issue A1, so it is not looked
    /// at. OkHttp's pinner, given no chain cleaner, looks at every certificate sent.
    @Test func successfulMatchAcceptsAnyMatchingCertificateOld() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("example.com", [held.certB1])])
        #expect(!(await Self.check(pinner, "example.com", [held.certA1, held.certB1])))  // OkHttp expects success: only the chain from the leaf counts
    }

    /// As `successfulMatchAcceptsAnyMatchingCertificateOld` (OkHttp's other `check` overload).
    @Test func successfulMatchAcceptsAnyMatchingCertificate() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("example.com", [held.certB1])])
        #expect(!(await Self.check(pinner, "example.com", [held.certA1, held.certB1])))  // OkHttp expects success: only the chain from the leaf counts
        // The pinned certificate as the leaf.
        #expect(await Self.check(pinner, "example.com", [held.certB1, held.certA1]))
    }

    @Test func unsuccessfulCheck() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("example.com", [held.certA1])])
        #expect(!(await Self.check(pinner, "example.com", [held.certB1])))
    }

    @Test func multipleCertificatesForOneHostname() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("example.com", [held.certA1, held.certB1])])
        #expect(await Self.check(pinner, "example.com", [held.certA1]))
        #expect(await Self.check(pinner, "example.com", [held.certB1]))
    }

    @Test func multipleHostnamesForOneCertificate() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("example.com", [held.certA1]), ("www.example.com", [held.certA1])])
        #expect(await Self.check(pinner, "example.com", [held.certA1]))
        #expect(await Self.check(pinner, "www.example.com", [held.certA1]))
    }

    @Test func absentHostnameMatches() async throws {
        let held = try await Held.make()
        #expect(await Self.check(Self.pinner([]), "example.com", [held.certA1]))
    }

    @Test func successfulCheckForWildcardHostname() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("*.example.com", [held.certA1])])
        #expect(await Self.check(pinner, "a.example.com", [held.certA1]))
    }

    /// As `successfulMatchAcceptsAnyMatchingCertificateOld`: only the chain from the leaf counts.
    @Test func successfulMatchAcceptsAnyMatchingCertificateForWildcardHostname() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("*.example.com", [held.certB1])])
        #expect(!(await Self.check(pinner, "a.example.com", [held.certA1, held.certB1])))  // OkHttp expects success: only the chain from the leaf counts
    }

    @Test func unsuccessfulCheckForWildcardHostname() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("*.example.com", [held.certA1])])
        #expect(!(await Self.check(pinner, "a.example.com", [held.certB1])))
    }

    @Test func multipleCertificatesForOneWildcardHostname() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("*.example.com", [held.certA1, held.certB1])])
        #expect(await Self.check(pinner, "a.example.com", [held.certA1]))
        #expect(await Self.check(pinner, "a.example.com", [held.certB1]))
    }

    /// A host's exact entry wins over a wildcard one: its pins alone apply (one policy per host,
    /// as Alamofire's `ServerTrustManager` gives one evaluator). OkHttp applies the pins of every
    /// pattern that matches the host.
    @Test func successfulCheckForOneHostnameWithWildcardAndDirectCertificate() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("*.example.com", [held.certA1]), ("a.example.com", [held.certB1])])
        #expect(!(await Self.check(pinner, "a.example.com", [held.certA1])))  // OkHttp expects success: an exact entry's pins alone apply
        #expect(await Self.check(pinner, "a.example.com", [held.certB1]))
    }

    @Test func unsuccessfulCheckForOneHostnameWithWildcardAndDirectCertificate() async throws {
        let held = try await Held.make()
        let pinner = Self.pinner([("*.example.com", [held.certA1]), ("a.example.com", [held.certB1])])
        #expect(!(await Self.check(pinner, "a.example.com", [held.certC1])))
    }
}
