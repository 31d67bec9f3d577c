import NIOSSL
import SwiftASN1
import Testing
import X509

@testable import Courier

/// Go's host name tests (go1.19.8, `crypto/x509/x509_test.go` and `verify_test.go`, BSD-style
/// licence), against ``HostnameMatcher``, the SSL policy's name check: `matchHostnamesTests`
/// (Go puts the pattern in a certificate's DNS names and calls `VerifyHostname`, as here:
/// `names: [.dns(pattern)]`), `TestMatchIP`, and the host-name rows of `verifyTests` (their leaf
/// certificates, the names read from them, the host checked; the chain part is not ported).
///
/// Where Courier answers otherwise than Go on purpose, the row asserts Courier's answer, and says
/// Go's and the rule Courier follows instead (``HostnameMatcher``'s, as `SecTrust`'s
/// `SecDNSMatch`): a deviation that disappears fails the test.
@Suite("Go's host name tests")
struct GoHostnameTests {
    /// One of Go's `matchHostnamesTests`: `ok` is Courier's answer; `deviation`, where Go's is the
    /// opposite, names the rule that decides.
    struct MatchCase: Sendable, CustomTestStringConvertible {
        let pattern: String
        let host: String
        let ok: Bool
        let deviation: Deviation?

        init(_ pattern: String, _ host: String, _ ok: Bool, _ deviation: Deviation? = nil) {
            self.pattern = pattern
            self.host = host
            self.ok = ok
            self.deviation = deviation
        }

        var testDescription: String { "\(self.pattern) ~ \(self.host)" }
    }

    /// Why Courier's answer is not Go's.
    enum Deviation: Sendable {
        /// A name or host with an empty label names nothing (RFC 1034 3.1: only the root's label is
        /// empty); Go matches any name exactly when it is not a valid host name.
        case emptyLabel
        /// A presented name ending in a dot names no host (`SecDNSMatch` strips the dot from the
        /// host only); Go lets "perfect matches allow trailing dots in patterns".
        case presentedTrailingDot
        /// A `*` needs at least two labels after it (`SecDNSMatch`: more than two labels); Go's
        /// `*.com` matches `example.com`.
        case wildcardOverOneLabel
        /// The `*` stands for any one non-empty label, the host is not checked to be a DNS name
        /// (`SecDNSMatch` splits both on dots and compares labels); Go applies a wildcard only to a
        /// valid host name (issue 27591), and a URL is none.
        case wildcardOverAnyLabel
    }

    static let matchHostnamesTests: [MatchCase] = [
        MatchCase("a.b.c", "a.b.c", true),
        MatchCase("a.b.c", "b.b.c", false),
        MatchCase("", "b.b.c", false),
        MatchCase("a.b.c", "", false),
        MatchCase("example.com", "example.com", true),
        MatchCase("example.com", "www.example.com", false),
        MatchCase("*.example.com", "example.com", false),
        MatchCase("*.example.com", "www.example.com", true),
        MatchCase("*.example.com", "www.example.com.", true),
        MatchCase("*.example.com", "xyz.www.example.com", false),
        MatchCase("*.example.com", "https://www.example.com", true, .wildcardOverAnyLabel),  // Issue 27591
        MatchCase("*.example..com", "www.example..com", false),
        MatchCase("www.example..com", "www.example..com", false, .emptyLabel),
        MatchCase("*.*.example.com", "xyz.www.example.com", false),
        MatchCase("*.www.*.com", "xyz.www.example.com", false),
        MatchCase("*bar.example.com", "foobar.example.com", false),
        MatchCase("f*.example.com", "foobar.example.com", false),
        MatchCase("www.example.com", "*.example.com", false),
        MatchCase("", ".", false),
        MatchCase(".", "", false),
        MatchCase(".", ".", false),
        MatchCase("example.com", "example.com.", true),
        MatchCase("example.com.", "example.com", false),
        MatchCase("example.com.", "example.com.", false, .presentedTrailingDot),  // perfect matches allow trailing dots in patterns
        MatchCase("*.com.", "example.com.", false),
        MatchCase("*.com.", "example.com", false),
        MatchCase("*.com", "example.com", false, .wildcardOverOneLabel),
        MatchCase("*.com", "example.com.", false, .wildcardOverOneLabel),
        MatchCase("foo:bar", "foo:bar", true),
        MatchCase("*.foo:bar", "xxx.foo:bar", false),
        MatchCase("*.2.3.4", "1.2.3.4", false),
        MatchCase("*.2.3.4", "[1.2.3.4]", false),
        MatchCase("*:4860:4860::8888", "2001:4860:4860::8888", false),
        MatchCase("*:4860:4860::8888", "[2001:4860:4860::8888]", false),
        MatchCase("2001:4860:4860::8888", "2001:4860:4860::8888", false),
        MatchCase("2001:4860:4860::8888", "[2001:4860:4860::8888]", false),
        MatchCase("[2001:4860:4860::8888]", "2001:4860:4860::8888", false),
        MatchCase("[2001:4860:4860::8888]", "[2001:4860:4860::8888]", false),
    ]

