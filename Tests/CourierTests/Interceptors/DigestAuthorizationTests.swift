import Testing

@testable import Courier

@Suite("Interceptors: Digest and Basic Authorization values")
struct DigestAuthorizationTests {
    /// RFC 7616 §3.9.1: "Mufasa" / "Circle of Life", GET /dir/index.html.
    static func rfc7616Challenge(algorithm: String) -> HTTPChallenge {
        HTTPChallenge.parse([
            #"Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=\#(algorithm), nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#
        ])[0]
    }

    static let mufasa = HTTPCredential(user: "Mufasa", password: "Circle of Life")
    static let cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"

    @Test("RFC 7616 §3.9.1, MD5 and SHA-256: the responses of the RFC")
    func rfc7616() throws {
        for (algorithm, response) in [
            ("MD5", "8ca523f5e9506fed4657c9700eebdbec"), ("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
        ] {
            let challenge = try #require(HTTPAuthorization.DigestChallenge(Self.rfc7616Challenge(algorithm: algorithm)))
            #expect(challenge.qop == "auth")
            let value = HTTPAuthorization.digest(
                challenge, credential: Self.mufasa, method: "GET", uri: "/dir/index.html", nonceCount: 1, cnonce: Self.cnonce)
            #expect(
                value
                    == "Digest username=\"Mufasa\", realm=\"http-auth@example.org\", uri=\"/dir/index.html\", algorithm=\(algorithm), "
                    + "nonce=\"7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v\", nc=00000001, cnonce=\"\(Self.cnonce)\", qop=auth, "
                    + "response=\"\(response)\", opaque=\"FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS\"")
        }
    }

    /// A user name with a control character goes as `username*` (RFC 7616 3.4.4, RFC 8187): the
    /// value has no CR or LF to end its field with. Before, it was quoted as it was, and a proxy's
    /// user `ann\r\nX-Evil: 1` (from `http://ann%0D%0AX-Evil:%201:pw@proxy`) wrote a field of
    /// its own into the `CONNECT`.
    @Test func aUserNameWithAControlCharacterIsEncoded() throws {
        let challenge = try #require(HTTPAuthorization.DigestChallenge(Self.rfc7616Challenge(algorithm: "SHA-256")))
        let value = HTTPAuthorization.digest(
            challenge, credential: HTTPCredential(user: "ann\r\nX-Evil: 1", password: "pw"), method: "CONNECT", uri: "h:443", nonceCount: 1,
            cnonce: Self.cnonce)
        #expect(value.hasPrefix("Digest username*=UTF-8''ann%0D%0AX-Evil%3A%201, realm="), "\(value)")
        #expect(!value.contains("\r") && !value.contains("\n"))
        let connect = HTTPConnectStateMachine.request(host: "h", port: 443, authorization: value)
        #expect(!connect.contains("\r\nX-Evil"))
        // A name past ASCII stays quoted, as before.
        let unicode = HTTPAuthorization.digest(
            challenge, credential: HTTPCredential(user: "Jäsøn", password: "pw"), method: "GET", uri: "/", nonceCount: 1, cnonce: Self.cnonce)
        #expect(unicode.hasPrefix("Digest username=\"Jäsøn\""))
    }

    @Test("RFC 2617 §3.5's example (MD5, qop=auth), and the -sess variants (checked with Python's hashlib)")
    func rfc2617AndSessions() throws {
        let challenge = try #require(
            HTTPAuthorization.DigestChallenge(
                HTTPChallenge.parse([
                    #"Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41""#
                ])[0]))
        #expect(challenge.algorithm.name == "MD5")
        let value = HTTPAuthorization.digest(
            challenge, credential: HTTPCredential(user: "Mufasa", password: "Circle Of Life"), method: "GET", uri: "/dir/index.html",
            nonceCount: 1, cnonce: "0a4f113b")
        #expect(value.contains("response=\"6629fae49393a05397450978507c4ef1\""))
        for (algorithm, response) in [
            ("MD5-sess", "e783283f46242139c486a698fec7211d"), ("SHA-256-sess", "2fd51b3a77ad75bad6afad6003e818d767133c46d9e2749e7f5232ae1ea3efd7"),
        ] {
            let session = try #require(HTTPAuthorization.DigestChallenge(Self.rfc7616Challenge(algorithm: algorithm)))
            let value = HTTPAuthorization.digest(
                session, credential: Self.mufasa, method: "GET", uri: "/dir/index.html", nonceCount: 1, cnonce: Self.cnonce)
            #expect(value.contains("response=\"\(response)\""), "\(algorithm)")
            #expect(value.contains("algorithm=\(algorithm)"))
        }
    }

    @Test("Challenges Courier cannot answer are refused: auth-int only, SHA-512-256, no nonce")
    func unanswerable() {
        #expect(HTTPAuthorization.DigestChallenge(HTTPChallenge.parse([#"Digest realm="r", nonce="n", qop="auth-int""#])[0]) == nil)
        #expect(HTTPAuthorization.DigestChallenge(HTTPChallenge.parse([#"Digest realm="r", nonce="n", algorithm=SHA-512-256"#])[0]) == nil)
        #expect(HTTPAuthorization.DigestChallenge(HTTPChallenge.parse([#"Digest realm="r""#])[0]) == nil)
        // No qop at all (RFC 2069): answered without nc and cnonce.
        let old = HTTPAuthorization.DigestChallenge(HTTPChallenge.parse([#"Digest realm="r", nonce="n""#])[0])
        #expect(old?.qop == nil)
        if let old {
            let value = HTTPAuthorization.digest(old, credential: Self.mufasa, method: "GET", uri: "/", nonceCount: 1, cnonce: "c")
            #expect(!value.contains("nc=") && !value.contains("cnonce="))
        }
    }

    @Test("Basic: RFC 7617's example, and UTF-8")
    func basic() {
        #expect(HTTPAuthorization.basic(HTTPCredential(user: "Aladdin", password: "open sesame")) == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==")
        #expect(HTTPAuthorization.basic(HTTPCredential(user: "test", password: "123£")) == "Basic dGVzdDoxMjPCow==")
    }
}
