import CourierTesting
import Foundation

/// Go's net/http client (issue 29's Go column), in a process of its own: `Scripts/go-bench`, built
/// with the `go` toolchain on the PATH and started once per scenario. Each run is one line to it
/// (`run N C`) and one JSON line back with the run's figures and the Go process's own CPU time and
/// voluntary context switches, so that its column counts Go's client alone, as the others count
/// courier-bench's process.
final class GoClient: Sendable {
    /// What one run of the Go client reports.
    struct Run: Decodable, Sendable {
        var requests: Int
        var failures: Int
        var nanoseconds: Int64
        var p50Milliseconds: Double
        var p99Milliseconds: Double
        var cpuMicroseconds: Int64
        var voluntarySwitches: Int64
        var protocolName: String

        enum CodingKeys: String, CodingKey {
            case requests, failures, nanoseconds, p50Milliseconds, p99Milliseconds, cpuMicroseconds, voluntarySwitches
            case protocolName = "protocol"
        }

        var summary: Summary {
            Summary(
                requests: self.requests, nanoseconds: UInt64(max(self.nanoseconds, 1)), p50Milliseconds: self.p50Milliseconds,
                p99Milliseconds: self.p99Milliseconds, failures: self.failures)
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let process: Process
    private let input: FileHandle
    private let output: FileHandle
    /// The CA file for https, removed at shutdown.
    private let caFile: URL?

    /// The `go` toolchain's path when one is on the PATH.
    static var toolchain: String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let candidate = "\(folder)/go"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Builds `Scripts/go-bench` (the Go build cache makes later builds instant) and starts it for
    /// `url`, with at most `connections` connections, trusting CourierTesting's root CA for https.
    init(url: URL, connections: Int, http2: Bool) throws {
        guard let go = Self.toolchain else { throw Failure(description: "--clients go needs a go toolchain on the PATH") }
        // Sources/courier-bench/Clients/GoClient.swift → the repository's root.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let source = root.appendingPathComponent("Scripts/go-bench")
        let binary = FileManager.default.temporaryDirectory.appendingPathComponent("courier-go-bench-\(getpid())")
        let build = Process()
        build.executableURL = URL(fileURLWithPath: go)
        build.arguments = ["build", "-o", binary.path, "."]
        build.currentDirectoryURL = source
        var environment = ProcessInfo.processInfo.environment
        if environment["HOME"] == nil { environment["HOME"] = NSTemporaryDirectory() }
        if environment["GOCACHE"] == nil { environment["GOCACHE"] = FileManager.default.temporaryDirectory.appendingPathComponent("courier-go-cache").path }
        environment["GOFLAGS"] = "-mod=mod"
        build.environment = environment
        try build.run()
        build.waitUntilExit()
        guard build.terminationStatus == 0 else { throw Failure(description: "building \(source.path) failed (status \(build.terminationStatus))") }

        var arguments = ["-url", url.absoluteString, "-connections", "\(connections)"]
        if url.scheme == "https" {
            let ca = FileManager.default.temporaryDirectory.appendingPathComponent("courier-go-bench-ca-\(getpid()).pem")
            try Data(TestCertificates.rootCA.utf8).write(to: ca)
            arguments += ["-cacert", ca.path]
            self.caFile = ca
        } else {
            self.caFile = nil
        }
        if http2 { arguments.append("-http2") }
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        // The binary is no longer needed on disk once it runs.
        try? FileManager.default.removeItem(at: binary)
        self.process = process
        self.input = input.fileHandleForWriting
        self.output = output.fileHandleForReading
    }

    /// Sends `requests` GETs with `concurrency` in flight in the Go process and returns its report.
    func run(requests: Int, concurrency: Int) throws -> Run {
        try self.input.write(contentsOf: Data("run \(requests) \(concurrency)\n".utf8))
        var line = Data()
        while true {
            guard let byte = try self.output.read(upToCount: 1), let first = byte.first else {
                throw Failure(description: "go-bench ended without answering")
            }
            if first == UInt8(ascii: "\n") { break }
            line.append(first)
        }
        return try JSONDecoder().decode(Run.self, from: line)
    }

    func shutdown() {
        try? self.input.close()
        self.process.waitUntilExit()
        if let caFile { try? FileManager.default.removeItem(at: caFile) }
    }
}
