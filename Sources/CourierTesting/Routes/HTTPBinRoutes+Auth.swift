import Foundation
import NIOCore
import NIOHTTP1

extension HTTPBinRoutes {
    /// `/basic-auth/{user}/{password}` (401 with a challenge when wrong) and
    /// `/hidden-basic-auth/{user}/{password}` (404 when wrong).
    static func basicAuth(user: Substring, password: Substring, hidden: Bool, _ request: IncomingRequest) -> Reply {
        let expected = BasicAuthorization.credentials(user: user, password: password)
        if let authorization = request.header("Authorization"), authorization.split(separator: " ").count == 2,
            authorization.split(separator: " ")[0].lowercased() == "basic", authorization.split(separator: " ")[1] == expected
        {
            return HTTPBinEcho.reply(["authenticated": true, "user": String(user)])
        }
        if hidden { return .notFound }
        return .complete(.unauthorized, ["WWW-Authenticate": "Basic realm=\"Fake Realm\""], ByteBuffer())
    }

    /// `/bearer`: 200 with the token when `Authorization: Bearer …` is there, else 401.
    static func bearer(_ request: IncomingRequest) -> Reply {
        let parts = request.header("Authorization")?.split(separator: " ", maxSplits: 1) ?? []
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return .complete(.unauthorized, ["WWW-Authenticate": "Bearer"], ByteBuffer())
        }
        return HTTPBinEcho.reply(["authenticated": true, "token": String(parts[1])])
    }

    /// `/cookies`, `/cookies/set?name=value` and `/cookies/delete?name` (both 302 to `/cookies`).
    static func cookies(_ rest: [Substring], _ request: IncomingRequest) -> Reply {
        switch rest.first {
        case nil:
            var cookies: [String: String] = [:]
            for header in request.head.headers["Cookie"] {
                for pair in header.split(separator: ";") {
                    let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    if let name = parts.first, !name.isEmpty { cookies[name] = parts.count == 2 ? parts[1] : "" }
                }
            }
            return HTTPBinEcho.reply(["cookies": cookies])
        case "set" where rest.count == 1:
            var headers: HTTPHeaders = ["Location": "/cookies"]
            for (name, value) in request.queryItems { headers.add(name: "Set-Cookie", value: "\(name)=\(value); Path=/") }
            return .complete(.found, headers, ByteBuffer())
        case "delete" where rest.count == 1:
            var headers: HTTPHeaders = ["Location": "/cookies"]
            for (name, _) in request.queryItems {
                headers.add(name: "Set-Cookie", value: "\(name)=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/")
            }
            return .complete(.found, headers, ByteBuffer())
        default:
            return .notFound
        }
    }
}
