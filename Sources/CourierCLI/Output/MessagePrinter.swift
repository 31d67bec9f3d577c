import Courier
import Foundation

/// Prints request and response heads as HTTP/1.x text (a response's status line names the
/// protocol it came over: `HTTP/2`, `HTTP/1.1`, `HTTP/1.0`), and bodies through ``BodyRenderer``.
struct MessagePrinter {
    let style: OutputStyle
    let console: Console
    /// The proxies requests go through (`--proxy` and the environment): a request an HTTP proxy
    /// forwards (an `http` URL) is shown as the proxy reads it, its target in absolute form and
    /// with the proxy's `Proxy-Authorization`, as curl shows it. A tunnel (`https`, SOCKS)
    /// carries the request as it is.
    var proxies: ProxyConfiguration? = nil

    /// The request line and header fields as they go out, `Host` first (the request's own when
    /// it names one, else the URL's), `Content-Length` when the body's length is known, in place
    /// of the request's own (`Trailer` when the body has trailer fields, with
    /// `Transfer-Encoding: chunked` but over HTTP/2, which frames bodies itself) and `Accept-Encoding` as the engine adds it when it decompresses
    /// (`decompressing`) and the request names neither it nor `Range`; then, when `body` is true, the body and its trailer fields. `networkProtocolName` (ALPN's name,
    /// ``SessionTask/networkProtocolName``) gives the request line's version once the request went
    /// out: `HTTP/2` for `h2`, else `HTTP/1.1` (also to an HTTP/1.0 server, `--offline`, or a
    /// request that got no response).
    /// `expectContinueThreshold` (the session's): a body of at least that many bytes went out
    /// announced with `Expect: 100-continue` over HTTP/1.1, which the engine adds as it sends.
    /// With `head` false (`--print B`), the body and its trailer fields alone.
    func printRequest(
        _ built: BuiltRequest, head: Bool = true, body: Bool, decompressing: Bool = true, networkProtocolName: String? = nil,
        expectContinueThreshold: Int64? = nil
    ) async throws {
        let request = built.request
        let forwarder = self.forwardingProxy(for: request.url)
        // Courier writes HTTP/1.1 requests even to a server that answers in HTTP/1.0.
        var lines = [self.requestLine(request, version: networkProtocolName == "h2" ? "HTTP/2" : "HTTP/1.1", absoluteForm: forwarder != nil)]
        // The request's own `Host` goes instead of the URL's (the engine adds none then), and
        // the engine frames the body itself: a `Content-Length` or `Transfer-Encoding` of the
        // request's is never sent.
        let ownHosts = request.headerFields.filter { $0.name.canonicalName == "host" }
        if ownHosts.isEmpty {
            lines.append(self.field("Host", Self.hostHeader(for: request.url)))
        }
        for field in ownHosts {
            lines.append(self.field(field.name.rawName, field.value))
        }
        for field in request.headerFields {
            switch field.name {
            case .contentLength, .transferEncoding: continue
            default: if field.name.canonicalName == "host" { continue }
            }
            lines.append(self.field(field.name.rawName, field.value))
        }
        if let authorization = forwarder?.basicAuthorization, request.headerFields[.proxyAuthorization] == nil {
            lines.append(self.field("Proxy-Authorization", authorization))
        }
        let trailers = request.body.trailers ?? [:]
        if !trailers.isEmpty {
            var named = Set<HTTPField.Name>()
            let names = trailers.map(\.name).filter { named.insert($0).inserted }.map(\.rawName)
            lines.append(self.field("Trailer", names.joined(separator: ", ")))
            if networkProtocolName != "h2" { lines.append(self.field("Transfer-Encoding", "chunked")) }
        } else if let length = request.body.knownLength, length > 0 {
            lines.append(self.field("Content-Length", String(length)))
        }
        if decompressing, request.headerFields[.acceptEncoding] == nil, request.headerFields[.range] == nil {
            lines.append(self.field("Accept-Encoding", "deflate, gzip"))
        }
        if networkProtocolName != "h2", let threshold = expectContinueThreshold, request.headerFields[.expect] == nil,
            let length = request.body.knownLength, length > 0, length >= threshold
        {
            lines.append(self.field("Expect", "100-continue"))
        }
        if head { self.console.write(lines.joined(separator: "\n") + "\n\n") }
        guard body else { return }
        if built.bodyKind == .standardInput, request.body.data == nil, !request.body.isEmpty {
            // Streamed as it was read: gone once sent, never held whole.
            let size = request.body.knownLength.map { "\($0) bytes" } ?? "a body"
            self.console.write(self.style.paint("(\(size) streamed from standard input, not shown)", .blue) + "\n\n")
        } else if let data = try await Self.bodyBytes(of: built) {
            BodyRenderer(style: self.style, console: self.console)
                .render(data, contentType: request.value(forHTTPHeaderField: "Content-Type"))
            self.console.write("\n\n")
        }
        if !trailers.isEmpty {
            self.console.write(trailers.map { self.field($0.name.rawName, $0.value) }.joined(separator: "\n") + "\n\n")
        }
    }

