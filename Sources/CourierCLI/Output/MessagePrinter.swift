import Courier
import Foundation

/// Prints request and response heads as HTTP/1.1 text, and bodies through ``BodyRenderer``.
struct MessagePrinter {
    let style: OutputStyle
    let console: Console

    /// The request line and header fields as they go out, `Host` first and `Content-Length`
    /// when the body's length is known; then, when `body` is true, the body.
    func printRequest(_ built: BuiltRequest, body: Bool) async throws {
        let request = built.request
        var lines = [self.requestLine(request)]
        lines.append(self.field("Host", Self.hostHeader(for: request.url)))
        for field in request.headerFields {
            lines.append(self.field(field.name.rawName, field.value))
        }
        if request.headerFields[.contentLength] == nil, let length = request.body.knownLength, length > 0 {
            lines.append(self.field("Content-Length", String(length)))
        }
        self.console.write(lines.joined(separator: "\n") + "\n\n")
        guard body else { return }
        if let data = try await Self.bodyBytes(of: built) {
            BodyRenderer(style: self.style, console: self.console)
                .render(data, contentType: request.value(forHTTPHeaderField: "Content-Type"))
            self.console.write("\n\n")
        }
    }

    /// The status line and header fields of a response, and a blank line.
    func printResponseHead(_ response: HTTPResponse) {
        var lines = [self.statusLine(response)]
        for field in response.headerFields {
            lines.append(self.field(field.name.rawName, field.value))
        }
        self.console.write(lines.joined(separator: "\n") + "\n\n")
    }

    private func requestLine(_ request: Request) -> String {
        let method = self.style.paint(request.method.rawValue, .green)
        return "\(method) \(self.style.paint(Self.target(of: request.url), .cyan)) \(self.style.paint("HTTP/1.1", .blue))"
    }

    private func statusLine(_ response: HTTPResponse) -> String {
        let color: ANSIColor =
            switch response.status.kind {
            case .successful: .green
            case .redirection, .informational: .yellow
            default: .red
            }
        let status = "\(response.status.code) \(response.status.reasonPhrase)"
        return self.style.paint("HTTP/1.1", .blue) + " " + self.style.paint(status, color)
    }

    private func field(_ name: String, _ value: String) -> String {
        self.style.paint(name, .cyan) + ": " + value
    }

    /// The request target: the path (`/` when empty) and the query, as sent.
    static func target(of url: URL) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var path = components?.percentEncodedPath ?? url.path
        if path.isEmpty { path = "/" }
        if let query = components?.percentEncodedQuery { path += "?" + query }
        return path
    }

    /// `host` or `host:port` when the port is not the scheme's default.
    static func hostHeader(for url: URL) -> String {
        var host = url.host ?? ""
        if host.contains(":") { host = "[" + host + "]" }
        guard let port = url.port else { return host }
        let defaultPort = url.scheme?.lowercased() == "https" ? 443 : 80
        return port == defaultPort ? host : "\(host):\(port)"
    }

    /// The body's bytes for display: data as it is, a multipart form written out through the
    /// serializer (files included), nothing for an empty body.
    static func bodyBytes(of built: BuiltRequest) async throws -> Data? {
        let request = built.request
        if let data = request.body.data { return data.isEmpty ? nil : data }
        guard !request.body.isEmpty else { return nil }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("courier-body-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        do {
            _ = try await HTTPRequestSerializer().request(withMultipartFormRequest: request, writingStreamContentsToFile: file)
        } catch {
            throw RequestBuilder.failure(for: error)
        }
        return FileManager.default.contents(atPath: file.path)
    }
}
