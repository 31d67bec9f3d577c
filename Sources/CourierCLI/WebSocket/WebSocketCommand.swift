import ArgumentParser
import Courier
import Foundation

/// `courier ws URL`: a WebSocket client like websocat. Each line of standard input goes out as a
/// text message; each message received is printed on a line of its own (a binary one as
/// `<binary: N bytes>`, or its bytes with `--binary-raw`). At the end of standard input the
/// WebSocket closes with 1000 and the command waits for the server's close. Proxies are the
/// request command's (``ProxyFlags``): `--proxy` and the proxy variables, `ws://` as `http://` and
/// `wss://` as `https://`. A server on a Unix-domain socket is reached with `--unix-socket PATH`
/// (every host) or a `ws+unix://` URL (the socket's path as its host, percent-encoded).
struct WebSocketCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ws",
        abstract: "A WebSocket client: stdin lines out as text messages, messages in on stdout.",
        helpNames: [.long]
    )

    @Argument(help: "A ws:// or wss:// URL, or ws+unix:// or wss+unix:// with a Unix-domain socket's path as the host, percent-encoded.")
    var url: String

    @Option(name: [.customShort("H"), .long], help: "A header for the opening handshake (Name:value); may repeat.")
    var header: [String] = []

    @Option(name: .long, help: "The subprotocol to offer; may repeat.")
    var `protocol`: [String] = []

    @Flag(name: .long, help: "Print binary messages' bytes as they are.")
    var binaryRaw = false

    @Flag(name: .long, help: "Trust any server certificate (wss).")
    var insecure = false

    @Option(name: .long, help: ArgumentHelp("Trust the certificates in this PEM or DER file too (wss).", valueName: "file"))
    var cacert: String?

    @Option(name: .customLong("max-message-size"), help: ArgumentHelp("The largest message taken, in bytes (default 1 MiB).", valueName: "bytes"))
    var maxMessageSize: Int?

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for the connection and the opening handshake (default 60).", valueName: "seconds"))
    var timeout: Double?

    @Option(name: .long, help: ProxyFlags.help(schemes: "http:URL (for ws://), https:URL (for wss://)"))
    var proxy: [String] = []

    @Option(
        name: .customLong("unix-socket"),
        help: ArgumentHelp("Connect through this Unix-domain socket instead of TCP (curl's --unix-socket).", valueName: "path"))
    var unixSocket: String?

    func validate() throws {
        if let size = self.maxMessageSize, size <= 0 { throw ValidationError("--max-message-size must be a positive number of bytes") }
        if let timeout, !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds") }
        if self.insecure && self.cacert != nil { throw ValidationError("choose one of --insecure and --cacert") }
    }

    func run() async throws {
        guard let url = URL(string: self.url), let scheme = url.scheme?.lowercased(), ["ws", "wss", "ws+unix", "wss+unix"].contains(scheme),
            let host = url.host(percentEncoded: true), !host.isEmpty
        else {
            throw CLIFailure.usage("not a ws://, wss://, ws+unix:// or wss+unix:// URL with a host: \(self.url)")
        }
        var request = Request(url: url)
        for header in self.header {
            guard let colon = header.firstIndex(of: ":"), let name = HTTPField.Name(String(header[..<colon])) else {
                throw CLIFailure.usage("not a header (Name:value): \(header)")
            }
            request.headerFields.append(HTTPField(name: name, value: String(header[header.index(after: colon)...])))
        }
        var settings = WebSocketConfiguration()
        // `--protocol a,b` offers two, as the field's own list syntax would say; an empty one or a
        // value with spaces is a bad command line, not a handshake the server refuses.
        settings.subprotocols = self.protocol.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if let problem = settings.subprotocolsProblem { throw CLIFailure.usage("--protocol: \(problem)") }
        if let size = self.maxMessageSize {
            settings.maximumMessageSize = size
            // Room for a few such messages waiting to be printed.
            settings.maximumBufferedBytes = max(settings.maximumBufferedBytes, size > Int.max / 4 ? Int.max : size * 4)
        }
        var policy = SecurityPolicy.default
        if self.insecure {
            policy.allowInvalidCertificates = true
            policy.validatesDomainName = false
        }
        if let cacert = self.cacert {
            policy.additionalTrustedCertificates += Array(try SessionFactory.certificates([cacert], flag: "--cacert"))
        }
        var configuration = SessionConfiguration.default
        // As the request command: an HTTP proxy tunnels with CONNECT (for ws:// too), a SOCKS5
        // proxy tunnels.
        configuration.proxy = try ProxyFlags.configuration(flags: self.proxy, environment: ProcessInfo.processInfo.environment)
        SessionFactory.apply(timeout: self.timeout, to: &configuration)
        if let path = self.unixSocket { configuration.unixSocketPaths = ["*": path] }
        let manager = SessionManager(configuration: configuration, securityPolicy: policy)
        let task = manager.webSocketTask(with: request, configuration: settings)
        do {
            try await task.waitUntilOpen()
        } catch let error as CourierError {
            throw CLIFailure(ExitStatus.failing(error), error.message)
        }
        let binaryRaw = self.binaryRaw
        // Two halves, and the command ends with the first to end: standard input's end (the
        // client closes, then waits for the connection's end) or the connection's (the server
        // closed it, or it broke: standard input is no longer read).
        let inputEnded = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                do {
                    for try await message in task.messages {
                        switch message {
                        case .text(let text):
                            Console.standardOutput.write(line: text)
                        case .binary(let data):
                            if binaryRaw {
                                // Through `Console`, as every other output: FileHandle's `write`
                                // traps on a failed write (a closed pipe, a full disk).
                                Console.standardOutput.write(data)
                            } else {
                                Console.standardOutput.write(line: "<binary: \(data.count) bytes>")
                            }
                        }
                    }
                } catch {
                    // The connection failed: `task.error` says how, below.
                }
                return false
            }
            group.addTask {
                for await line in Self.standardInputLines() {
                    do {
                        try await task.send(.text(line))
                    } catch {
                        // The connection is gone: its half says so.
                        return false
                    }
                }
                return !Task.isCancelled
            }
            let first = await group.next() ?? false
            if first {
                // Standard input ended: close, and print what comes until the server's close.
                await task.close(code: .normalClosure, reason: "")
            } else {
                // The connection ended: stop waiting for input (the reading thread stays blocked
                // in `readLine` until the process exits, which it now does).
                group.cancelAll()
            }
            await group.waitForAll()
            return first
        }
        await manager.invalidate(cancelingTasks: true)
        if let error = task.error {
            throw CLIFailure(ExitStatus.failing(error), error.message)
        }
        if !inputEnded, let code = task.closeCode {
            // The server ended the conversation: say how, as websocat and wscat do.
            let reason = task.closeReason.map { $0.isEmpty ? "" : " \($0)" } ?? ""
            Console.standardError.write(line: "courier: the server closed the connection (\(code.rawValue)\(reason))")
        }
    }

    /// Standard input's lines, read on a thread of their own (`readLine` blocks).
    private static func standardInputLines() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine(strippingNewline: true) {
                    continuation.yield(line)
                }
                continuation.finish()
            }
            thread.start()
        }
    }
}