    @Test func theTableIsGosWhole() {
        #expect(Self.matchHostnamesTests.count == 38)
        #expect(Self.matchHostnamesTests.filter { $0.deviation != nil }.count == 5)
    }

    /// `TestMatchHostnames`.
    @Test(arguments: Self.matchHostnamesTests)
    func matchHostnames(_ test: MatchCase) {
        #expect(HostnameMatcher.matches(host: test.host, names: [.dns(test.pattern)]) == test.ok)
    }

    @Test func matchIP() {
        // Check that pattern matching is working.
        #expect(HostnameMatcher.matches(host: "quux.foo.bar.baz", names: [.dns("*.foo.bar.baz")]))
        // But check that if we change it to be matching against an IP address, it is rejected.
        #expect(!HostnameMatcher.matches(host: "1.2.3.4", names: [.dns("*.2.3.4")]))
        let names: [HostnameMatcher.Name] = [.ip([127, 0, 0, 1]), .ip(Array(repeating: 0, count: 15) + [1])]
        #expect(HostnameMatcher.matches(host: "127.0.0.1", names: names))
        #expect(HostnameMatcher.matches(host: "::1", names: names))
        #expect(HostnameMatcher.matches(host: "[::1]", names: names))
    }

    // MARK: verifyTests, the host name of each

