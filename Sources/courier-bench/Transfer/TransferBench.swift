import Foundation

/// `courier-bench transfer`: a large download to a file and a large upload from a file, Courier
/// against raw AsyncHTTPClient (and, with `--kinds stream`, a streamed download through the
/// generated OpenAPI client against Courier's own stream), through nginx on loopback. Each measured transfer runs in a child
/// process of its own (so its peak RSS is its own); the clients take turns, A-B-B-A.
enum TransferBench {
    static let usage = """
        usage: courier-bench transfer [--megabytes N] [--repeat K] [--kinds floor,download,upload,multipart,stream] [--tls] [--http2] [--json]

          --megabytes  size of the file moved, in MiB (default: 1024)
          --repeat     rounds; each round runs every client twice, A-B-B-A (default: 2)
          --kinds      which transfers (default: download,upload,multipart); multipart is Courier's
                       multipart form with the file as its part against raw AHC streaming the file;
                       floor downloads a 1 KiB file the same way as download: the peak RSS of a
                       process that made one request, which a large download's peak starts from
                       stream (not in the default) reads the file as a streamed body, Courier's
                       SessionManager.stream against the generated OpenAPI client on CourierTransport
                       (clients courier and openapi)
          --tls        over HTTPS: nginx presents CourierTesting's localhost chain, both clients trust its root
          --http2      over HTTPS with nginx offering h2 (implies --tls); both clients take it
        """

    struct Row: Codable {
        var kind: String
        var client: String
        var megabytesPerSecond: [Double]
        var peakRSSMiB: [Double]
        /// Resident memory before each transfer, and after it with its client released.
        var startRSSMiB: [Double] = []
        var endRSSMiB: [Double] = []
    }

    static func run(_ arguments: [String]) async -> Int32 {
        var megabytes = 1024
        var rounds = 2
        var kinds = ["download", "upload", "multipart"]
        var json = false
        var tls = false
        var http2 = false
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            switch argument {
            case "--megabytes": megabytes = remaining.popFirst().flatMap { Int($0) } ?? 0
            case "--repeat": rounds = remaining.popFirst().flatMap { Int($0) } ?? 0
            case "--kinds": kinds = remaining.popFirst()?.split(separator: ",").map(String.init) ?? []
            case "--json": json = true
            case "--tls": tls = true
            case "--http2": (tls, http2) = (true, true)
            default:
                FileHandle.standardError.write(Data("\(usage)\n".utf8))
                return argument == "--help" ? 0 : 2
            }
        }
        guard megabytes > 0, rounds > 0, !kinds.isEmpty, kinds.allSatisfy({ ["floor", "download", "upload", "multipart", "stream"].contains($0) }) else {
            FileHandle.standardError.write(Data("\(usage)\n".utf8))
            return 2
        }
        ChildProcesses.installSignalHandlers()
        let nginx: NginxServer
        do {
            nginx = try await NginxServer.start(tls: tls, http2: http2)
        } catch {
            FileHandle.standardError.write(Data("courier-bench: \(error)\n".utf8))
            return 1
        }
        let bytes = Int64(megabytes) << 20
        let file = nginx.filesDirectory.appendingPathComponent("blob")
        let small = nginx.filesDirectory.appendingPathComponent("small")
        do {
            try Self.makeFile(file, megabytes: megabytes)
            try Data(repeating: 0x61, count: Self.floorBytes).write(to: small)
        } catch {
            FileHandle.standardError.write(Data("courier-bench: cannot write \(file.path): \(error)\n".utf8))
            await nginx.stop()
            return 1
        }
        let base = nginx.url.deletingLastPathComponent()
        FileHandle.standardError.write(Data("server: \(nginx.summary); file: \(megabytes) MiB\n".utf8))

