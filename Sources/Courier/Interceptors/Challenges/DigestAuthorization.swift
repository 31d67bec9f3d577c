import Foundation
import Crypto

/// The `Authorization` values of HTTP Basic (RFC 7617) and Digest (RFC 7616) authentication.
enum HTTPAuthorization {
    /// `Basic <base64(user:password)>`, UTF-8 (RFC 7617 §2.1 with `charset="UTF-8"`).
    static func basic(_ credential: HTTPCredential) -> String {
        "Basic " + Data("\(credential.user):\(credential.password)".utf8).base64EncodedString()
    }

    /// A Digest algorithm: the hash and whether it is a `-sess` variant.
    struct DigestAlgorithm: Hashable {
        enum Hash: Hashable { case md5, sha256 }
        var hash: Hash
        var session: Bool

        /// MD5 when the challenge names none; nil for one Courier does not implement (SHA-512-256).
        init?(_ name: String?) {
            // A token, in ASCII case (`uppercased()` would make `ſha-256`, with U+017F, `SHA-256`).
            switch (name ?? "md5").lowercasedASCII {
            case "md5": (self.hash, self.session) = (.md5, false)
            case "md5-sess": (self.hash, self.session) = (.md5, true)
            case "sha-256": (self.hash, self.session) = (.sha256, false)
            case "sha-256-sess": (self.hash, self.session) = (.sha256, true)
            default: return nil
            }
        }

        var name: String {
            (self.hash == .md5 ? "MD5" : "SHA-256") + (self.session ? "-sess" : "")
        }

        /// Preference among algorithms a server offers at once: SHA-256 first.
        var strength: Int { self.hash == .sha256 ? 2 : 1 }

        func digest(_ text: String) -> String {
            switch self.hash {
            // swift-crypto's (BoringSSL's), already built for swift-certificates.
            case .md5: Insecure.MD5.hash(data: Array(text.utf8)).lowercaseHex
            case .sha256: Crypto.SHA256.hash(data: Array(text.utf8)).lowercaseHex
            }
        }
    }

    /// What a Digest challenge asks for, when Courier can answer it (`qop` absent, as in RFC 2069,
    /// or offering `auth`).
    struct DigestChallenge: Hashable {
        var realm: String
        var nonce: String
        var opaque: String?
        var algorithm: DigestAlgorithm
        /// `auth` when the server offered it; nil when it named no `qop`.
        var qop: String?
        var userhash: Bool
        var stale: Bool
        /// The `domain` URIs, when given: the protection space.
        var domain: [String]

        init?(_ challenge: HTTPChallenge) {
            guard challenge.hasScheme("Digest"), let realm = challenge.parameters["realm"], let nonce = challenge.parameters["nonce"],
                let algorithm = DigestAlgorithm(challenge.parameters["algorithm"])
            else { return nil }
            if let offered = challenge.parameters["qop"] {
                let options = offered.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercasedASCII }
                guard options.contains("auth") else { return nil }
                self.qop = "auth"
            } else {
                self.qop = nil
            }
            self.realm = realm
            self.nonce = nonce
            self.opaque = challenge.parameters["opaque"]
            self.algorithm = algorithm
            self.userhash = challenge.parameters["userhash"]?.equalsLowercased("true") == true
            self.stale = challenge.parameters["stale"]?.equalsLowercased("true") == true
            self.domain = (challenge.parameters["domain"] ?? "").split(separator: " ").map(String.init)
        }
    }

    /// The `Authorization` value answering `challenge` for a request `method uri` (RFC 7616 §3.4).
    /// - Parameters:
    ///   - uri: The request target as sent (path and query).
    ///   - nonceCount: How many requests used this nonce, this one included (1 for the first).
    ///   - cnonce: The client nonce (random in use; fixed by tests).
    static func digest(
        _ challenge: DigestChallenge, credential: HTTPCredential, method: String, uri: String, nonceCount: Int, cnonce: String
    ) -> String {
        let algorithm = challenge.algorithm
        var ha1 = algorithm.digest("\(credential.user):\(challenge.realm):\(credential.password)")
        if algorithm.session { ha1 = algorithm.digest("\(ha1):\(challenge.nonce):\(cnonce)") }
        let ha2 = algorithm.digest("\(method):\(uri)")
        let nc = String(nonceCount, radix: 16).leftPadded(to: 8)
        let response: String
        if let qop = challenge.qop {
            response = algorithm.digest("\(ha1):\(challenge.nonce):\(nc):\(cnonce):\(qop):\(ha2)")
        } else {
            response = algorithm.digest("\(ha1):\(challenge.nonce):\(ha2)")
        }
        let username = challenge.userhash ? algorithm.digest("\(credential.user):\(challenge.realm)") : credential.user
        // A name a quoted string cannot carry (a control character: CR, LF, NUL, tab's kin) goes
        // as `username*` in RFC 8187's encoding (RFC 7616 3.4.4): quoted, a CR LF in it ended the
        // field early and began another (in a proxy's `CONNECT`, written as text). A name past
        // ASCII stays quoted in UTF-8, as servers that know no `username*` read it.
        let usernameParameter =
            username.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F })
            ? "username=\(quoted(username))" : "username*=UTF-8''\(Self.extendedValue(username))"
        var parts = [
            usernameParameter, "realm=\(quoted(challenge.realm))", "uri=\(quoted(uri))",
            "algorithm=\(algorithm.name)", "nonce=\(quoted(challenge.nonce))",
        ]
        if let qop = challenge.qop { parts += ["nc=\(nc)", "cnonce=\(quoted(cnonce))", "qop=\(qop)"] }
        parts.append("response=\(quoted(response))")
        if let opaque = challenge.opaque { parts.append("opaque=\(quoted(opaque))") }
        if challenge.userhash { parts.append("userhash=true") }
        return "Digest " + parts.joined(separator: ", ")
    }

    /// A fresh client nonce: 16 random bytes in hexadecimal.
    static func makeClientNonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }.lowercaseHex
    }

    /// `value` percent-encoded as RFC 8187 3.2.1's `value-chars`: its UTF-8 bytes, `attr-char`s as
    /// they are and every other byte as `%XX`.
    static func extendedValue(_ value: String) -> String {
        var result = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            case _ where "!#$&+-.^_`|~".utf8.contains(byte):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }

    private static func quoted(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        self.count >= length ? self : String(repeating: "0", count: length - self.count) + self
    }
}

extension Sequence<UInt8> {
    /// Lower-case hexadecimal, two digits a byte.
    var lowercaseHex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(self.underestimatedCount * 2)
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
