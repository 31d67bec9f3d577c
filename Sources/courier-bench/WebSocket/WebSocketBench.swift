import CourierTesting
import Foundation

/// `courier-bench ws`: Courier's `WebSocketTask` beside swift-websocket's `WSClient` against the
/// same in-process echo server (`TestServer`'s `/courier/websocket/echo`, and `discard` for the
/// one-way transfer). Each run is a child process of its own (`ws-child`), so that its CPU time
/// and peak RSS are the client's alone; the clients take turns, A-B-B-A.
///
/// Scenarios:
/// - `sequential`: one connection, one echo round trip after another.
/// - `concurrent`: `--connections` connections (64), each doing its share of round trips at once.
/// - `oneway`: `--megabytes` MiB of binary messages of `--size` bytes to the server, which
///   drops them; a text message after them comes back once it read them all.
///
/// Reported per client: messages a second (round trips for the echo scenarios), CPU µs per
/// message (user and system, the client process only), peak RSS; and Courier's ratio to WSClient.
enum WebSocketBench {
    static let usage = """
        usage: courier-bench ws [--scenarios sequential,concurrent,oneway] [--clients courier,wsclient]
                                [--round-trips N] [--connections N] [--megabytes M] [--size BYTES]
                                [--echo-size BYTES] [--repeat K]

          echo round trips and a one-way transfer over WebSockets, Courier's WebSocketTask beside
          swift-websocket's WSClient, against TestServer's WebSocket routes (in this process);
          each run is a child process, so CPU and peak RSS are the client's own
          --scenarios    which to run (default: all three)
          --clients      which clients (default: courier,wsclient)
          --round-trips  measured echo round trips per run, over all connections (default: 20000)
          --connections  connections of the concurrent scenario (default: 64)
          --megabytes    MiB sent one way (default: 256; 1024 for the issue's 1 GiB)
          --size         bytes per one-way message (default: 65536)
          --echo-size    bytes per echo message (default: 32)
          --repeat       rounds of A-B-B-A turns (default: 1)
        """

    struct Options {
        var scenarios = ["sequential", "concurrent", "oneway"]
        var clients = ["courier", "wsclient"]
        var roundTrips = 20_000
        var connections = 64
        var megabytes = 256
        var size = 65_536
        var echoSize = 32
        var repeats = 1
    }

    struct Row {
        var rates: [Double] = []
        var cpuPerMessage: [Double] = []
        var peakRSSMiB: [Double] = []
    }

    static func run(_ arguments: [String]) async -> Int32 {
        let options: Options
        switch Self.parse(arguments) {
        case .success(let parsed): options = parsed
        case .failure(let failure):
            FileHandle.standardError.write(Data("\(failure.description.isEmpty ? "" : "courier-bench ws: \(failure.description)\n")\(Self.usage)\n".utf8))
            return failure.description.isEmpty ? 0 : 2
        }
        ChildProcesses.installSignalHandlers()
        let server: TestServer
        do {
            server = try await TestServer.start()
        } catch {
            FileHandle.standardError.write(Data("courier-bench ws: the test server: \(error)\n".utf8))
            return 1
        }
        let base = server.baseURL.absoluteString.replacingOccurrences(of: "http://", with: "ws://") + "courier/websocket/"
        FileHandle.standardError.write(Data("server: TestServer (in process) at \(base)\n".utf8))
        var rows: [String: Row] = [:]
        var failed = false
        for _ in 0..<options.repeats {
            for scenario in options.scenarios {
                let turns = options.clients.count == 2 ? options.clients + options.clients.reversed() : options.clients
                for client in turns {
                    let arguments = Self.childArguments(scenario: scenario, client: client, base: base, options: options)
                    guard let measurement = ChildProcesses.measure("ws-child", arguments, as: WebSocketBenchChild.Measurement.self) else {
                        failed = true
                        continue
                    }
                    let rate = Double(measurement.messages) / measurement.seconds
                    let cpu = Double(measurement.cpuMicroseconds) / Double(measurement.messages)
                    let peak = Double(measurement.peakRSSKiB) / 1024
                    rows["\(scenario) \(client)", default: Row()].rates.append(rate)
                    rows["\(scenario) \(client)", default: Row()].cpuPerMessage.append(cpu)
                    rows["\(scenario) \(client)", default: Row()].peakRSSMiB.append(peak)
                    var line = String(format: "%@ %@: %.0f msg/s, %.2f µs CPU/msg, peak RSS %.1f MiB", scenario, client, rate, cpu, peak)
                    if scenario == "oneway" { line += String(format: ", %.0f MB/s", Double(measurement.bytes) / 1e6 / measurement.seconds) }
                    FileHandle.standardError.write(Data((line + "\n").utf8))
                }
            }
        }
        try? await server.shutdown()
        Self.report(rows, options: options)
        return failed ? 3 : 0
    }

