import Courier
import Foundation

/// `--curl`: the curl command line that sends the same request, on one line, quoted for a POSIX
/// shell.
struct CurlCommand {
    let line: String

    init(request built: BuiltRequest, command: RequestCommand) throws {
        let request = built.request
        var words = ["curl"]
        if command.follow { words += ["--location", "--max-redirs", String(command.maxRedirects)] }
        if let timeout = command.timeout { words += ["--max-time", Self.number(timeout)] }
        switch command.verify.lowercased() {
        case "yes", "true": break
        case "no", "false": words.append("--insecure")
        default: words += ["--cacert", command.verify]
        }
        if let cacert = command.cacert { words += ["--cacert", cacert] }
        if let cert = command.cert, let key = command.key { words += ["--cert", cert, "--key", key] }
        if !command.pinCertificates.isEmpty || !command.pinKeys.isEmpty {
            Console.standardError.write(line: "courier: warning: curl pins by a SHA-256 hash of the key (--pinnedpubkey); the pins are left out")
        }
        if command.download {
            if let output = command.output {
                words += ["--output", output]
                if command.resume { words += ["--continue-at", "-"] }
            } else {
                words += ["--remote-name", "--remote-header-name"]
            }
        }
        let defaultMethod: HTTPRequest.Method = request.body.isEmpty ? .get : .post
        if request.method != defaultMethod || request.method == .head {
            words += request.method == .head ? ["--head"] : ["--request", request.method.rawValue]
        }
        words.append(request.url.absoluteString)
        let multipart = built.bodyKind == .multipart
        for field in request.headerFields {
            if field.name == .contentLength || multipart && field.name == .contentType { continue }
            words += ["--header", field.value.isEmpty ? "\(field.name.rawName);" : "\(field.name.rawName): \(field.value)"]
        }
        if multipart {
            for item in built.items {
                switch item {
                case .field(let name, let value): words += ["--form-string", "\(name)=\(value)"]
                case .fieldFromFile(let name, let path): words += ["--form", "\(name)=<\(path)"]
                case .file(let name, let path, let mime): words += ["--form", "\(name)=@\(path)" + (mime.map { ";type=\($0)" } ?? "")]
                default: break
                }
            }
        } else if let data = request.body.data, !data.isEmpty {
            guard let text = String(data: data, encoding: .utf8) else {
                throw CLIFailure(.failure, "the body is not text; curl would need it in a file")
            }
            words += ["--data-binary", text]
        }
        self.line = words.enumerated().map { $0.offset == 0 ? $0.element : Self.quoted($0.element) }.joined(separator: " ")
    }

    /// A word as a POSIX shell reads it back: bare when safe, else in single quotes.
    static func quoted(_ word: String) -> String {
        let safe = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+,=")
        if !word.isEmpty && word.unicodeScalars.allSatisfy(safe.contains) { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