    /// The names of a leaf of Go's, as both of Courier's readers give them (swift-certificates',
    /// which the SSL policy uses, and swift-nio-ssl's).
    static func names(_ pem: String) throws -> [HostnameMatcher.Name] {
        let parsed = HostnameMatcher.names(of: try X509.Certificate(pemEncoded: pem))
        let fromNIO = HostnameMatcher.names(of: try NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem))
        #expect(parsed == fromNIO)
        return parsed
    }

    /// `Valid`, `MixedCase`, `HostnameMismatch` and `IPMissing`: Google's leaf, for `www.google.com`.
    @Test func googleLeafNames() throws {
        let names = try Self.names(Self.googleLeaf)
        #expect(names == [.dns("www.google.com")])
        #expect(HostnameMatcher.matches(host: "www.google.com", names: names))  // Valid
        #expect(HostnameMatcher.matches(host: "WwW.GooGLE.coM", names: names))  // MixedCase
        #expect(!HostnameMatcher.matches(host: "www.example.com", names: names))  // HostnameMismatch
        #expect(!HostnameMatcher.matches(host: "1.2.3.4", names: names))  // IPMissing
    }

    /// `LeafInRoots` and `LeafInRootsInvalid`: a self-signed leaf for `foo.example`.
    @Test func leafInRoots() throws {
        let names = try Self.names(Self.selfSigned)
        #expect(names == [.dns("foo.example")])
        #expect(HostnameMatcher.matches(host: "foo.example", names: names))  // LeafInRoots
        #expect(!HostnameMatcher.matches(host: "notfoo.example", names: names))  // LeafInRootsInvalid
    }

    /// `IgnoreCNWithSANs`: the common name is `foo.example.com`, the only subject alternative name
    /// an IP address; the common name does not count.
    @Test func ignoreCNWithSANs() throws {
        let names = try Self.names(Self.ignoreCNWithSANLeaf)
        #expect(names == [.ip([127, 0, 0, 1])])
        #expect(!HostnameMatcher.matches(host: "foo.example.com", names: names))
    }

    /// `ValidCN`: a leaf with only a common name, `foo.example.com`; no fallback to it (Go: "certificate
    /// relies on legacy Common Name field").
    @Test func validCN() throws {
        let names = try Self.names(Self.validCNWithoutSAN)
        #expect(names.isEmpty)
        #expect(!HostnameMatcher.matches(host: "foo.example.com", names: names))
    }

    static let googleLeaf = """
        -----BEGIN CERTIFICATE-----
        MIIFUjCCBDqgAwIBAgIQERmRWTzVoz0SMeozw2RM3DANBgkqhkiG9w0BAQsFADBG
        MQswCQYDVQQGEwJVUzEiMCAGA1UEChMZR29vZ2xlIFRydXN0IFNlcnZpY2VzIExM
        QzETMBEGA1UEAxMKR1RTIENBIDFDMzAeFw0yMzAxMDIwODE5MTlaFw0yMzAzMjcw
        ODE5MThaMBkxFzAVBgNVBAMTDnd3dy5nb29nbGUuY29tMIIBIjANBgkqhkiG9w0B
        AQEFAAOCAQ8AMIIBCgKCAQEAq30odrKMT54TJikMKL8S+lwoCMT5geP0u9pWjk6a
        wdB6i3kO+UE4ijCAmhbcZKeKaLnGJ38weZNwB1ayabCYyX7hDiC/nRcZU49LX5+o
        55kDVaNn14YKkg2kCeX25HDxSwaOsNAIXKPTqiQL5LPvc4Twhl8HY51hhNWQrTEr
        N775eYbixEULvyVLq5BLbCOpPo8n0/MTjQ32ku1jQq3GIYMJC/Rf2VW5doF6t9zs
        KleflAN8OdKp0ME9OHg0T1P3yyb67T7n0SpisHbeG06AmQcKJF9g/9VPJtRf4l1Q
        WRPDC+6JUqzXCxAGmIRGZ7TNMxPMBW/7DRX6w8oLKVNb0wIDAQABo4ICZzCCAmMw
        DgYDVR0PAQH/BAQDAgWgMBMGA1UdJQQMMAoGCCsGAQUFBwMBMAwGA1UdEwEB/wQC
        MAAwHQYDVR0OBBYEFBnboj3lf9+Xat4oEgo6ZtIMr8ZuMB8GA1UdIwQYMBaAFIp0
        f6+Fze6VzT2c0OJGFPNxNR0nMGoGCCsGAQUFBwEBBF4wXDAnBggrBgEFBQcwAYYb
        aHR0cDovL29jc3AucGtpLmdvb2cvZ3RzMWMzMDEGCCsGAQUFBzAChiVodHRwOi8v
        cGtpLmdvb2cvcmVwby9jZXJ0cy9ndHMxYzMuZGVyMBkGA1UdEQQSMBCCDnd3dy5n
        b29nbGUuY29tMCEGA1UdIAQaMBgwCAYGZ4EMAQIBMAwGCisGAQQB1nkCBQMwPAYD
        VR0fBDUwMzAxoC+gLYYraHR0cDovL2NybHMucGtpLmdvb2cvZ3RzMWMzL1FPdkow
        TjFzVDJBLmNybDCCAQQGCisGAQQB1nkCBAIEgfUEgfIA8AB2AHoyjFTYty22IOo4
        4FIe6YQWcDIThU070ivBOlejUutSAAABhXHHOiUAAAQDAEcwRQIgBUkikUIXdo+S
        3T8PP0/cvokhUlumRE3GRWGL4WRMLpcCIQDY+bwK384mZxyXGZ5lwNRTAPNzT8Fx
        1+//nbaGK3BQMAB2AOg+0No+9QY1MudXKLyJa8kD08vREWvs62nhd31tBr1uAAAB
        hXHHOfQAAAQDAEcwRQIgLoVydNfMFKV9IoZR+M0UuJ2zOqbxIRum7Sn9RMPOBGMC
        IQD1/BgzCSDTvYvco6kpB6ifKSbg5gcb5KTnYxQYwRW14TANBgkqhkiG9w0BAQsF
        AAOCAQEA2bQQu30e3OFu0bmvQHmcqYvXBu6tF6e5b5b+hj4O+Rn7BXTTmaYX3M6p
        MsfRH4YVJJMB/dc3PROR2VtnKFC6gAZX+RKM6nXnZhIlOdmQnonS1ecOL19PliUd
        VXbwKjXqAO0Ljd9y9oXaXnyPyHmUJNI5YXAcxE+XXiOZhcZuMYyWmoEKJQ/XlSga
        zWfTn1IcKhA3IC7A1n/5bkkWD1Xi1mdWFQ6DQDMp//667zz7pKOgFMlB93aPDjvI
        c78zEqNswn6xGKXpWF5xVwdFcsx9HKhJ6UAi2bQ/KQ1yb7LPUOR6wXXWrG1cLnNP
        i8eNLnKL9PXQ+5SwJFCzfEhcIZuhzg==
        -----END CERTIFICATE-----
        """

    static let selfSigned = """
        -----BEGIN CERTIFICATE-----
        MIIC/DCCAeSgAwIBAgIRAK0SWRVmi67xU3z0gkgY+PkwDQYJKoZIhvcNAQELBQAw
        EjEQMA4GA1UEChMHQWNtZSBDbzAeFw0xNjA4MTkxNjMzNDdaFw0xNzA4MTkxNjMz
        NDdaMBIxEDAOBgNVBAoTB0FjbWUgQ28wggEiMA0GCSqGSIb3DQEBAQUAA4IBDwAw
        ggEKAoIBAQDWkm1kdCwxyKEt6OTmZitkmLGH8cQu9z7rUdrhW8lWNm4kh2SuaUWP
        pscBjda5iqg51aoKuWJR2rw6ElDne+X5eit2FT8zJgAU8v39lMFjbaVZfS9TFOYF
        w0Tk0Luo/PyKJpZnwhsP++iiGQiteJbndy8aLKmJ2MpLfpDGIgxEIyNb5dgoDi0D
        WReDCpE6K9WDYqvKVGnQ2Jvqqra6Gfx0tFkuqJxQuqA8aUOlPHcCH4KBZdNEoXdY
        YL3E4dCAh0YiDs80wNZx4cHqEM3L8gTEFqW2Tn1TSuPZO6gjJ9QPsuUZVjaMZuuO
        NVxqLGujZkDzARhC3fBpptMuaAfi20+BAgMBAAGjTTBLMA4GA1UdDwEB/wQEAwIF
        oDATBgNVHSUEDDAKBggrBgEFBQcDATAMBgNVHRMBAf8EAjAAMBYGA1UdEQQPMA2C
        C2Zvby5leGFtcGxlMA0GCSqGSIb3DQEBCwUAA4IBAQBPvvfnDhsHWt+/cfwdAVim
        4EDn+hYOMkTQwU0pouYIvY8QXYkZ8MBxpBtBMK4JhFU+ewSWoBAEH2dCCvx/BDxN
        UGTSJHMbsvJHcFvdmsvvRxOqQ/cJz7behx0cfoeHMwcs0/vWv8ms5wHesb5Ek7L0
        pl01FCBGTcncVqr6RK1r4fTpeCCfRIERD+YRJz8TtPH6ydesfLL8jIV40H8NiDfG
        vRAvOtNiKtPzFeQVdbRPOskC4rcHyPeiDAMAMixeLi63+CFty4da3r5lRezeedCE
        cw3ESZzThBwWqvPOtJdpXdm+r57pDW8qD+/0lY8wfImMNkQAyCUCLg/1Lxt/hrBj
        -----END CERTIFICATE-----
        """

    static let ignoreCNWithSANLeaf = """
        -----BEGIN CERTIFICATE-----
        MIIDaTCCAlGgAwIBAgIJAONakvRTxgJhMA0GCSqGSIb3DQEBCwUAMDAxEDAOBgNV
        BAoTB1RFU1RJTkcxHDAaBgNVBAMTEyoqVGVzdGluZyoqIFJvb3QgQ0EwHhcNMTUw
        MTAxMDAwMDAwWhcNMjUwMTAxMDAwMDAwWjAsMRAwDgYDVQQKEwdURVNUSU5HMRgw
        FgYDVQQDEw9mb28uZXhhbXBsZS5jb20wggEiMA0GCSqGSIb3DQEBAQUAA4IBDwAw
        ggEKAoIBAQDBqskp89V/JMIBBqcauKSOVLcMyIE/t0jgSWVrsI4sksBTabLsfMdS
        ui2n+dHQ1dRBuw3o4g4fPrWwS3nMnV3pZUHEn2TPi5N1xkjTaxObXgKIY2GKmFP3
        rJ9vYqHT6mT4K93kCHoRcmJWWySc7S3JAOhTcdB4G+tIdQJN63E+XRYQQfNrn5HZ
        hxQoOzaguHFx+ZGSD4Ntk6BSZz5NfjqCYqYxe+iCpTpEEYhIpi8joSPSmkTMTxBW
        S1W2gXbYNQ9KjNkGM6FnQsUJrSPMrWs4v3UB/U88N5LkZeF41SqD9ySFGwbGajFV
        nyzj12+4K4D8BLhlOc0Eo/F/8GwOwvmxAgMBAAGjgYkwgYYwDgYDVR0PAQH/BAQD
        AgWgMB0GA1UdJQQWMBQGCCsGAQUFBwMBBggrBgEFBQcDAjAMBgNVHRMBAf8EAjAA
        MBkGA1UdDgQSBBCjeab27q+5pV43jBGANOJ1MBsGA1UdIwQUMBKAEEA31wH7QC+4
        HH5UBCeMWQEwDwYDVR0RBAgwBocEfwAAATANBgkqhkiG9w0BAQsFAAOCAQEAGZfZ
        ErTVxxpIg64s22mQpXSk/72THVQsfsKHzlXmztM0CJzH8ccoN67ZqKxJCfdiE/FI
        Emb6BVV4cGPeIKpcxaM2dwX/Y+Y0JaxpQJvqLxs+EByRL0gPP3shgg86WWCjYLxv
        AgOn862d/JXGDrC9vIlQ/DDQcyL5g0JV5UjG2G9TUigbnrXxBw7BoWK6wmoSaHnR
        sZKEHSs3RUJvm7qqpA9Yfzm9jg+i9j32zh1xFacghAOmFRFXa9eCVeigZ/KK2mEY
        j2kBQyvnyKsXHLAKUoUOpd6t/1PHrfXnGj+HmzZNloJ/BZ1kiWb4eLvMljoLGkZn
        xZbqP3Krgjj4XNaXjg==
        -----END CERTIFICATE-----
        """

    static let validCNWithoutSAN = """
        -----BEGIN CERTIFICATE-----
        MIIBJzCBzwIUB7q8t9mrDAL+UB1OFaMN5BEWFKQwCgYIKoZIzj0EAwIwFDESMBAG
        A1UECwwJVGVzdCByb290MB4XDTE4MDcxMTE4NDcyNFoXDTI4MDcwODE4NDcyNFow
        GjEYMBYGA1UEAwwPZm9vLmV4YW1wbGUuY29tMFkwEwYHKoZIzj0CAQYIKoZIzj0D
        AQcDQgAEp6Z8IjOnR38Iky1fYTUu2kVndvKXcxiwARJKGtW3b0E8uwVp9AZd/+sr
        p4ULTPdFToFAeqnGHbu62bkms8pQkDAKBggqhkjOPQQDAgNHADBEAiBTbNe3WWFR
        cqUYo0sNUuoV+tCTMDJUS+0PWIW4qBqCOwIgFHdLDn5PCk9kJpfc0O2qZx03hdq0
        h7olHCpY9yMRiz0=
        -----END CERTIFICATE-----
        """
}
