// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/internal/tls/HostnameVerifierTest.kt
// (https://github.com/square/okhttp, commit 1682d9b, after 5.4.0; most of its cases come from AOSP
// and the Apache HTTP Client's tests), licensed to the Apache Software Foundation under the
// Apache License, Version 2.0.

import NIOSSL
import SwiftASN1
import Testing
import X509

@testable import Courier

/// Twins of OkHttp's `HostnameVerifierTest`, every case: the same certificates (PEM), their names
/// as the SSL policy reads them (swift-certificates, `HostnameMatcher.names(of:)`; OkHttp's
/// `certificateSANs`), and the same hosts checked with `HostnameMatcher.matches(host:names:)`.
/// OkHttp's `HeldCertificate`s are given as the names they were made with; `verifyAsIpAddress`'s
/// `canParseAsIpAddress` is `IPAddress`, which decides that a host is an address.
///
/// As OkHttp, Courier reads subject alternative names only: a certificate with a common name and
/// none names no host. Where Courier answers otherwise on purpose, the row asserts Courier's
/// answer and says what OkHttp expects and the rule Courier follows instead ("OkHttp expects").
/// Left out: OkHttp's platform switches (Android, Conscrypt, Bouncy Castle) and the subject
/// check of `subjectAltUsesLocalDomainAndIp` (`X500Principal`), which are not about names.
@Suite("Conformance: OkHttp HostnameVerifierTest")
struct OkHttpHostnameVerifierTests {
    /// The names the SSL policy reads from `pem` (swift-certificates).
    ///
    /// OkHttp made half of its certificates with 512-bit RSA keys (`rsa:512`), which
    /// swift-certificates does not parse (`incorrectParameterSize`): Courier refuses a chain with
    /// one before it reads a name. Their names (`weakKey`) are read with swift-nio-ssl's reader
    /// (`HostnameMatcher.names(of:)` of an `NIOSSLCertificate`), which decodes a dNSName as UTF-8.
    static func names(_ pem: String, weakKey: Bool = false) throws -> [HostnameMatcher.Name] {
        guard weakKey else { return HostnameMatcher.names(of: try X509.Certificate(pemEncoded: pem)) }
        #expect(throws: (any Error).self) { try X509.Certificate(pemEncoded: pem) }
        return HostnameMatcher.names(of: try NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem))
    }

    /// OkHttp's `verifier.verify(host, session)`.
    static func verify(_ host: String, _ names: [HostnameMatcher.Name]) -> Bool {
        HostnameMatcher.matches(host: host, names: names)
    }

    @Test func verify() {
        // A session without a certificate.
        #expect(!Self.verify("localhost", []))
    }

    @Test func verifyCn() throws {
        // CN=foo.com
        let names = try Self.names(Self.cnFooCom)
        #expect(names.isEmpty)
        #expect(!Self.verify("foo.com", names))
        #expect(!Self.verify("a.foo.com", names))
        #expect(!Self.verify("bar.com", names))
    }

    @Test func verifyNonAsciiCn() throws {
        // CN=花子.co.jp
        let names = try Self.names(Self.cnHanakoCoJp)
        #expect(names.isEmpty)
        #expect(!Self.verify("\u{82b1}\u{5b50}.co.jp", names))
        #expect(!Self.verify("a.\u{82b1}\u{5b50}.co.jp", names))
    }

    @Test func verifySubjectAlt() throws {
        // CN=foo.com, subjectAlt=bar.com
        let names = try Self.names(Self.cnFooSubjectAltBar)
        #expect(names == [.dns("bar.com")])
        #expect(!Self.verify("foo.com", names))
        #expect(!Self.verify("a.foo.com", names))
        #expect(Self.verify("bar.com", names))
        #expect(!Self.verify("a.bar.com", names))
    }

    /// The certificate's second name, `花子.co.jp`, is UTF-8 in a dNSName, which is an
    /// IA5String (ASCII, RFC 5280 4.2.1.6): swift-certificates refuses the extension, and a
    /// certificate whose subject alternative names do not parse names no host. OkHttp (the JDK)
    /// reads both names, the second as replacement characters, and matches `bar.com`; Android
    /// drops the second only.
    @Test func verifyNonAsciiSubjectAlt() throws {
        // CN=foo.com, subjectAlt=bar.com, subjectAlt=花子.co.jp
        let names = try Self.names(Self.cnFooSubjectAltBarHanako)
        #expect(names.isEmpty)  // OkHttp expects ["bar.com", "������.co.jp"]
        #expect(!Self.verify("foo.com", names))
        #expect(!Self.verify("a.foo.com", names))
        #expect(!Self.verify("bar.com", names))  // OkHttp expects true: a malformed extension names nothing
        #expect(!Self.verify("a.bar.com", names))
        #expect(!Self.verify("a.\u{82b1}\u{5b50}.co.jp", names))
    }

    @Test func verifySubjectAltOnly() throws {
        // subjectAlt=foo.com
        let names = try Self.names(Self.subjectAltFooOnly)
        #expect(names == [.dns("foo.com")])
        #expect(Self.verify("foo.com", names))
        #expect(!Self.verify("a.foo.com", names))
        #expect(Self.verify("foo.com", names))
        #expect(!Self.verify("a.foo.com", names))
    }

    @Test func verifyMultipleCn() throws {
        // CN=foo.com, CN=bar.com, CN=花子.co.jp
        let names = try Self.names(Self.multipleCn)
        #expect(names.isEmpty)
        #expect(!Self.verify("foo.com", names))
        #expect(!Self.verify("a.foo.com", names))
        #expect(!Self.verify("bar.com", names))
        #expect(!Self.verify("a.bar.com", names))
        #expect(!Self.verify("\u{82b1}\u{5b50}.co.jp", names))
        #expect(!Self.verify("a.\u{82b1}\u{5b50}.co.jp", names))
    }

    @Test func verifyWilcardCn() throws {
        // CN=*.foo.com
        let names = try Self.names(Self.cnWildcardFoo)
        #expect(names.isEmpty)
        #expect(!Self.verify("foo.com", names))
        #expect(!Self.verify("www.foo.com", names))
        #expect(!Self.verify("\u{82b1}\u{5b50}.foo.com", names))
        #expect(!Self.verify("a.b.foo.com", names))
    }

    @Test func verifyWilcardCnOnTld() throws {
        // CN=*.co.jp
        let names = try Self.names(Self.cnWildcardCoJp)
        #expect(names.isEmpty)
        #expect(!Self.verify("foo.co.jp", names))
        #expect(!Self.verify("\u{82b1}\u{5b50}.co.jp", names))
    }

    /// The second name, `*.花子.co.jp`, is UTF-8 in a dNSName, as in `verifyNonAsciiSubjectAlt`:
    /// the extension does not parse, and the certificate names no host.
    @Test func testWilcardNonAsciiSubjectAlt() throws {
        // CN=*.foo.com, subjectAlt=*.bar.com, subjectAlt=*.花子.co.jp
        let names = try Self.names(Self.wildcardNonAsciiSubjectAlt)
        #expect(names.isEmpty)  // OkHttp expects ["*.bar.com", "*.������.co.jp"]
        // try the foo.com variations
        #expect(!Self.verify("foo.com", names))
        #expect(!Self.verify("www.foo.com", names))
        #expect(!Self.verify("\u{82b1}\u{5b50}.foo.com", names))
        #expect(!Self.verify("a.b.foo.com", names))
        #expect(!Self.verify("bar.com", names))
        #expect(!Self.verify("www.bar.com", names))  // OkHttp expects true: a malformed extension names nothing
        #expect(!Self.verify("\u{82b1}\u{5b50}.bar.com", names))
        #expect(!Self.verify("a.b.bar.com", names))
    }

    /// `testWilcardNonAsciiSubjectAlt`'s hosts against its first name alone, as a certificate
    /// that parses would give it.
    ///
    /// OkHttp refuses every host that is not ASCII (its URLs hold hosts in their ASCII form);
    /// Courier's `*` stands for any one non-empty label, as `SecTrust`'s `SecDNSMatch` (the engine
    /// hands the matcher a host in its ASCII form, `xn--…`, which `*` matches as well).
    @Test func testWilcardNonAsciiSubjectAltFirstName() {
        let names: [HostnameMatcher.Name] = [.dns("*.bar.com")]
        #expect(!Self.verify("bar.com", names))
        #expect(Self.verify("www.bar.com", names))
        #expect(Self.verify("\u{82b1}\u{5b50}.bar.com", names))  // OkHttp expects false: a host that is not ASCII matches nothing
        #expect(Self.verify("xn--8pvr97i.bar.com", names))
        #expect(!Self.verify("a.b.bar.com", names))
    }

    @Test func subjectAltUsesLocalDomainAndIp() throws {
        let names = try Self.names(Self.localDomainAndIp, weakKey: true)
        #expect(names == [.dns("localhost.localdomain"), .dns("localhost"), .ip([127, 0, 0, 1])])
        #expect(Self.verify("localhost", names))
        #expect(Self.verify("localhost.localdomain", names))
        #expect(!Self.verify("local.host", names))
        #expect(Self.verify("127.0.0.1", names))
        #expect(!Self.verify("127.0.0.2", names))
    }

    @Test func wildcardsCannotMatchIpAddresses() throws {
        // CN=*.0.0.1
        let names = try Self.names(Self.cnWildcardIp, weakKey: true)
        #expect(names.isEmpty)
        #expect(!Self.verify("127.0.0.1", names))
        // As a subject alternative name too.
        #expect(!Self.verify("127.0.0.1", [.dns("*.0.0.1")]))
    }

    /// OkHttp's `*.com` is a common name, so no name at all; as a subject alternative name OkHttp
    /// would match it ("It is the CA's responsibility to not hand out certificates that match so
    /// broadly"). Courier's `*` needs two labels after it, as `SecTrust`'s `SecDNSMatch`.
    @Test func wildcardsDoesNotNeedTwoDots() throws {
        // CN=*.com
        let names = try Self.names(Self.cnWildcardCom, weakKey: true)
        #expect(names.isEmpty)
        #expect(!Self.verify("google.com", names))
        #expect(!Self.verify("google.com", [.dns("*.com")]))  // OkHttp expects true: a `*` needs two labels after it
    }

    @Test func subjectAltName() throws {
        // CN=foo.com, subjectAlt=bar.com, baz.com
        let names = try Self.names(Self.subjectAltBarBaz, weakKey: true)
        #expect(names == [.dns("bar.com"), .dns("baz.com")])
        #expect(!Self.verify("foo.com", names))
        #expect(Self.verify("bar.com", names))
        #expect(Self.verify("baz.com", names))
        #expect(!Self.verify("a.foo.com", names))
        #expect(!Self.verify("quux.com", names))
    }

    @Test func subjectAltNameWithWildcard() throws {
        // CN=foo.com, subjectAlt=bar.com, *.baz.com
        let names = try Self.names(Self.subjectAltBarWildcardBaz, weakKey: true)
        #expect(names == [.dns("bar.com"), .dns("*.baz.com")])
        #expect(!Self.verify("foo.com", names))
        #expect(Self.verify("bar.com", names))
        #expect(Self.verify("a.baz.com", names))
        #expect(!Self.verify("baz.com", names))
        #expect(!Self.verify("a.foo.com", names))
        #expect(!Self.verify("a.bar.com", names))
        #expect(!Self.verify("quux.com", names))
    }

    /// An address matches an iPAddress name with the same bytes, as `SecTrust` compares them: an
    /// IPv4-mapped IPv6 address (16 bytes) is not the IPv4 name (4 bytes). OkHttp canonicalizes
    /// both (as Go's `net.IP.Equal` would).
    @Test func subjectAltNameWithIPAddresses() throws {
        // subjectAlt=IP:0:0:0:0:0:0:0:1,IP:2a03:2880:f003:c07:face:b00c::2,IP:0::5,IP:192.168.1.1
        let names = try Self.names(Self.subjectAltIPAddresses, weakKey: true)
        #expect(names.count == 4)
        #expect(!Self.verify("foo.com", names))
        #expect(Self.verify("::1", names))
        #expect(!Self.verify("::2", names))
        #expect(Self.verify("::5", names))
        #expect(Self.verify("2a03:2880:f003:c07:face:b00c::2", names))
        #expect(Self.verify("2a03:2880:f003:c07:face:b00c:0:2", names))
        #expect(Self.verify("2a03:2880:f003:c07:FACE:B00C:0:2", names))
        #expect(!Self.verify("2a03:2880:f003:c07:face:b00c:0:3", names))
        #expect(!Self.verify("127.0.0.1", names))
        #expect(Self.verify("192.168.1.1", names))
        #expect(!Self.verify("::ffff:192.168.1.1", names))  // OkHttp expects true: addresses compare as bytes
        #expect(!Self.verify("0:0:0:0:0:FFFF:C0A8:0101", names))  // OkHttp expects true: addresses compare as bytes
    }

    @Test func generatedCertificate() {
        // HeldCertificate: CN=Foo Corp, subjectAlt=foo.com
        let names: [HostnameMatcher.Name] = [.dns("foo.com")]
        #expect(Self.verify("foo.com", names))
        #expect(!Self.verify("bar.com", names))
    }

    /// Host names compare case-insensitively in ASCII only (RFC 6125 6.4.1): U+212A KELVIN SIGN
    /// lowercases to `k` in Unicode, and is no `K`.
    @Test func specialKInHostname() {
        // HeldCertificate: CN=Foo Corp, subjectAlt=k.com, tel.com
        let names: [HostnameMatcher.Name] = [.dns("k.com"), .dns("tel.com")]
        #expect(!Self.verify("foo.com", names))
        #expect(!Self.verify("bar.com", names))
        #expect(Self.verify("k.com", names))
        #expect(Self.verify("K.com", names))
        #expect(!Self.verify("\u{2121}.com", names))
        #expect(!Self.verify("℡.com", names))
        #expect(!Self.verify("\u{212A}.com", names))
        // Kelvin character below (OkHttp writes it as itself)
        #expect(!Self.verify("\u{212A}.com", names))
    }

    @Test func specialKInCert() {
        // HeldCertificate: CN=Foo Corp, subjectAlt=℡.com, K.com (Kelvin)
        let names: [HostnameMatcher.Name] = [.dns("\u{2121}.com"), .dns("\u{212A}.com")]
        #expect(!Self.verify("foo.com", names))
        #expect(!Self.verify("bar.com", names))
        #expect(!Self.verify("k.com", names))
        #expect(!Self.verify("K.com", names))
        #expect(!Self.verify("tel.com", names))
        #expect(!Self.verify("k.com", names))
    }

    /// The names `℡.com` and `K.com` (Kelvin) are UTF-8 in dNSNames, which swift-nio-ssl's reader
    /// decodes (OkHttp reads them as replacement characters; Android reads none). The Kelvin sign
    /// is no `k` (RFC 6125 6.4.1's ASCII case-insensitivity).
    @Test func specialKInExternalCert() throws {
        // subjectAlt=DNS:℡.com,DNS:K.com
        let names = try Self.names(Self.specialKExternal, weakKey: true)
        #expect(names == [.dns("\u{2121}.com"), .dns("\u{212A}.com")])  // OkHttp expects ["���.com", "���.com"]
        #expect(!Self.verify("tel.com", names))
        #expect(!Self.verify("k.com", names))
        #expect(!Self.verify("foo.com", names))
        #expect(!Self.verify("bar.com", names))
        #expect(!Self.verify("k.com", names))
        #expect(!Self.verify("K.com", names))
    }

    /// A name that is not ASCII matches the same bytes (as Go's exact match and `SecTrust`'s
    /// literal comparison): swift-nio-ssl's reader gives `℡.com` as it is. OkHttp refuses every
    /// host that is not ASCII. (swift-certificates, which the SSL policy reads names with, refuses
    /// a dNSName that is not ASCII, and with it the certificate's other names.)
    @Test func replacementCharacter() throws {
        // subjectAlt=DNS:℡.com,DNS:K.com
        let names = try Self.names(Self.specialKExternal, weakKey: true)
        // Replacement characters are deliberate, from certificate loading.
        #expect(!Self.verify("\u{FFFD}\u{FFFD}\u{FFFD}.com", names))
        #expect(Self.verify("℡.com", names))  // OkHttp expects false: a host that is not ASCII matches nothing
    }

    @Test func thatCatchesErrorsWithBadSession() async throws {
        // The localhost certificate, and a host that is not ASCII.
        let generated = try await GeneratedCertificates.prepared()
        let names = try Self.names(generated.localhostLeaf)
        #expect(!Self.verify("\u{1F4A9}.com", names))
    }

    /// `verifyAsIpAddress`: whether a host is an address, which then matches iPAddress names only.
    @Test(arguments: [
        // IPv4
        "127.0.0.1", "1.2.3.4",
        // IPv6
        "::1", "2001:db8::1", "::192.168.0.1", "::ffff:192.168.0.1", "FEDC:BA98:7654:3210:FEDC:BA98:7654:3210",
        "1080:0:0:0:8:800:200C:417A", "1080::8:800:200C:417A", "FF01::101", "0:0:0:0:0:0:13.1.68.3",
        "0:0:0:0:0:FFFF:129.144.52.38", "::13.1.68.3", "::FFFF:129.144.52.38",
    ])
    func verifyAsIpAddress(_ address: String) throws {
        let parsed = try #require(IPAddress(address))
        #expect(HostnameMatcher.matches(host: address, names: [.ip(parsed.bytes)]))
        #expect(!HostnameMatcher.matches(host: address, names: [.dns(address)]))
    }

    @Test(arguments: ["go", "localhost", "squareup.com", "www.nintendo.co.jp"])
    func verifyAsIpAddressHostnames(_ host: String) {
        #expect(IPAddress(host) == nil)
        #expect(HostnameMatcher.matches(host: host, names: [.dns(host)]))
    }

    // MARK: OkHttp's certificates

    static let cnFooCom = """
        -----BEGIN CERTIFICATE-----
        MIIERjCCAy6gAwIBAgIJAIz+EYMBU6aQMA0GCSqGSIb3DQEBBQUAMIGiMQswCQYD
        VQQGEwJDQTELMAkGA1UECBMCQkMxEjAQBgNVBAcTCVZhbmNvdXZlcjEWMBQGA1UE
        ChMNd3d3LmN1Y2JjLmNvbTEUMBIGA1UECxQLY29tbW9uc19zc2wxHTAbBgNVBAMU
        FGRlbW9faW50ZXJtZWRpYXRlX2NhMSUwIwYJKoZIhvcNAQkBFhZqdWxpdXNkYXZp
        ZXNAZ21haWwuY29tMB4XDTA2MTIxMTE1MzE0MVoXDTI4MTEwNTE1MzE0MVowgaQx
        CzAJBgNVBAYTAlVTMREwDwYDVQQIEwhNYXJ5bGFuZDEUMBIGA1UEBxMLRm9yZXN0
        IEhpbGwxFzAVBgNVBAoTDmh0dHBjb21wb25lbnRzMRowGAYDVQQLExF0ZXN0IGNl
        cnRpZmljYXRlczEQMA4GA1UEAxMHZm9vLmNvbTElMCMGCSqGSIb3DQEJARYWanVs
        aXVzZGF2aWVzQGdtYWlsLmNvbTCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoC
        ggEBAMhjr5aCPoyp0R1iroWAfnEyBMGYWoCidH96yGPFjYLowez5aYKY1IOKTY2B
        lYho4O84X244QrZTRl8kQbYtxnGh4gSCD+Z8gjZ/gMvLUlhqOb+WXPAUHMB39GRy
        zerA/ZtrlUqf+lKo0uWcocxeRc771KN8cPH3nHZ0rV0Hx4ZAZy6U4xxObe4rtSVY
        07hNKXAb2odnVqgzcYiDkLV8ilvEmoNWMWrp8UBqkTcpEhYhCYp3cTkgJwMSuqv8
        BqnGd87xQU3FVZI4tbtkB+KzjD9zz8QCDJAfDjZHR03KNQ5mxOgXwxwKw6lGMaiV
        JTxpTKqym93whYk93l3ocEe55c0CAwEAAaN7MHkwCQYDVR0TBAIwADAsBglghkgB
        hvhCAQ0EHxYdT3BlblNTTCBHZW5lcmF0ZWQgQ2VydGlmaWNhdGUwHQYDVR0OBBYE
        FJ8Ud78/OrbKOIJCSBYs2tDLXofYMB8GA1UdIwQYMBaAFHua2o+QmU5S0qzbswNS
        yoemDT4NMA0GCSqGSIb3DQEBBQUAA4IBAQC3jRmEya6sQCkmieULcvx8zz1euCk9
        fSez7BEtki8+dmfMXe3K7sH0lI8f4jJR0rbSCjpmCQLYmzC3NxBKeJOW0RcjNBpO
        c2JlGO9auXv2GDP4IYiXElLJ6VSqc8WvDikv0JmCCWm0Zga+bZbR/EWN5DeEtFdF
        815CLpJZNcYwiYwGy/CVQ7w2TnXlG+mraZOz+owr+cL6J/ZesbdEWfjoS1+cUEhE
        HwlNrAu8jlZ2UqSgskSWlhYdMTAP9CPHiUv9N7FcT58Itv/I4fKREINQYjDpvQcx
        SaTYb9dr5sB4WLNglk7zxDtM80H518VvihTcP7FHL+Gn6g4j5fkI98+S
        -----END CERTIFICATE-----
        """

    static let cnHanakoCoJp = """
        -----BEGIN CERTIFICATE-----
        MIIESzCCAzOgAwIBAgIJAIz+EYMBU6aTMA0GCSqGSIb3DQEBBQUAMIGiMQswCQYD
        VQQGEwJDQTELMAkGA1UECBMCQkMxEjAQBgNVBAcTCVZhbmNvdXZlcjEWMBQGA1UE
        ChMNd3d3LmN1Y2JjLmNvbTEUMBIGA1UECxQLY29tbW9uc19zc2wxHTAbBgNVBAMU
        FGRlbW9faW50ZXJtZWRpYXRlX2NhMSUwIwYJKoZIhvcNAQkBFhZqdWxpdXNkYXZp
        ZXNAZ21haWwuY29tMB4XDTA2MTIxMTE1NDIxNVoXDTI4MTEwNTE1NDIxNVowgakx
        CzAJBgNVBAYTAlVTMREwDwYDVQQIDAhNYXJ5bGFuZDEUMBIGA1UEBwwLRm9yZXN0
        IEhpbGwxFzAVBgNVBAoMDmh0dHBjb21wb25lbnRzMRowGAYDVQQLDBF0ZXN0IGNl
        cnRpZmljYXRlczEVMBMGA1UEAwwM6Iqx5a2QLmNvLmpwMSUwIwYJKoZIhvcNAQkB
        FhZqdWxpdXNkYXZpZXNAZ21haWwuY29tMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A
        MIIBCgKCAQEAyGOvloI+jKnRHWKuhYB+cTIEwZhagKJ0f3rIY8WNgujB7PlpgpjU
        g4pNjYGViGjg7zhfbjhCtlNGXyRBti3GcaHiBIIP5nyCNn+Ay8tSWGo5v5Zc8BQc
        wHf0ZHLN6sD9m2uVSp/6UqjS5ZyhzF5FzvvUo3xw8fecdnStXQfHhkBnLpTjHE5t
        7iu1JVjTuE0pcBvah2dWqDNxiIOQtXyKW8Sag1YxaunxQGqRNykSFiEJindxOSAn
        AxK6q/wGqcZ3zvFBTcVVkji1u2QH4rOMP3PPxAIMkB8ONkdHTco1DmbE6BfDHArD
        qUYxqJUlPGlMqrKb3fCFiT3eXehwR7nlzQIDAQABo3sweTAJBgNVHRMEAjAAMCwG
        CWCGSAGG+EIBDQQfFh1PcGVuU1NMIEdlbmVyYXRlZCBDZXJ0aWZpY2F0ZTAdBgNV
        HQ4EFgQUnxR3vz86tso4gkJIFiza0Mteh9gwHwYDVR0jBBgwFoAUe5raj5CZTlLS
        rNuzA1LKh6YNPg0wDQYJKoZIhvcNAQEFBQADggEBALJ27i3okV/KvlDp6KMID3gd
        ITl68PyItzzx+SquF8gahMh016NX73z/oVZoVUNdftla8wPUB1GwIkAnGkhQ9LHK
        spBdbRiCj0gMmLCsX8SrjFvr7cYb2cK6J/fJe92l1tg/7Y4o7V/s4JBe/cy9U9w8
        a0ctuDmEBCgC784JMDtT67klRfr/2LlqWhlOEq7pUFxRLbhpquaAHSOjmIcWnVpw
        9BsO7qe46hidgn39hKh1WjKK2VcL/3YRsC4wUi0PBtFW6ScMCuMhgIRXSPU55Rae
        UIlOdPjjr1SUNWGId1rD7W16Scpwnknn310FNxFMHVI0GTGFkNdkilNCFJcIoRA=
        -----END CERTIFICATE-----
        """

    static let cnFooSubjectAltBar = """
        -----BEGIN CERTIFICATE-----
        MIIEXDCCA0SgAwIBAgIJAIz+EYMBU6aRMA0GCSqGSIb3DQEBBQUAMIGiMQswCQYD
        VQQGEwJDQTELMAkGA1UECBMCQkMxEjAQBgNVBAcTCVZhbmNvdXZlcjEWMBQGA1UE
        ChMNd3d3LmN1Y2JjLmNvbTEUMBIGA1UECxQLY29tbW9uc19zc2wxHTAbBgNVBAMU
        FGRlbW9faW50ZXJtZWRpYXRlX2NhMSUwIwYJKoZIhvcNAQkBFhZqdWxpdXNkYXZp
        ZXNAZ21haWwuY29tMB4XDTA2MTIxMTE1MzYyOVoXDTI4MTEwNTE1MzYyOVowgaQx
        CzAJBgNVBAYTAlVTMREwDwYDVQQIEwhNYXJ5bGFuZDEUMBIGA1UEBxMLRm9yZXN0
        IEhpbGwxFzAVBgNVBAoTDmh0dHBjb21wb25lbnRzMRowGAYDVQQLExF0ZXN0IGNl
        cnRpZmljYXRlczEQMA4GA1UEAxMHZm9vLmNvbTElMCMGCSqGSIb3DQEJARYWanVs
        aXVzZGF2aWVzQGdtYWlsLmNvbTCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoC
        ggEBAMhjr5aCPoyp0R1iroWAfnEyBMGYWoCidH96yGPFjYLowez5aYKY1IOKTY2B
        lYho4O84X244QrZTRl8kQbYtxnGh4gSCD+Z8gjZ/gMvLUlhqOb+WXPAUHMB39GRy
        zerA/ZtrlUqf+lKo0uWcocxeRc771KN8cPH3nHZ0rV0Hx4ZAZy6U4xxObe4rtSVY
        07hNKXAb2odnVqgzcYiDkLV8ilvEmoNWMWrp8UBqkTcpEhYhCYp3cTkgJwMSuqv8
        BqnGd87xQU3FVZI4tbtkB+KzjD9zz8QCDJAfDjZHR03KNQ5mxOgXwxwKw6lGMaiV
        JTxpTKqym93whYk93l3ocEe55c0CAwEAAaOBkDCBjTAJBgNVHRMEAjAAMCwGCWCG
        SAGG+EIBDQQfFh1PcGVuU1NMIEdlbmVyYXRlZCBDZXJ0aWZpY2F0ZTAdBgNVHQ4E
        FgQUnxR3vz86tso4gkJIFiza0Mteh9gwHwYDVR0jBBgwFoAUe5raj5CZTlLSrNuz
        A1LKh6YNPg0wEgYDVR0RBAswCYIHYmFyLmNvbTANBgkqhkiG9w0BAQUFAAOCAQEA
        dQyprNZBmVnvuVWjV42sey/PTfkYShJwy1j0/jcFZR/ypZUovpiHGDO1DgL3Y3IP
        zVQ26uhUsSw6G0gGRiaBDe/0LUclXZoJzXX1qpS55OadxW73brziS0sxRgGrZE/d
        3g5kkio6IED47OP6wYnlmZ7EKP9cqjWwlnvHnnUcZ2SscoLNYs9rN9ccp8tuq2by
        88OyhKwGjJfhOudqfTNZcDzRHx4Fzm7UsVaycVw4uDmhEHJrAsmMPpj/+XRK9/42
        2xq+8bc6HojdtbCyug/fvBZvZqQXSmU8m8IVcMmWMz0ZQO8ee3QkBHMZfCy7P/kr
        VbWx/uETImUu+NZg22ewEw==
        -----END CERTIFICATE-----
        """

    static let cnFooSubjectAltBarHanako = """
        -----BEGIN CERTIFICATE-----
        MIIEajCCA1KgAwIBAgIJAIz+EYMBU6aSMA0GCSqGSIb3DQEBBQUAMIGiMQswCQYD
        VQQGEwJDQTELMAkGA1UECBMCQkMxEjAQBgNVBAcTCVZhbmNvdXZlcjEWMBQGA1UE
        ChMNd3d3LmN1Y2JjLmNvbTEUMBIGA1UECxQLY29tbW9uc19zc2wxHTAbBgNVBAMU
        FGRlbW9faW50ZXJtZWRpYXRlX2NhMSUwIwYJKoZIhvcNAQkBFhZqdWxpdXNkYXZp
        ZXNAZ21haWwuY29tMB4XDTA2MTIxMTE1MzgxM1oXDTI4MTEwNTE1MzgxM1owgaQx
        CzAJBgNVBAYTAlVTMREwDwYDVQQIEwhNYXJ5bGFuZDEUMBIGA1UEBxMLRm9yZXN0
        IEhpbGwxFzAVBgNVBAoTDmh0dHBjb21wb25lbnRzMRowGAYDVQQLExF0ZXN0IGNl
        cnRpZmljYXRlczEQMA4GA1UEAxMHZm9vLmNvbTElMCMGCSqGSIb3DQEJARYWanVs
        aXVzZGF2aWVzQGdtYWlsLmNvbTCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoC
        ggEBAMhjr5aCPoyp0R1iroWAfnEyBMGYWoCidH96yGPFjYLowez5aYKY1IOKTY2B
        lYho4O84X244QrZTRl8kQbYtxnGh4gSCD+Z8gjZ/gMvLUlhqOb+WXPAUHMB39GRy
        zerA/ZtrlUqf+lKo0uWcocxeRc771KN8cPH3nHZ0rV0Hx4ZAZy6U4xxObe4rtSVY
        07hNKXAb2odnVqgzcYiDkLV8ilvEmoNWMWrp8UBqkTcpEhYhCYp3cTkgJwMSuqv8
        BqnGd87xQU3FVZI4tbtkB+KzjD9zz8QCDJAfDjZHR03KNQ5mxOgXwxwKw6lGMaiV
        JTxpTKqym93whYk93l3ocEe55c0CAwEAAaOBnjCBmzAJBgNVHRMEAjAAMCwGCWCG
        SAGG+EIBDQQfFh1PcGVuU1NMIEdlbmVyYXRlZCBDZXJ0aWZpY2F0ZTAdBgNVHQ4E
        FgQUnxR3vz86tso4gkJIFiza0Mteh9gwHwYDVR0jBBgwFoAUe5raj5CZTlLSrNuz
        A1LKh6YNPg0wIAYDVR0RBBkwF4IHYmFyLmNvbYIM6Iqx5a2QLmNvLmpwMA0GCSqG
        SIb3DQEBBQUAA4IBAQBeZs7ZIYyKtdnVxVvdLgwySEPOE4pBSXii7XYv0Q9QUvG/
        ++gFGQh89HhABzA1mVUjH5dJTQqSLFvRfqTHqLpxSxSWqMHnvRM4cPBkIRp/XlMK
        PlXadYtJLPTgpbgvulA1ickC9EwlNYWnowZ4uxnfsMghW4HskBqaV+PnQ8Zvy3L0
        12c7Cg4mKKS5pb1HdRuiD2opZ+Hc77gRQLvtWNS8jQvd/iTbh6fuvTKfAOFoXw22
        sWIKHYrmhCIRshUNohGXv50m2o+1w9oWmQ6Dkq7lCjfXfUB4wIbggJjpyEtbNqBt
        j4MC2x5rfsLKKqToKmNE7pFEgqwe8//Aar1b+Qj+
        -----END CERTIFICATE-----
        """

    static let subjectAltFooOnly = """
        -----BEGIN CERTIFICATE-----
        MIIESjCCAzKgAwIBAgIJAIz+EYMBU6aYMA0GCSqGSIb3DQEBBQUAMIGiMQswCQYD
        VQQGEwJDQTELMAkGA1UECBMCQkMxEjAQBgNVBAcTCVZhbmNvdXZlcjEWMBQGA1UE
        ChMNd3d3LmN1Y2JjLmNvbTEUMBIGA1UECxQLY29tbW9uc19zc2wxHTAbBgNVBAMU
        FGRlbW9faW50ZXJtZWRpYXRlX2NhMSUwIwYJKoZIhvcNAQkBFhZqdWxpdXNkYXZp
        ZXNAZ21haWwuY29tMB4XDTA2MTIxMTE2MjYxMFoXDTI4MTEwNTE2MjYxMFowgZIx
        CzAJBgNVBAYTAlVTMREwDwYDVQQIDAhNYXJ5bGFuZDEUMBIGA1UEBwwLRm9yZXN0
        IEhpbGwxFzAVBgNVBAoMDmh0dHBjb21wb25lbnRzMRowGAYDVQQLDBF0ZXN0IGNl
        cnRpZmljYXRlczElMCMGCSqGSIb3DQEJARYWanVsaXVzZGF2aWVzQGdtYWlsLmNv
        bTCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAMhjr5aCPoyp0R1iroWA
        fnEyBMGYWoCidH96yGPFjYLowez5aYKY1IOKTY2BlYho4O84X244QrZTRl8kQbYt
        xnGh4gSCD+Z8gjZ/gMvLUlhqOb+WXPAUHMB39GRyzerA/ZtrlUqf+lKo0uWcocxe
        Rc771KN8cPH3nHZ0rV0Hx4ZAZy6U4xxObe4rtSVY07hNKXAb2odnVqgzcYiDkLV8
        ilvEmoNWMWrp8UBqkTcpEhYhCYp3cTkgJwMSuqv8BqnGd87xQU3FVZI4tbtkB+Kz
        jD9zz8QCDJAfDjZHR03KNQ5mxOgXwxwKw6lGMaiVJTxpTKqym93whYk93l3ocEe5
        5c0CAwEAAaOBkDCBjTAJBgNVHRMEAjAAMCwGCWCGSAGG+EIBDQQfFh1PcGVuU1NM
        IEdlbmVyYXRlZCBDZXJ0aWZpY2F0ZTAdBgNVHQ4EFgQUnxR3vz86tso4gkJIFiza
        0Mteh9gwHwYDVR0jBBgwFoAUe5raj5CZTlLSrNuzA1LKh6YNPg0wEgYDVR0RBAsw
        CYIHZm9vLmNvbTANBgkqhkiG9w0BAQUFAAOCAQEAjl78oMjzFdsMy6F1sGg/IkO8
        tF5yUgPgFYrs41yzAca7IQu6G9qtFDJz/7ehh/9HoG+oqCCIHPuIOmS7Sd0wnkyJ
        Y7Y04jVXIb3a6f6AgBkEFP1nOT0z6kjT7vkA5LJ2y3MiDcXuRNMSta5PYVnrX8aZ
        yiqVUNi40peuZ2R8mAUSBvWgD7z2qWhF8YgDb7wWaFjg53I36vWKn90ZEti3wNCw
        qAVqixM+J0qJmQStgAc53i2aTMvAQu3A3snvH/PHTBo+5UL72n9S1kZyNCsVf1Qo
        n8jKTiRriEM+fMFlcgQP284EBFzYHyCXFb9O/hMjK2+6mY9euMB1U1aFFzM/Bg==
        -----END CERTIFICATE-----
        """

    static let multipleCn = """
        -----BEGIN CERTIFICATE-----
        MIIEbzCCA1egAwIBAgIJAIz+EYMBU6aXMA0GCSqGSIb3DQEBBQUAMIGiMQswCQYD
        VQQGEwJDQTELMAkGA1UECBMCQkMxEjAQBgNVBAcTCVZhbmNvdXZlcjEWMBQGA1UE
        ChMNd3d3LmN1Y2JjLmNvbTEUMBIGA1UECxQLY29tbW9uc19zc2wxHTAbBgNVBAMU
        FGRlbW9faW50ZXJtZWRpYXRlX2NhMSUwIwYJKoZIhvcNAQkBFhZqdWxpdXNkYXZp
        ZXNAZ21haWwuY29tMB4XDTA2MTIxMTE2MTk0NVoXDTI4MTEwNTE2MTk0NVowgc0x
        CzAJBgNVBAYTAlVTMREwDwYDVQQIDAhNYXJ5bGFuZDEUMBIGA1UEBwwLRm9yZXN0
        IEhpbGwxFzAVBgNVBAoMDmh0dHBjb21wb25lbnRzMRowGAYDVQQLDBF0ZXN0IGNl
        cnRpZmljYXRlczEQMA4GA1UEAwwHZm9vLmNvbTEQMA4GA1UEAwwHYmFyLmNvbTEV
        MBMGA1UEAwwM6Iqx5a2QLmNvLmpwMSUwIwYJKoZIhvcNAQkBFhZqdWxpdXNkYXZp
        ZXNAZ21haWwuY29tMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAyGOv
        loI+jKnRHWKuhYB+cTIEwZhagKJ0f3rIY8WNgujB7PlpgpjUg4pNjYGViGjg7zhf
        bjhCtlNGXyRBti3GcaHiBIIP5nyCNn+Ay8tSWGo5v5Zc8BQcwHf0ZHLN6sD9m2uV
        Sp/6UqjS5ZyhzF5FzvvUo3xw8fecdnStXQfHhkBnLpTjHE5t7iu1JVjTuE0pcBva
        h2dWqDNxiIOQtXyKW8Sag1YxaunxQGqRNykSFiEJindxOSAnAxK6q/wGqcZ3zvFB
        TcVVkji1u2QH4rOMP3PPxAIMkB8ONkdHTco1DmbE6BfDHArDqUYxqJUlPGlMqrKb
        3fCFiT3eXehwR7nlzQIDAQABo3sweTAJBgNVHRMEAjAAMCwGCWCGSAGG+EIBDQQf
        Fh1PcGVuU1NMIEdlbmVyYXRlZCBDZXJ0aWZpY2F0ZTAdBgNVHQ4EFgQUnxR3vz86
        tso4gkJIFiza0Mteh9gwHwYDVR0jBBgwFoAUe5raj5CZTlLSrNuzA1LKh6YNPg0w
        DQYJKoZIhvcNAQEFBQADggEBAGuZb8ai1NO2j4v3y9TLZvd5s0vh5/TE7n7RX+8U
        y37OL5k7x9nt0mM1TyAKxlCcY+9h6frue8MemZIILSIvMrtzccqNz0V1WKgA+Orf
        uUrabmn+CxHF5gpy6g1Qs2IjVYWA5f7FROn/J+Ad8gJYc1azOWCLQqSyfpNRLSvY
        EriQFEV63XvkJ8JrG62b+2OT2lqT4OO07gSPetppdlSa8NBSKP6Aro9RIX1ZjUZQ
        SpQFCfo02NO0uNRDPUdJx2huycdNb+AXHaO7eXevDLJ+QnqImIzxWiY6zLOdzjjI
        VBMkLHmnP7SjGSQ3XA4ByrQOxfOUTyLyE7NuemhHppuQPxE=
        -----END CERTIFICATE-----
        """

    static let cnWildcardFoo = """
        -----BEGIN CERTIFICATE-----
        MIIESDCCAzCgAwIBAgIJAIz+EYMBU6aUMA0GCSqGSIb3DQEBBQUAMIGiMQswCQYD
        VQQGEwJDQTELMAkGA1UECBMCQkMxEjAQBgNVBAcTCVZhbmNvdXZlcjEWMBQGA1UE
        ChMNd3d3LmN1Y2JjLmNvbTEUMBIGA1UECxQLY29tbW9uc19zc2wxHTAbBgNVBAMU
        FGRlbW9faW50ZXJtZWRpYXRlX2NhMSUwIwYJKoZIhvcNAQkBFhZqdWxpdXNkYXZp
        ZXNAZ21haWwuY29tMB4XDTA2MTIxMTE2MTU1NVoXDTI4MTEwNTE2MTU1NVowgaYx
        CzAJBgNVBAYTAlVTMREwDwYDVQQIEwhNYXJ5bGFuZDEUMBIGA1UEBxMLRm9yZXN0
        IEhpbGwxFzAVBgNVBAoTDmh0dHBjb21wb25lbnRzMRowGAYDVQQLExF0ZXN0IGNl
        cnRpZmljYXRlczESMBAGA1UEAxQJKi5mb28uY29tMSUwIwYJKoZIhvcNAQkBFhZq
        dWxpdXNkYXZpZXNAZ21haWwuY29tMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIB
        CgKCAQEAyGOvloI+jKnRHWKuhYB+cTIEwZhagKJ0f3rIY8WNgujB7PlpgpjUg4pN
        jYGViGjg7zhfbjhCtlNGXyRBti3GcaHiBIIP5nyCNn+Ay8tSWGo5v5Zc8BQcwHf0
        ZHLN6sD9m2uVSp/6UqjS5ZyhzF5FzvvUo3xw8fecdnStXQfHhkBnLpTjHE5t7iu1
        JVjTuE0pcBvah2dWqDNxiIOQtXyKW8Sag1YxaunxQGqRNykSFiEJindxOSAnAxK6
        q/wGqcZ3zvFBTcVVkji1u2QH4rOMP3PPxAIMkB8ONkdHTco1DmbE6BfDHArDqUYx
        qJUlPGlMqrKb3fCFiT3eXehwR7nlzQIDAQABo3sweTAJBgNVHRMEAjAAMCwGCWCG
        SAGG+EIBDQQfFh1PcGVuU1NMIEdlbmVyYXRlZCBDZXJ0aWZpY2F0ZTAdBgNVHQ4E
        FgQUnxR3vz86tso4gkJIFiza0Mteh9gwHwYDVR0jBBgwFoAUe5raj5CZTlLSrNuz
        A1LKh6YNPg0wDQYJKoZIhvcNAQEFBQADggEBAH0ipG6J561UKUfgkeW7GvYwW98B
        N1ZooWX+JEEZK7+Pf/96d3Ij0rw9ACfN4bpfnCq0VUNZVSYB+GthQ2zYuz7tf/UY
        A6nxVgR/IjG69BmsBl92uFO7JTNtHztuiPqBn59pt+vNx4yPvno7zmxsfI7jv0ww
        yfs+0FNm7FwdsC1k47GBSOaGw38kuIVWqXSAbL4EX9GkryGGOKGNh0qvAENCdRSB
        G9Z6tyMbmfRY+dLSh3a9JwoEcBUso6EWYBakLbq4nG/nvYdYvG9ehrnLVwZFL82e
        l3Q/RK95bnA6cuRClGusLad0e6bjkBzx/VQ3VarDEpAkTLUGVAa0CLXtnyc=
        -----END CERTIFICATE-----
        """

    static let cnWildcardCoJp = """
        -----BEGIN CERTIFICATE-----
        MIIERjCCAy6gAwIBAgIJAIz+EYMBU6aVMA0GCSqGSIb3DQEBBQUAMIGiMQswCQYD
        VQQGEwJDQTELMAkGA1UECBMCQkMxEjAQBgNVBAcTCVZhbmNvdXZlcjEWMBQGA1UE
        ChMNd3d3LmN1Y2JjLmNvbTEUMBIGA1UECxQLY29tbW9uc19zc2wxHTAbBgNVBAMU
        FGRlbW9faW50ZXJtZWRpYXRlX2NhMSUwIwYJKoZIhvcNAQkBFhZqdWxpdXNkYXZp
        ZXNAZ21haWwuY29tMB4XDTA2MTIxMTE2MTYzMFoXDTI4MTEwNTE2MTYzMFowgaQx
        CzAJBgNVBAYTAlVTMREwDwYDVQQIEwhNYXJ5bGFuZDEUMBIGA1UEBxMLRm9yZXN0
        IEhpbGwxFzAVBgNVBAoTDmh0dHBjb21wb25lbnRzMRowGAYDVQQLExF0ZXN0IGNl
        cnRpZmljYXRlczEQMA4GA1UEAxQHKi5jby5qcDElMCMGCSqGSIb3DQEJARYWanVs
        aXVzZGF2aWVzQGdtYWlsLmNvbTCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoC
        ggEBAMhjr5aCPoyp0R1iroWAfnEyBMGYWoCidH96yGPFjYLowez5aYKY1IOKTY2B
        lYho4O84X244QrZTRl8kQbYtxnGh4gSCD+Z8gjZ/gMvLUlhqOb+WXPAUHMB39GRy
        zerA/ZtrlUqf+lKo0uWcocxeRc771KN8cPH3nHZ0rV0Hx4ZAZy6U4xxObe4rtSVY
        07hNKXAb2odnVqgzcYiDkLV8ilvEmoNWMWrp8UBqkTcpEhYhCYp3cTkgJwMSuqv8
        BqnGd87xQU3FVZI4tbtkB+KzjD9zz8QCDJAfDjZHR03KNQ5mxOgXwxwKw6lGMaiV
        JTxpTKqym93whYk93l3ocEe55c0CAwEAAaN7MHkwCQYDVR0TBAIwADAsBglghkgB
        hvhCAQ0EHxYdT3BlblNTTCBHZW5lcmF0ZWQgQ2VydGlmaWNhdGUwHQYDVR0OBBYE
        FJ8Ud78/OrbKOIJCSBYs2tDLXofYMB8GA1UdIwQYMBaAFHua2o+QmU5S0qzbswNS
        yoemDT4NMA0GCSqGSIb3DQEBBQUAA4IBAQA0sWglVlMx2zNGvUqFC73XtREwii53
        CfMM6mtf2+f3k/d8KXhLNySrg8RRlN11zgmpPaLtbdTLrmG4UdAHHYr8O4y2BBmE
        1cxNfGxxechgF8HX10QV4dkyzp6Z1cfwvCeMrT5G/V1pejago0ayXx+GPLbWlNeZ
        S+Kl0m3p+QplXujtwG5fYcIpaGpiYraBLx3Tadih39QN65CnAh/zRDhLCUzKyt9l
        UGPLEUDzRHMPHLnSqT1n5UU5UDRytbjJPXzF+l/+WZIsanefWLsxnkgAuZe/oMMF
        EJMryEzOjg4Tfuc5qM0EXoPcQ/JlheaxZ40p2IyHqbsWV4MRYuFH4bkM
        -----END CERTIFICATE-----
        """

    static let wildcardNonAsciiSubjectAlt = """
        -----BEGIN CERTIFICATE-----
        MIIEcDCCA1igAwIBAgIJAIz+EYMBU6aWMA0GCSqGSIb3DQEBBQUAMIGiMQswCQYD
        VQQGEwJDQTELMAkGA1UECBMCQkMxEjAQBgNVBAcTCVZhbmNvdXZlcjEWMBQGA1UE
        ChMNd3d3LmN1Y2JjLmNvbTEUMBIGA1UECxQLY29tbW9uc19zc2wxHTAbBgNVBAMU
        FGRlbW9faW50ZXJtZWRpYXRlX2NhMSUwIwYJKoZIhvcNAQkBFhZqdWxpdXNkYXZp
        ZXNAZ21haWwuY29tMB4XDTA2MTIxMTE2MTczMVoXDTI4MTEwNTE2MTczMVowgaYx
        CzAJBgNVBAYTAlVTMREwDwYDVQQIEwhNYXJ5bGFuZDEUMBIGA1UEBxMLRm9yZXN0
        IEhpbGwxFzAVBgNVBAoTDmh0dHBjb21wb25lbnRzMRowGAYDVQQLExF0ZXN0IGNl
        cnRpZmljYXRlczESMBAGA1UEAxQJKi5mb28uY29tMSUwIwYJKoZIhvcNAQkBFhZq
        dWxpdXNkYXZpZXNAZ21haWwuY29tMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIB
        CgKCAQEAyGOvloI+jKnRHWKuhYB+cTIEwZhagKJ0f3rIY8WNgujB7PlpgpjUg4pN
        jYGViGjg7zhfbjhCtlNGXyRBti3GcaHiBIIP5nyCNn+Ay8tSWGo5v5Zc8BQcwHf0
        ZHLN6sD9m2uVSp/6UqjS5ZyhzF5FzvvUo3xw8fecdnStXQfHhkBnLpTjHE5t7iu1
        JVjTuE0pcBvah2dWqDNxiIOQtXyKW8Sag1YxaunxQGqRNykSFiEJindxOSAnAxK6
        q/wGqcZ3zvFBTcVVkji1u2QH4rOMP3PPxAIMkB8ONkdHTco1DmbE6BfDHArDqUYx
        qJUlPGlMqrKb3fCFiT3eXehwR7nlzQIDAQABo4GiMIGfMAkGA1UdEwQCMAAwLAYJ
        YIZIAYb4QgENBB8WHU9wZW5TU0wgR2VuZXJhdGVkIENlcnRpZmljYXRlMB0GA1Ud
        DgQWBBSfFHe/Pzq2yjiCQkgWLNrQy16H2DAfBgNVHSMEGDAWgBR7mtqPkJlOUtKs
        27MDUsqHpg0+DTAkBgNVHREEHTAbggkqLmJhci5jb22CDiou6Iqx5a2QLmNvLmpw
        MA0GCSqGSIb3DQEBBQUAA4IBAQBobWC+D5/lx6YhX64CwZ26XLjxaE0S415ajbBq
        DK7lz+Rg7zOE3GsTAMi+ldUYnhyz0wDiXB8UwKXl0SDToB2Z4GOgqQjAqoMmrP0u
        WB6Y6dpkfd1qDRUzI120zPYgSdsXjHW9q2H77iV238hqIU7qCvEz+lfqqWEY504z
        hYNlknbUnR525ItosEVwXFBJTkZ3Yw8gg02c19yi8TAh5Li3Ad8XQmmSJMWBV4XK
        qFr0AIZKBlg6NZZFf/0dP9zcKhzSriW27bY0XfzA6GSiRDXrDjgXq6baRT6YwgIg
        pgJsDbJtZfHnV1nd3M6zOtQPm1TIQpNmMMMd/DPrGcUQerD3
        -----END CERTIFICATE-----
        """

    static let localDomainAndIp = """
        -----BEGIN CERTIFICATE-----
        MIIBWDCCAQKgAwIBAgIJANS1EtICX2AZMA0GCSqGSIb3DQEBBQUAMBQxEjAQBgNV
        BAMTCWxvY2FsaG9zdDAgFw0xMjAxMDIxOTA4NThaGA8yMTExMTIwOTE5MDg1OFow
        FDESMBAGA1UEAxMJbG9jYWxob3N0MFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAPpt
        atK8r4/hf4hSIs0os/BSlQLbRBaK9AfBReM4QdAklcQqe6CHsStKfI8pp0zs7Ptg
        PmMdpbttL0O7mUboBC8CAwEAAaM1MDMwMQYDVR0RBCowKIIVbG9jYWxob3N0Lmxv
        Y2FsZG9tYWlugglsb2NhbGhvc3SHBH8AAAEwDQYJKoZIhvcNAQEFBQADQQD0ntfL
        DCzOCv9Ma6Lv5o5jcYWVxvBSTsnt22hsJpWD1K7iY9lbkLwl0ivn73pG2evsAn9G
        X8YKH52fnHsCrhSD
        -----END CERTIFICATE-----
        """

    static let cnWildcardIp = """
        -----BEGIN CERTIFICATE-----
        MIIBkjCCATygAwIBAgIJAMdemqOwd/BEMA0GCSqGSIb3DQEBBQUAMBIxEDAOBgNV
        BAMUByouMC4wLjEwIBcNMTAxMjIwMTY0NDI1WhgPMjExMDExMjYxNjQ0MjVaMBIx
        EDAOBgNVBAMUByouMC4wLjEwXDANBgkqhkiG9w0BAQEFAANLADBIAkEAqY8c9Qrt
        YPWCvb7lclI+aDHM6fgbJcHsS9Zg8nUOh5dWrS7AgeA25wyaokFl4plBbbHQe2j+
        cCjsRiJIcQo9HwIDAQABo3MwcTAdBgNVHQ4EFgQUJ436TZPJvwCBKklZZqIvt1Yt
        JjEwQgYDVR0jBDswOYAUJ436TZPJvwCBKklZZqIvt1YtJjGhFqQUMBIxEDAOBgNV
        BAMUByouMC4wLjGCCQDHXpqjsHfwRDAMBgNVHRMEBTADAQH/MA0GCSqGSIb3DQEB
        BQUAA0EAk9i88xdjWoewqvE+iMC9tD2obMchgFDaHH0ogxxiRaIKeEly3g0uGxIt
        fl2WRY8hb4x+zRrwsFaLEpdEvqcjOQ==
        -----END CERTIFICATE-----
        """

    static let cnWildcardCom = """
        -----BEGIN CERTIFICATE-----
        MIIBjDCCATagAwIBAgIJAOVulXCSu6HuMA0GCSqGSIb3DQEBBQUAMBAxDjAMBgNV
        BAMUBSouY29tMCAXDTEwMTIyMDE2NDkzOFoYDzIxMTAxMTI2MTY0OTM4WjAQMQ4w
        DAYDVQQDFAUqLmNvbTBcMA0GCSqGSIb3DQEBAQUAA0sAMEgCQQDJd8xqni+h7Iaz
        ypItivs9kPuiJUqVz+SuJ1C05SFc3PmlRCvwSIfhyD67fHcbMdl+A/LrIjhhKZJe
        1joO0+pFAgMBAAGjcTBvMB0GA1UdDgQWBBS4Iuzf5w8JdCp+EtBfdFNudf6+YzBA
        BgNVHSMEOTA3gBS4Iuzf5w8JdCp+EtBfdFNudf6+Y6EUpBIwEDEOMAwGA1UEAxQF
        Ki5jb22CCQDlbpVwkruh7jAMBgNVHRMEBTADAQH/MA0GCSqGSIb3DQEBBQUAA0EA
        U6LFxmZr31lFyis2/T68PpjAppc0DpNQuA2m/Y7oTHBDi55Fw6HVHCw3lucuWZ5d
        qUYo4ES548JdpQtcLrW2sA==
        -----END CERTIFICATE-----
        """

    static let subjectAltBarBaz = """
        -----BEGIN CERTIFICATE-----
        MIIBPTCB6KADAgECAgkA7zoHaaqNGHQwDQYJKoZIhvcNAQEFBQAwEjEQMA4GA1UE
        AxMHZm9vLmNvbTAgFw0xMDEyMjAxODM5MzZaGA8yMTEwMTEyNjE4MzkzNlowEjEQ
        MA4GA1UEAxMHZm9vLmNvbTBcMA0GCSqGSIb3DQEBAQUAA0sAMEgCQQC+gmoSxF+8
        hbV+rgRQqHIJd50216OWQJbU3BvdlPbca779NYO4+UZWTFdBM8BdQqs3H4B5Agvp
        y7HeSff1F7XRAgMBAAGjHzAdMBsGA1UdEQQUMBKCB2Jhci5jb22CB2Jhei5jb20w
        DQYJKoZIhvcNAQEFBQADQQBXpZZPOY2Dy1lGG81JTr8L4or9jpKacD7n51eS8iqI
        oTznPNuXHU5bFN0AAGX2ij47f/EahqTpo5RdS95P4sVm
        -----END CERTIFICATE-----
        """

    static let subjectAltBarWildcardBaz = """
        -----BEGIN CERTIFICATE-----
        MIIBPzCB6qADAgECAgkAnv/7Jv5r7pMwDQYJKoZIhvcNAQEFBQAwEjEQMA4GA1UE
        AxMHZm9vLmNvbTAgFw0xMDEyMjAxODQ2MDFaGA8yMTEwMTEyNjE4NDYwMVowEjEQ
        MA4GA1UEAxMHZm9vLmNvbTBcMA0GCSqGSIb3DQEBAQUAA0sAMEgCQQDAz2YXnyog
        YdYLSFr/OEgSumtwqtZKJTB4wqTW/eKbBCEzxnyUMxWZIqUGu353PzwfOuWp2re3
        nvVV+QDYQlh9AgMBAAGjITAfMB0GA1UdEQQWMBSCB2Jhci5jb22CCSouYmF6LmNv
        bTANBgkqhkiG9w0BAQUFAANBAB8yrSl8zqy07i0SNYx2B/FnvQY734pxioaqFWfO
        Bqo1ZZl/9aPHEWIwBrxYNVB0SGu/kkbt/vxqOjzzrkXukmI=
        -----END CERTIFICATE-----
        """

    static let subjectAltIPAddresses = """
        -----BEGIN CERTIFICATE-----
        MIIBaDCCARKgAwIBAgIJALxN+AOBVGwQMA0GCSqGSIb3DQEBCwUAMBIxEDAOBgNV
        BAMMB2Zvby5jb20wIBcNMjAwMzIyMTEwNDI4WhgPMjEyMDAyMjcxMTA0MjhaMBIx
        EDAOBgNVBAMMB2Zvby5jb20wXDANBgkqhkiG9w0BAQEFAANLADBIAkEAlnVbVfQ9
        4aYjrPCcFuxOpjXuvyOc9Hcha4K7TfXyfsrjhAvCjCBIT/TiLOUVF3sx4yoCAtX8
        wmt404tTbKD6UwIDAQABo0kwRzBFBgNVHREEPjA8hxAAAAAAAAAAAAAAAAAAAAAB
        hxAqAyiA8AMMB/rOsAwAAAAChxAAAAAAAAAAAAAAAAAAAAAFhwTAqAEBMA0GCSqG
        SIb3DQEBCwUAA0EAPSOYHJh7hB4ElBqTCAFW+T5Y7mXsv9nQjBJ7w0YIw83V2PEI
        3KbBIyGTrqHD6lG8QGZy+yNkIcRlodG8OfQRUg==
        -----END CERTIFICATE-----
        """

    static let specialKExternal = """
        -----BEGIN CERTIFICATE-----
        MIIBSDCB86ADAgECAhRLR4TGgXBegg0np90FZ1KPeWpDtjANBgkqhkiG9w0BAQsF
        ADASMRAwDgYDVQQDDAdmb28uY29tMCAXDTIwMTAyOTA2NTkwNVoYDzIxMjAxMDA1
        MDY1OTA1WjASMRAwDgYDVQQDDAdmb28uY29tMFwwDQYJKoZIhvcNAQEBBQADSwAw
        SAJBALQcTVW9aW++ClIV9/9iSzijsPvQGEu/FQOjIycSrSIheZyZmR8bluSNBq0C
        9fpalRKZb0S2tlCTi5WoX8d3K30CAwEAAaMfMB0wGwYDVR0RBBQwEoIH4oShLmNv
        bYIH4oSqLmNvbTANBgkqhkiG9w0BAQsFAANBAA1+/eDvSUGv78iEjNW+1w3OPAwt
        Ij1qLQ/YI8OogZPMk7YY46/ydWWp7UpD47zy/vKmm4pOc8Glc8MoDD6UADs=
        -----END CERTIFICATE-----
        """
}