    private static func childArguments(scenario: String, client: String, base: String, options: Options) -> [String] {
        switch scenario {
        case "sequential":
            [scenario, client, base + "echo", String(options.roundTrips), String(options.echoSize), "1"]
        case "concurrent":
            [scenario, client, base + "echo", String(options.roundTrips), String(options.echoSize), String(options.connections)]
        default:
            [scenario, client, base + "discard", String(Int((Int64(options.megabytes) << 20) / Int64(options.size))), String(options.size), "1"]
        }
    }

    private static func report(_ rows: [String: Row], options: Options) {
        print("courier-bench ws  (\(options.roundTrips) round trips, \(options.connections) connections, \(options.megabytes) MiB one way in \(options.size)-byte messages, \(options.repeats) rounds, load \(MachineLoad.current() ?? "?"))")
        print("scenario    client     msg/s (median)   CPU µs/msg (median)   peak RSS MiB (max)")
        for scenario in options.scenarios {
            for client in options.clients {
                guard let row = rows["\(scenario) \(client)"] else { continue }
                print(String(format: "%@ %@ %16.0f %21.2f %20.1f",
                    scenario.padding(toLength: 11, withPad: " ", startingAt: 0), client.padding(toLength: 9, withPad: " ", startingAt: 0),
                    row.rates.median, row.cpuPerMessage.median, row.peakRSSMiB.max() ?? .nan))
            }
            if let courier = rows["\(scenario) courier"], let other = rows["\(scenario) wsclient"] {
                print(String(format: "%@: Courier/WSClient %.2fx msg/s, %.2fx CPU per message",
                    scenario, courier.rates.median / other.rates.median, courier.cpuPerMessage.median / other.cpuPerMessage.median))
            }
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private static func parse(_ arguments: [String]) -> Result<Options, Failure> {
        var options = Options()
        var remaining = arguments[...]
        func number(_ option: String) -> Int? {
            remaining.popFirst().flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil }
        }
        while let argument = remaining.popFirst() {
            switch argument {
            case "--scenarios":
                options.scenarios = (remaining.popFirst() ?? "").split(separator: ",").map(String.init)
                guard !options.scenarios.isEmpty, options.scenarios.allSatisfy({ ["sequential", "concurrent", "oneway"].contains($0) }) else {
                    return .failure(Failure(description: "--scenarios takes sequential, concurrent and oneway"))
                }
            case "--clients":
                options.clients = (remaining.popFirst() ?? "").split(separator: ",").map(String.init)
                guard !options.clients.isEmpty, options.clients.allSatisfy({ ["courier", "wsclient"].contains($0) }) else {
                    return .failure(Failure(description: "--clients takes courier and wsclient"))
                }
            case "--round-trips", "--connections", "--megabytes", "--size", "--echo-size", "--repeat":
                guard let value = number(argument) else { return .failure(Failure(description: "\(argument) needs a positive integer")) }
                switch argument {
                case "--round-trips": options.roundTrips = value
                case "--connections": options.connections = value
                case "--megabytes": options.megabytes = value
                case "--size": options.size = value
                case "--echo-size": options.echoSize = value
                default: options.repeats = value
                }
            case "--help", "-h":
                return .failure(Failure(description: ""))
            default:
                return .failure(Failure(description: "unknown argument \(argument)"))
            }
        }
        guard options.size <= 1 << 20, options.echoSize <= 1 << 20 else {
            return .failure(Failure(description: "--size and --echo-size are at most 1048576 (the clients' maximum message size)"))
        }
        return .success(options)
    }
}