    /// The status line and header fields of a response, and a blank line. `networkProtocolName`
    /// (ALPN's name, ``SessionTask/networkProtocolName``) gives the status line's version;
    /// `HTTP/1.1` when nil.
    func printResponseHead(_ response: HTTPResponse, networkProtocolName: String? = nil) {
        var lines = [self.statusLine(response, version: Self.version(networkProtocolName))]
        for field in response.headerFields {
            lines.append(self.field(field.name.rawName, field.value))
        }
        self.console.write(lines.joined(separator: "\n") + "\n\n")
    }

    /// A response's trailer fields, after its body, and a blank line.
    func printTrailers(_ trailers: HTTPFields) {
        self.console.write("\n" + trailers.map { self.field($0.name.rawName, $0.value) }.joined(separator: "\n") + "\n\n")
    }

    private func requestLine(_ request: Request, version: String, absoluteForm: Bool) -> String {
        let method = self.style.paint(request.method.rawValue, .green)
        var target = Self.target(of: request.url)
        if absoluteForm { target = "http://" + Self.hostHeader(for: request.url).lowercased() + target }
        return "\(method) \(self.style.paint(target, .cyan)) \(self.style.paint(version, .blue))"
    }

    /// The HTTP proxy that forwards a request to `url` (an `http` URL), or nil.
    private func forwardingProxy(for url: URL) -> NIOEngine.Proxy? {
        guard url.scheme?.lowercased() == "http", let proxy = self.proxies?.proxy(for: url), !proxy.isSOCKS else { return nil }
        return proxy
    }

    /// How a status line writes the protocol ALPN calls `name`.
    static func version(_ name: String?) -> String {
        switch name {
        case "h2": "HTTP/2"
        case "http/1.0": "HTTP/1.0"
        default: "HTTP/1.1"
        }
    }

    /// The task's metrics, one block per transaction (``TransactionMetrics/description``), each
    /// line after a `* `, as curl marks its own notes; and a blank line.
    func printMetrics(_ metrics: TaskMetrics) {
        var lines: [String] = []
        for transaction in metrics.transactions {
            lines += transaction.description.split(separator: "\n").map { self.style.paint("* " + $0, .blue) }
        }
        if metrics.transactions.isEmpty { lines.append(self.style.paint("* no transaction (the response came from the cache)", .blue)) }
        self.console.write(lines.joined(separator: "\n") + "\n\n")
    }

    private func statusLine(_ response: HTTPResponse, version: String) -> String {
        let color: ANSIColor =
            switch response.status.kind {
            case .successful: .green
            case .redirection, .informational: .yellow
            default: .red
            }
        let status = "\(response.status.code) \(response.status.reasonPhrase)"
        return self.style.paint(version, .blue) + " " + self.style.paint(status, color)
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

    /// The body's bytes for display: data as it is, a file's contents (`@path`), a multipart form
    /// written out through the serializer (files included), nothing for an empty body.
    static func bodyBytes(of built: BuiltRequest) async throws -> Data? {
        let request = built.request
        if let data = request.body.data { return data.isEmpty ? nil : data }
        guard !request.body.isEmpty else { return nil }
        if built.bodyKind == .file, let file = request.body.fileURL { return FileManager.default.contents(atPath: file.path) }
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
