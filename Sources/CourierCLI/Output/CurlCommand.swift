import Courier
import Foundation

/// `--curl`: the curl command line that sends the same request, on one line, quoted for a POSIX
/// shell.
struct CurlCommand {
    let line: String

    init(request built: BuiltRequest, command: RequestCommand) throws {
        let request = built.request
        var words = ["curl"]
        if command.followsRedirects { words += ["--location", "--max-redirs", String(command.maxRedirects)] }
        if let timeout = command.timeout {
            // An idle wait and a cap on connecting (``SessionFactory/apply(timeout:to:)``), not a
            // cap on the whole transfer (curl's --max-time): curl's nearest is a transfer slower
            // than a byte a second for that many whole seconds.
            var configuration = SessionConfiguration.default
            SessionFactory.apply(timeout: timeout, to: &configuration)
            words += [
                "--connect-timeout", Self.number(configuration.timeoutIntervalForConnect),
                "--speed-limit", "1", "--speed-time", Self.wholeSeconds(timeout),
            ]
        }
        switch command.verify.lowercased() {
        case "yes", "true": break
        case "no", "false": words.append("--insecure")
        default: words += ["--cacert", command.verify]
        }
        if let cacert = command.cacert {
            words += ["--cacert", cacert]
            // Courier trusts the file beside the system's roots; curl's --cacert trusts it alone.
            Console.standardError.write(line: "courier: warning: curl's --cacert trusts only that file, not the system's certificates beside it")
        }
        if let cert = command.cert, let key = command.key {
            words += ["--cert", cert, "--key", key]
            if let pass = command.pass { words += ["--pass", pass] }
        }
        // The jar is read before the request and written after it, as curl's -b FILE -c FILE do.
        if let jar = command.cookieJar { words += ["--cookie", jar, "--cookie-jar", jar] }
        if command.authType == .digest, let auth = command.auth { words += ["--digest", "--user", auth] }
        if !command.trailer.isEmpty {
            Console.standardError.write(line: "courier: warning: curl cannot send trailer fields; the --trailer fields are left out")
        }
        if !command.pinCertificates.isEmpty || !command.pinKeys.isEmpty {
            Console.standardError.write(line: "courier: warning: curl pins by a SHA-256 hash of the key (--pinnedpubkey); the pins are left out")
        }
        // A proxy from --proxy for the URL's scheme (curl reads the environment's variables itself).
        if let proxy = try ProxyFlags.configuration(flags: command.proxy, environment: [:])?.proxy(for: request.url) {
            words += ["--proxy", ProxyFlags.curlURL(proxy)]
        }
        if let path = command.unixSocket { words += ["--unix-socket", path] }
        for entry in command.resolve { words += ["--resolve", entry] }
        if command.download {
            if let output = command.output {
                words += ["--output", output]
                if command.resume { words += ["--continue-at", "-"] }
            } else {
                words += ["--remote-name", "--remote-header-name"]
            }
        }
        var line = ["curl"] + words.dropFirst().map(Request.shellQuoted)
        // The method, URL, header fields and body as the library describes them; a multipart body
        // is written from the command line's items instead, as curl's own --form parts.
        let multipart = built.bodyKind == .multipart
        var omitted: Set<HTTPField.Name> = multipart ? [.contentType] : []
        // curl sends `Accept: */*` of its own.
        if request.headerFields[.accept] == RequestBuilder.anyAccept { omitted.insert(.accept) }
        do {
            line += try request.cURLArguments(omitting: omitted, includingBody: !multipart)
        } catch {
            throw CLIFailure(.failure, "the body is not text; curl would need it in a file")
        }
        if multipart {
            for item in built.items {
                switch item {
                case .field(let name, let value): line += ["--form-string", Request.shellQuoted("\(name)=\(value)")]
                case .fieldFromFile(let name, let path): line += ["--form", Request.shellQuoted("\(name)=<\(path)")]
                case .rawJSON(let name, let json):
                    let text = try RequestBuilder.formText(ofJSON: json, name: name)
                    line += ["--form-string", Request.shellQuoted("\(name)=\(text)")]
                case .rawJSONFromFile(let name, let path):
                    let text = try RequestBuilder.formText(ofJSON: InputFile.text(path).trimmingCharacters(in: .whitespacesAndNewlines), name: name)
                    line += ["--form-string", Request.shellQuoted("\(name)=\(text)")]
                case .file(let name, let path, let mime):
                    line += ["--form", Request.shellQuoted("\(name)=@\(path)" + (mime.map { ";type=\($0)" } ?? ""))]
                default: break
                }
            }
        }
        self.line = line.joined(separator: " ")
    }

    /// `seconds` rounded up to a whole number, as curl's `--speed-time` takes it: at least 1, at
    /// most 2³¹ − 1 (68 years; curl counts it in milliseconds).
    private static func wholeSeconds(_ seconds: Double) -> String {
        String(Int(min(max(seconds.rounded(.up), 1), Double(Int32.max))))
    }

    private static func number(_ value: Double) -> String {
        // A whole number that an `Int` holds as one; anything else (1e19, inf) as Swift writes it.
        value == value.rounded() && abs(value) < 9e18 ? String(Int(value)) : String(value)
    }
}
