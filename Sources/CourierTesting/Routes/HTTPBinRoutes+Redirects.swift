import NIOCore
import NIOHTTP1

extension HTTPBinRoutes {
    /// `/redirect/{n}` (relative, or absolute with `?absolute=true`), `/relative-redirect/{n}`,
    /// `/absolute-redirect/{n}`, and `/redirect-to?url=…&status_code=…`; 302 unless told otherwise.
    static func redirect(_ kind: String, _ count: Substring?, _ request: IncomingRequest) -> Reply {
        if kind == "redirect-to" {
            guard let target = request.queryValue("url") else { return .badRequest("missing url") }
            let code = request.queryValue("status_code").flatMap { Int($0) }.flatMap { (300..<400).contains($0) ? $0 : nil } ?? 302
            return .redirect(to: target, status: HTTPResponseStatus(statusCode: code))
        }
        guard let count = count.flatMap(integer), count > 0 else { return .notFound }
        let absolute = kind == "absolute-redirect" || (kind == "redirect" && request.queryValue("absolute") == "true")
        let prefix = absolute ? "\(request.scheme)://\(request.authority)" : ""
        if count == 1 { return .redirect(to: prefix + "/get") }
        let next = absolute ? "absolute-redirect" : "relative-redirect"
        return .redirect(to: "\(prefix)/\(next)/\(count - 1)")
    }
}
