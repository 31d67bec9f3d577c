import Testing

@testable import Courier

@Suite("Interceptors: WWW-Authenticate parsing (RFC 9110 §11.6.1)")
struct HTTPChallengeTests {
    @Test("RFC 9110's example: two challenges in one field, a quoted string with escapes")
    func rfc9110Example() {
        let challenges = HTTPChallenge.parse([#"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple""#])
        #expect(challenges.count == 2)
        #expect(challenges[0].scheme == "Newauth")
        #expect(challenges[0].parameters == ["realm": "apps", "type": "1", "title": #"Login to "apps""#])
        #expect(challenges[1].hasScheme("basic"))
        #expect(challenges[1].realm == "simple")
    }

    @Test("Several fields, token68, bare schemes, parameter names in any case, spaces around '='")
    func forms() {
        let challenges = HTTPChallenge.parse([
            "Negotiate abc+/DEF==, Bearer", #"Digest Realm = "x" ,  NONCE=abc, qop="auth,auth-int""#,
        ])
        #expect(challenges.map(\.scheme) == ["Negotiate", "Bearer", "Digest"])
        #expect(challenges[0].token68 == "abc+/DEF==")
        #expect(challenges[1].parameters.isEmpty && challenges[1].token68 == nil)
        #expect(challenges[2].parameters == ["realm": "x", "nonce": "abc", "qop": "auth,auth-int"])
    }

    @Test("Malformed values give what parsed before the fault, never a guess")
    func malformed() {
        #expect(HTTPChallenge.parse([""]).isEmpty)
        #expect(HTTPChallenge.parse([#"Basic realm="unterminated"#]).map(\.parameters) == [[:]])
        #expect(HTTPChallenge.parse(["=oops"]).isEmpty)
        #expect(HTTPChallenge.parse([#"Basic realm="a" "garbage""#]).map(\.realm) == ["a"])
    }
}
