import ArgumentParser
import Courier
import Foundation
import NIOCore

/// `courier [METHOD] URL [ITEM ...]`: builds a request from HTTPie-style items, sends it with a
/// ``SessionManager`` and prints what the flags ask for.
struct RequestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Send a request: courier [METHOD] URL [ITEM ...] (the default command).",
        helpNames: [.long]
    )

    @Argument(help: ArgumentHelp("[METHOD] URL [ITEM ...]", valueName: "words"))
    var words: [String] = []

    @Flag(name: [.customShort("j"), .long], help: "Send data fields as a JSON object (the default).")
    var json = false

    @Flag(name: [.customShort("f"), .long], help: "Send data fields URL-encoded (application/x-www-form-urlencoded).")
    var form = false

    @Flag(name: .long, help: "Send data fields and files as multipart/form-data.")
    var multipart = false

    @Option(name: [.customShort("a"), .long], help: ArgumentHelp("Credentials (Basic unless --auth-type says otherwise).", valueName: "user:password"))
    var auth: String?

    @Option(
        name: [.customShort("A"), .long],
        help: ArgumentHelp("How --auth is sent: basic (with the request), digest (in answer to the server's challenge) or bearer (--auth is the token)."))
    var authType: AuthType = .basic

    @Option(name: .long, help: ArgumentHelp("Bearer token authentication.", valueName: "token"))
    var bearer: String?

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for the server's next bytes.", valueName: "seconds"))
    var timeout: Double?

    @Flag(name: [.customShort("F"), .long], help: "Follow redirects (--download always does).")
    var follow = false

    @Option(name: .customLong("max-redirects"), help: "At most this many redirects with --follow or --download.")
    var maxRedirects: Int = 30

    /// Whether redirects are followed: with `--follow`, and with `--download`, which implies it
    /// as in HTTPie.
    var followsRedirects: Bool { self.follow || self.download }

    @Option(name: .long, help: ArgumentHelp("yes, no (trust any certificate), or a CA bundle file.", valueName: "yes|no|file"))
    var verify: String = "yes"

    @Option(name: .long, help: ArgumentHelp("Trust the certificates in this PEM or DER file too.", valueName: "file"))
    var cacert: String?

    @Option(name: .customLong("pin-cert"), help: ArgumentHelp("Pin this certificate (PEM or DER); repeatable.", valueName: "file"))
    var pinCertificates: [String] = []

    @Option(name: .customLong("pin-key"), help: ArgumentHelp("Pin the public key of this certificate; repeatable.", valueName: "file"))
    var pinKeys: [String] = []

    @Option(name: .long, help: ArgumentHelp("Client certificate (PEM) for mutual TLS.", valueName: "file"))
    var cert: String?

    @Option(name: [.long, .customLong("cert-key")], help: ArgumentHelp("Private key (PEM) of --cert (HTTPie's --cert-key).", valueName: "file"))
    var key: String?

    @Option(
        name: [.long, .customLong("cert-key-pass")],
        help: ArgumentHelp("The passphrase of an encrypted --key (curl's --pass, HTTPie's --cert-key-pass).", valueName: "phrase"))
    var pass: String?

    @Option(
        name: .long,
        help: ArgumentHelp("A trailer field sent after the body (the body then goes chunked over HTTP/1.1); repeatable.", valueName: "Name:value"))
    var trailer: [String] = []

    @Flag(name: [.customShort("d"), .long], help: "Save the body to a file (without -o, to standard output when that is not a terminal), with a progress bar on a terminal; follows redirects.")
    var download = false

    @Option(
        name: [.customShort("o"), .long],
        help: ArgumentHelp("The file --download writes; without --download, what would go to standard output goes there.", valueName: "file"))
    var output: String?

    @Flag(name: [.customShort("c"), .customLong("continue")], help: "With --download -o: resume a partial file.")
    var resume = false

    @Flag(name: [.customShort("v"), .long], help: "Print the request and the response, heads and bodies, and the metrics.")
    var verbose = false

    @Option(
        name: [.customShort("p"), .customLong("print")],
        help: ArgumentHelp(
            "What to print, as HTTPie's letters: H request head, B request body, h response head, b response body, m metrics (instead of the defaults and --verbose's).",
            valueName: "HBhbm"))
    var printed: String?

    @Flag(name: [.customShort("h"), .long], help: "Print the response head only.")
    var headers = false

    @Flag(name: [.customShort("b"), .long], help: "Print the response body only.")
    var body = false

    @Flag(name: .customLong("check-status"), help: "Exit 3, 4 or 5 for a 3xx (without --follow), 4xx or 5xx response.")
    var checkStatus = false

    @Flag(name: [.customShort("I"), .customLong("ignore-stdin")], help: "Do not read standard input as the body (read when it is not a terminal and the named method carries a body).")
    var ignoreStdin = false

    @Flag(name: .long, help: "Print the request without sending it.")
    var offline = false

    @Flag(name: .long, help: "Print the equivalent curl command without sending anything.")
    var curl = false

    @Option(name: .long, help: "Colours and formatting: all, colors, format, none (default: all on a terminal, none when piped).")
    var pretty: PrettyOption?

    @Option(
        name: .customLong("cookie-jar"),
        help: ArgumentHelp("Send the cookies of this cookies.txt file (if it exists) and write the session's cookies to it afterwards (curl's -b FILE -c FILE).", valueName: "file"))
    var cookieJar: String?

    @Option(name: .long, help: ProxyFlags.help(schemes: "http:URL, https:URL"))
    var proxy: [String] = []

    @Option(
        name: .customLong("unix-socket"),
        help: ArgumentHelp("Connect through this Unix-domain socket instead of TCP, for every host (curl's --unix-socket).", valueName: "path"))
    var unixSocket: String?

    @Option(
        name: .customLong("resolve"),
        help: ArgumentHelp(
            "Connect to these addresses for HOST on PORT instead of looking the name up (curl's --resolve; repeatable; PORT may be *).",
            valueName: "host:port:address[,address]"))
    var resolve: [String] = []

    /// ``resolve`` as ``SessionConfiguration/hostAddresses``: `host:port` entries, or `host` ones
    /// for the port `*`.
    /// - Throws: `ValidationError` for an entry that is not `HOST:PORT:ADDRESS[,ADDRESS]` with a
    ///   port number or `*` and IP addresses (an IPv6 one in brackets or not).
    func hostAddresses() throws -> [String: [String]] {
        var table: [String: [String]] = [:]
        for entry in self.resolve {
            let parts = entry.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, !parts[0].isEmpty, parts[1] == "*" || UInt16(parts[1]) != nil, !parts[2].isEmpty else {
                throw ValidationError("--resolve \(entry): expected host:port:address[,address] (curl's form)")
            }
            let addresses = parts[2].split(separator: ",").map { String($0) }
            for address in addresses where !Self.isIPAddress(address) {
                throw ValidationError("--resolve \(entry): '\(address)' is not an IP address")
            }
            table[parts[1] == "*" ? String(parts[0]) : "\(parts[0]):\(parts[1])", default: []] += addresses
        }
        return table
    }

    /// HTTPie's `--output` without `--download`: standard output becomes the file (created, or
    /// emptied, as curl opens its `-o`), so everything that would go there (the body, or what
    /// `--verbose`, `--offline` or `--curl` print) goes to the file, without colours.
    private static func redirectStandardOutput(to path: String) throws(CLIFailure) {
        let descriptor = Foundation.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else { throw CLIFailure(.failure, "cannot create '\(path)': \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        guard dup2(descriptor, STDOUT_FILENO) >= 0 else {
            throw CLIFailure(.failure, "cannot write to '\(path)': \(String(cString: strerror(errno)))")
        }
    }

    private static func isIPAddress(_ text: String) -> Bool {
        var literal = Substring(text)
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = literal.dropFirst().dropLast() }
        return (try? SocketAddress(ipAddress: String(literal), port: 0)) != nil
    }

    func validate() throws {
        if self.words.isEmpty { throw ValidationError("missing URL: courier [METHOD] URL [ITEM ...]") }
        if self.maxRedirects < 0 { throw ValidationError("--max-redirects must not be negative") }
        if let timeout, !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds") }
        if let printed = self.printed, let unknown = printed.first(where: { !OutputParts.letters.contains($0) }) {
            throw ValidationError("--print \(printed): unknown output option '\(unknown)' (H request head, B request body, h response head, b response body, m metrics)")
        }
        if [self.json, self.form, self.multipart].filter({ $0 }).count > 1 {
            throw ValidationError("choose one of --json, --form and --multipart")
        }
        if self.resume && (self.output == nil || !self.download) {
            throw ValidationError("--continue needs --download and -o FILE")
        }
        if (self.cert == nil) != (self.key == nil) { throw ValidationError("--cert and --key go together") }
        if self.pass != nil && self.key == nil { throw ValidationError("--pass is the passphrase of --key") }
        if self.auth != nil && self.bearer != nil { throw ValidationError("choose one of --auth and --bearer") }
        if self.authType != .basic && self.auth == nil { throw ValidationError("--auth-type needs --auth") }
        _ = try self.hostAddresses()
    }

    func run() async throws {
        if let output = self.output, !self.download { try Self.redirectStandardOutput(to: output) }
        let invocation = try Invocation(parsing: self.words)
        // Streamed when large, unless it is only shown (`--offline`, `--curl`).
        let input = RequestBuilder.readsStandardInput(command: self, invocation: invocation)
            ? try StandardInput.body(streaming: !self.offline && !self.curl) : nil
        let built = try await RequestBuilder(command: self, invocation: invocation, input: input).build()
        let style = OutputStyle(pretty: self.pretty, console: .standardOutput)
        // The TLS flags are checked (files read, AFNetworking's rules applied) even when nothing is sent.
        let factory = SessionFactory(command: self, url: built.request.url)
        let policy = try factory.checkedSecurityPolicy()
        let jar = try CookieJarFile.open(self.cookieJar)
        let proxy = try factory.proxyConfiguration()

        if self.curl {
            let curl = try CurlCommand(request: built, command: self)
            Console.standardOutput.write(line: curl.line)
            return
        }
        if self.offline {
            // The request's head and body, as HTTPie's `--offline` prints them, or what `--print` names of them.
            let parts = self.printed.map { OutputParts(letters: $0) } ?? OutputParts(requestHead: true, requestBody: true, responseHead: false, responseBody: false)
            if parts.requestHead || parts.requestBody {
                let printer = MessagePrinter(style: style, console: .standardOutput, proxies: proxy)
                try await printer.printRequest(jar?.showing(built) ?? built, head: parts.requestHead, body: parts.requestBody, decompressing: false)
            }
            return
        }
        // `Expect:` (HTTPie's way to drop a field) drops the one the engine would add, too; so do
        // `User-Agent:` and `Accept-Encoding:` when no later item gave the field again.
        let fields = built.request.headerFields
        let session = factory.makeManager(
            securityPolicy: policy, cookieJar: jar, proxy: proxy, announcesContinue: !invocation.drops("Expect"),
            sendsUserAgent: !(invocation.drops("User-Agent") && fields[.userAgent] == nil),
            asksForEncodings: !(invocation.drops("Accept-Encoding") && fields[.acceptEncoding] == nil))
        if self.authType == .digest, let credential = try RequestBuilder.credential(self.auth), let space = ProtectionSpace(url: built.request.url) {
            // Answers the server's challenge; the first request goes without credentials.
            session.credentials.set(credential, for: space)
        }
        do {
            if self.download {
                try await Downloader(command: self, session: session).run(built)
            } else {
                try await Exchange(command: self, session: session, style: style, jar: jar).run(built)
            }
        } catch {
            await session.invalidate(cancelingTasks: true)
            // As curl does, the jar is written even when the request failed.
            try jar?.save()
            throw error
        }
        await session.invalidate(cancelingTasks: true)
        try jar?.save()
    }
}
