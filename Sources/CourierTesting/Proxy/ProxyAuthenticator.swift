import Crypto
import Foundation

/// How ``TestProxy`` checks the credentials of a `CONNECT` or a forwarded request: Basic, or
/// Digest (RFC 7616: MD5, `qop="auth"`) with a nonce of its own. Its Digest check is this file's
/// code, not the client's: a test of Courier's answer must not share it.
struct ProxyAuthenticator: Sendable {
    let username: String
    let password: String
    let authentication: TestProxy.Authentication
    /// The nonce of every Digest challenge this proxy sends.
    let nonce: String

    init(username: String, password: String, authentication: TestProxy.Authentication) {
        self.username = username
        self.password = password
        self.authentication = authentication
        var generator = SystemRandomNumberGenerator()
        self.nonce = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: .min ... .max, using: &generator)) }.joined()
    }

    /// The `Proxy-Authenticate` value of a 407.
    var challenge: String {
        switch self.authentication {
        case .basic: "Basic"
        case .digest(let realm, _): "Digest realm=\"\(realm)\", nonce=\"\(self.nonce)\", qop=\"auth\", algorithm=MD5"
        }
    }

    /// Whether a 407 to a `CONNECT` leaves the connection open (with a body): squid's way.
    var keepsConnectionOpen: Bool {
        if case .digest(_, let keeps) = self.authentication { return keeps }
        return false
    }

    /// Whether `authorization` (the `Proxy-Authorization` value, if any) authenticates a request
    /// `method target`.
    func accepts(_ authorization: String?, method: String, target: String) -> Bool {
        guard let authorization else { return false }
        switch self.authentication {
        case .basic:
            return authorization == BasicAuthorization.fieldValue(user: self.username, password: self.password)
        case .digest(let realm, _):
            guard authorization.lowercased().hasPrefix("digest ") else { return false }
            let fields = Self.parameters(authorization.dropFirst("digest ".count))
            guard fields["username"] == self.username, fields["realm"] == realm, fields["nonce"] == self.nonce,
                fields["uri"] == target, fields["qop"] == "auth", (fields["algorithm"] ?? "MD5").uppercased() == "MD5",
                let nc = fields["nc"], let cnonce = fields["cnonce"], let response = fields["response"]
            else { return false }
            let ha1 = Self.md5("\(self.username):\(realm):\(self.password)")
            let ha2 = Self.md5("\(method):\(target)")
            return response == Self.md5("\(ha1):\(self.nonce):\(nc):\(cnonce):auth:\(ha2)")
        }
    }

    /// `name=value, name="quoted, value"` pairs, names lower-cased, quotes and escapes removed.
    static func parameters(_ text: Substring) -> [String: String] {
        var result: [String: String] = [:]
        var index = text.startIndex
        while index < text.endIndex {
            while index < text.endIndex, text[index] == " " || text[index] == "," { index = text.index(after: index) }
            guard let equals = text[index...].firstIndex(of: "=") else { break }
            let name = text[index..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            index = text.index(after: equals)
            var value = ""
            if index < text.endIndex, text[index] == "\"" {
                index = text.index(after: index)
                while index < text.endIndex, text[index] != "\"" {
                    if text[index] == "\\" { index = text.index(after: index) }
                    if index < text.endIndex { value.append(text[index]) }
                    index = text.index(after: index)
                }
                if index < text.endIndex { index = text.index(after: index) }
            } else {
                let end = text[index...].firstIndex(of: ",") ?? text.endIndex
                value = text[index..<end].trimmingCharacters(in: .whitespaces)
                index = end
            }
            result[name] = value
        }
        return result
    }

    private static func md5(_ text: String) -> String {
        Insecure.MD5.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
