import CourierTesting
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `openssl s_server` on a loopback port, presenting a chain the test chooses: a TLS peer nobody
/// here wrote. It answers `GET /` with a status page (`-www`).
final class OpenSSLServer: ShutDownByAwaiting {
    /// Whether the `openssl` command is installed (`.ci/run` installs it).
    static let isAvailable = FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")

    let port: Int
    private let process: ChildProcess
    private let folder: URL

    private init(port: Int, process: ChildProcess, folder: URL) {
        self.port = port
        self.process = process
        self.folder = folder
    }

    /// Starts a server presenting `chain` (PEM, leaf first) with `key`.
    /// - Parameters:
    ///   - arguments: More `s_server` options (`-alpn`, `-tls1_2`, `-Verify`…); `{root}` in one is
    ///     replaced by the path of a file holding `clientCA`.
    static func start(chain: [String], key: String, clientCA: String? = nil, arguments: [String] = []) async throws -> OpenSSLServer {
        try await offThePools { try Self.startBlocking(chain: chain, key: key, clientCA: clientCA, arguments: arguments) }
    }

    private static func startBlocking(chain: [String], key: String, clientCA: String?, arguments: [String]) throws -> OpenSSLServer {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-s_server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func write(_ name: String, _ text: String) throws -> String {
            let url = folder.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            return url.path
        }
        var options = ["s_server", "-accept", "127.0.0.1:0", "-www", "-cert", try write("leaf.pem", chain[0]), "-key", try write("key.pem", key)]
        if chain.count > 1 { options += ["-cert_chain", try write("chain.pem", chain.dropFirst().joined())] }
        let root = try clientCA.map { try write("root.pem", $0) }
        options += arguments.map { $0 == "{root}" ? (root ?? $0) : $0 }

        let process = try ChildProcess.spawn("/usr/bin/openssl", options, standardOutput: .pipe)
        // s_server says `ACCEPT 127.0.0.1:PORT` once it listens; read until then. Plain read(2),
        // retried on EINTR: FileHandle.availableData traps on an interrupted read.
        let descriptor = process.standardOutput!
        var text = ""
        func acceptLine() -> Substring? {
            text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().first { $0.hasPrefix("ACCEPT") }
        }
        while acceptLine() == nil, let chunk = ChildProcess.readSome(descriptor) {
            text += String(decoding: chunk, as: UTF8.self)
        }
        // What it prints per connection is drained until it exits (only the child holds the pipe's
        // write end, so its death is the end), so that it never blocks on a full pipe. The thread
        // owns the read end and closes it then; what it reads is dropped.
        Thread {
            while ChildProcess.readSome(descriptor) != nil {}
            close(descriptor)
        }.start()
        guard let line = acceptLine(),
            let port = line.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) })
        else {
            process.signal(SIGKILL)
            process.waitForExit()
            throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "s_server did not start: \(text)"])
        }
        return OpenSSLServer(port: port, process: process, folder: folder)
    }

    /// Stops the server and removes its files.
    func shutdown() async throws {
        try await offThePools {
            // SIGKILL: nothing of the server's needs a clean exit.
            self.process.signal(SIGKILL)
            self.process.waitForExit()
            try? FileManager.default.removeItem(at: self.folder)
        }
    }
}

/// Runs `body` with an `openssl s_server` (see ``OpenSSLServer/start(chain:key:clientCA:arguments:)``),
/// stopped afterwards whatever happens.
@discardableResult
func withOpenSSLServer<T>(
    chain: [String],
    key: String,
    clientCA: String? = nil,
    arguments: [String] = [],
    _ body: (OpenSSLServer) async throws -> T
) async throws -> T {
    try await withShutdown(of: try await OpenSSLServer.start(chain: chain, key: key, clientCA: clientCA, arguments: arguments), body)
}
