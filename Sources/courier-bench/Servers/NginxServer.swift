import CourierTesting
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// nginx from the distribution's packages, run as a child process with its own configuration in a
/// temporary directory: one worker, no access log, keep-alive for a million requests, a loopback
/// port chosen free.
final class NginxServer: BenchServer {
    static let binary = "/usr/sbin/nginx"

    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: Self.binary) }

    let url: URL
    let summary: String
    /// nginx serves ``url``'s resources on this Unix-domain socket too, with TLS (and HTTP/2)
    /// when ``url`` has them: the `-unix` clients reach it through ``SessionConfiguration/unixSocketPaths``.
    let unixSocketPath: String?
    private let process: Process
    private let directory: URL
    /// Files put here are served under `/files/`.
    var filesDirectory: URL { self.directory.appendingPathComponent("files") }

    private init(process: Process, directory: URL, port: Int, version: String, tls: Bool, http2: Bool) {
        self.process = process
        self.directory = directory
        self.unixSocketPath = Self.socketPath(in: directory.path)
        self.url = URL(string: "\(tls ? "https" : "http")://127.0.0.1:\(port)\(ServerLauncher.path)")!
        self.summary = "\(version) (1 worker, keep-alive\(tls ? (http2 ? ", TLS, HTTP/2 offered" : ", TLS") : "")) at \(self.url.absoluteString)"
    }

    /// Starts nginx and returns once it answers; a taken port is retried with another. With
    /// `tls`, it serves HTTPS with CourierTesting's `localhost` certificate (and plain HTTP on a
    /// second port, only to see that it is up).
    /// With `http2` as well, the TLS port offers `h2` through ALPN.
    static func start(tls: Bool = false, http2: Bool = false) async throws -> NginxServer {
        guard Self.isInstalled else {
            throw ServerLauncher.Failure(description: "\(Self.binary) not found: apt-get install nginx-light, or use --server testserver")
        }
        var lastError: (any Error)?
        for _ in 0..<3 {
            do {
                return try await Self.startOnce(tls: tls, http2: http2)
            } catch {
                lastError = error
            }
        }
        throw lastError!
    }

    private static func startOnce(tls: Bool, http2: Bool) async throws -> NginxServer {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("courier-bench-nginx-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("files"), withIntermediateDirectories: true)
        let port = try LoopbackProbe.freePort()
        var probePort = port
        var tlsListener: TLSListener?
        if tls {
            probePort = try LoopbackProbe.freePort()
            let chain = directory.appendingPathComponent("localhost-chain.pem")
            let key = directory.appendingPathComponent("localhost-key.pem")
            try (TestCertificates.localhostLeaf + "\n" + TestCertificates.intermediateCA).write(to: chain, atomically: true, encoding: .utf8)
            try TestCertificates.localhostKey.write(to: key, atomically: true, encoding: .utf8)
            tlsListener = TLSListener(port: port, certificate: chain.path, key: key.path, http2: http2)
        }
        let configuration = directory.appendingPathComponent("nginx.conf")
        try Self.configuration(directory: directory.path, port: probePort, tls: tlsListener)
            .write(to: configuration, atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["-p", directory.path, "-c", configuration.path, "-e", directory.appendingPathComponent("error.log").path, "-g", "daemon off;"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        ChildProcesses.register(process.processIdentifier, directory: directory.path)
        let server = NginxServer(process: process, directory: directory, port: port, version: Self.version(), tls: tls, http2: http2)

        // nginx needs a few milliseconds; give up after 5 s or when it exits (port taken, bad config).
        for _ in 0..<250 {
            if !process.isRunning { break }
            if LoopbackProbe.answers200(port: probePort, path: ServerLauncher.path) { return server }
            try await Task.sleep(for: .milliseconds(20))
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        await server.stop()
        throw ServerLauncher.Failure(description: "nginx did not answer on 127.0.0.1:\(probePort): \(log.suffix(500))")
    }

    func stop() async {
        if self.process.isRunning {
            // SIGTERM: nginx's fast shutdown; the master stops its worker.
            self.process.terminate()
            for _ in 0..<150 where self.process.isRunning {
                try? await Task.sleep(for: .milliseconds(20))
            }
            if self.process.isRunning { kill(self.process.processIdentifier, SIGKILL) }
        }
        ChildProcesses.unregister(self.process.processIdentifier)
        try? FileManager.default.removeItem(at: self.directory)
    }

    private static func version() -> String {
        // `nginx -v` prints "nginx version: nginx/1.22.1" on stderr.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["-v"]
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return "nginx" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.components(separatedBy: "version: ").last ?? "nginx"
    }

    /// Every path nginx writes to is inside `directory`, so it needs no system directory.
    /// An HTTPS listener: its port and the PEM files of its chain and key.
    struct TLSListener {
        var port: Int
        var certificate: String
        var key: String
        /// Offer `h2` through ALPN (nginx 1.22's `listen … ssl http2`).
        var http2 = false
    }

    /// The Unix-domain socket nginx listens on beside its ports.
    static func socketPath(in directory: String) -> String { "\(directory)/nginx.sock" }

    static func configuration(directory: String, port: Int, tls: TLSListener? = nil) -> String {
        """
        worker_processes 1;
        pid \(directory)/nginx.pid;
        error_log \(directory)/error.log warn;
        \(getuid() == 0 ? "user root;" : "")

        events {
            worker_connections 4096;
        }

        http {
            access_log off;
            keepalive_requests 1000000;
            keepalive_timeout 65;
            client_body_temp_path \(directory)/client_body;
            proxy_temp_path \(directory)/proxy;
            fastcgi_temp_path \(directory)/fastcgi;
            uwsgi_temp_path \(directory)/uwsgi;
            scgi_temp_path \(directory)/scgi;

            server {
                listen 127.0.0.1:\(port);
                \(tls.map { "listen 127.0.0.1:\($0.port) ssl\($0.http2 ? " http2" : ""); ssl_certificate \($0.certificate); ssl_certificate_key \($0.key);" } ?? "")
                listen unix:\(Self.socketPath(in: directory))\(tls.map { " ssl\($0.http2 ? " http2" : "")" } ?? "");
                location = \(ServerLauncher.path) {
                    default_type application/json;
                    return 200 '\(ServerLauncher.body)';
                }
                # courier-bench transfer: files to download, and a sink for uploads.
                location /files/ {
                    alias \(directory)/files/;
                    sendfile on;
                }
                # courier-bench cache: the same files, fresh for an hour.
                location /cached/ {
                    alias \(directory)/files/;
                    expires 1h;
                }
                location = /upload {
                    client_max_body_size 0;
                    return 204;
                }
                location / {
                    return 404;
                }
            }
        }

        """
    }
}