        var rows: [String: Row] = [:]
        var failed = false
        for _ in 0..<rounds {
            for kind in kinds {
                let url =
                    switch kind {
                    case "download", "stream": base.appendingPathComponent("files/blob")
                    case "floor": base.appendingPathComponent("files/small")
                    default: base.appendingPathComponent("upload")
                    }
                let size = kind == "floor" ? Int64(Self.floorBytes) : bytes
                let other = kind == "stream" ? "openapi" : "ahc"
                for client in ["courier", other, other, "courier"] {
                    guard let measurement = ChildProcesses.measure("transfer-child", [kind, client, url.absoluteString, file.path, String(size)], as: TransferChild.Measurement.self) else {
                        failed = true
                        continue
                    }
                    let key = "\(kind) \(client)"
                    var row = rows[key] ?? Row(kind: kind, client: client, megabytesPerSecond: [], peakRSSMiB: [])
                    row.megabytesPerSecond.append(Double(measurement.bytes) / 1e6 / measurement.seconds)
                    row.peakRSSMiB.append(Double(measurement.peakRSSKiB) / 1024)
                    row.startRSSMiB.append(measurement.startRSSMiB)
                    row.endRSSMiB.append(measurement.endRSSMiB)
                    rows[key] = row
                    FileHandle.standardError.write(Data(String(format: "%@ %@: %.0f MB/s, RSS %.1f MiB before, peak %.1f MiB, %.1f MiB after\n", kind, client,
                        Double(measurement.bytes) / 1e6 / measurement.seconds, measurement.startRSSMiB, Double(measurement.peakRSSKiB) / 1024,
                        measurement.endRSSMiB).utf8))
                }
            }
        }
        await nginx.stop()
        Self.report(rows.values.sorted { ($0.kind, $0.client) < ($1.kind, $1.client) }, kinds: kinds, megabytes: megabytes, json: json)
        return failed ? 3 : 0
    }

    /// The size of the `floor` kind's file.
    static let floorBytes = 1024

    /// A file of `megabytes` MiB of varied bytes, written 1 MiB at a time.
    private static func makeFile(_ url: URL, megabytes: Int) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var block = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        for index in 0..<megabytes {
            block[0] = UInt8(truncatingIfNeeded: index)
            try handle.write(contentsOf: block)
        }
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    private static func report(_ rows: [Row], kinds: [String], megabytes: Int, json: Bool) {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: (try? encoder.encode(rows)) ?? Data(), as: UTF8.self))
            return
        }
        print("transfer of \(megabytes) MiB through nginx on loopback; medians over \(rows.first?.megabytesPerSecond.count ?? 0) runs per client")
        print("kind      client    MB/s (median)   RSS MiB before (median)   peak RSS MiB (max)   RSS MiB after (median)")
        for row in rows {
            print(String(format: "%-9@ %-9@ %13.0f   %23.1f   %18.1f   %22.1f", row.kind, row.client, Self.median(row.megabytesPerSecond),
                Self.median(row.startRSSMiB), row.peakRSSMiB.max() ?? .nan, Self.median(row.endRSSMiB)))
        }
        for kind in kinds where kind != "floor" {
            let courier = rows.first { $0.kind == kind && $0.client == "courier" }
            let ahc = rows.first { $0.kind == kind && $0.client == "ahc" }
            if let courier, let ahc {
                print(String(format: "%@: Courier/AHC %.2fx", kind, Self.median(courier.megabytesPerSecond) / Self.median(ahc.megabytesPerSecond)))
            }
            if let courier, let openapi = rows.first(where: { $0.kind == kind && $0.client == "openapi" }) {
                print(String(format: "%@: OpenAPI on CourierTransport/Courier %.2fx, peak RSS %.1f vs %.1f MiB", kind,
                    Self.median(openapi.megabytesPerSecond) / Self.median(courier.megabytesPerSecond),
                    openapi.peakRSSMiB.max() ?? .nan, courier.peakRSSMiB.max() ?? .nan))
            }
        }
    }
}
