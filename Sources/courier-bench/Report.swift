import Foundation

/// The bench's output: progress on stderr, then a table (or JSON) on stdout.
enum Report {
    struct Document: Codable {
        var server: String
        var loadBefore: String?
        var loadAfter: String?
        var arguments: [String]
        var runs: [RunResult]
        var ratios: [Ratio]
    }

    /// A Courier row's median requests/s over another client's, in one scenario.
    struct Ratio: Codable {
        var scenario: String
        var courierClient: String
        var against: String
        var value: Double
    }

    static func progress(_ result: RunResult) {
        let line = "\(result.scenario) \(result.client) run \(result.run): "
            + "\(format(result.summary.requestsPerSecond, 0)) req/s, p50 \(format(result.summary.p50Milliseconds, 3)) ms, "
            + "p99 \(format(result.summary.p99Milliseconds, 3)) ms, \(result.summary.failures) failures, load \(result.load.map { format($0, 2) } ?? "?"), "
            + "cpu \(result.cpuMicrosecondsPerRequest.map { format($0, 1) } ?? "?") µs/req, "
            + "\(result.voluntarySwitchesPerRequest.map { format($0, 2) } ?? "?") sleeps/req\n"
        FileHandle.standardError.write(Data(line.utf8))
        // Why the run's requests failed (the warm-up's included), the three commonest reasons.
        for (reason, count) in FailureReasons.take().prefix(3) {
            FileHandle.standardError.write(Data("  \(count) failed: \(reason)\n".utf8))
        }
    }

    static func ratios(_ results: [RunResult]) -> [Ratio] {
        var ratios: [Ratio] = []
        let scenarios = results.map(\.scenario).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        for scenario in scenarios {
            func median(_ client: Arguments.ClientKind) -> Double? {
                let values = results.filter { $0.scenario == scenario && $0.client == client.rawValue }.map(\.summary.requestsPerSecond)
                return values.isEmpty ? nil : values.median
            }
            // The cost of interceptors and monitors: their rows over plain Courier's.
            for instrumented in [Arguments.ClientKind.courierObserved, .courierAdapted, .courierNoStores, .courierLean, .courierEngine] {
                if let mine = median(instrumented), let plain = median(.courier), plain > 0 {
                    ratios.append(Ratio(scenario: scenario, courierClient: instrumented.rawValue, against: Arguments.ClientKind.courier.rawValue, value: mine / plain))
                }
            }
            // The same generated OpenAPI client on CourierOpenAPI over AsyncHTTPClient's transport.
            for courier in [Arguments.ClientKind.openapiCourier, .openapiCourierLean] {
                if let mine = median(courier), let theirs = median(.openapiAHC), theirs > 0 {
                    ratios.append(Ratio(scenario: scenario, courierClient: courier.rawValue, against: Arguments.ClientKind.openapiAHC.rawValue, value: mine / theirs))
                }
            }
            for courier in [Arguments.ClientKind.courier, .courierCallback, .courierEngine] {
                for other in [Arguments.ClientKind.ahc, .urlsession, .go] {
                    if let mine = median(courier), let theirs = median(other), theirs > 0 {
                        ratios.append(Ratio(scenario: scenario, courierClient: courier.rawValue, against: other.rawValue, value: mine / theirs))
                    }
                }
            }
        }
        return ratios
    }

    static func printTable(_ document: Document) {
        var lines: [String] = []
        lines.append("courier-bench  server: \(document.server)")
        lines.append("load (1/5/15 min) before: \(document.loadBefore ?? "?")  after: \(document.loadAfter ?? "?")")
        lines.append("")
        let header = ["scenario", "client", "run", "req/s", "p50(ms)", "p99(ms)", "failures", "load", "cpu µs/req", "sleeps/req"]
        var rows: [[String]] = [header]
        for result in document.runs {
            let summary = result.summary
            rows.append([
                result.scenario, result.client, "\(result.run)", format(summary.requestsPerSecond, 0),
                format(summary.p50Milliseconds, 3), format(summary.p99Milliseconds, 3),
                summary.failures == 0 ? "0" : "\(summary.failures) FAILED", result.load.map { format($0, 2) } ?? "?",
                result.cpuMicrosecondsPerRequest.map { format($0, 1) } ?? "?",
                result.voluntarySwitchesPerRequest.map { format($0, 2) } ?? "?",
            ])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            lines.append(row.enumerated().map { column, cell in
                column < 3 ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0) : String(repeating: " ", count: widths[column] - cell.count) + cell
            }.joined(separator: "  "))
        }
        lines.append("")
        let multiple = document.runs.contains { $0.run > 1 }
        for ratio in document.ratios {
            let name = switch ratio.courierClient {
            case Arguments.ClientKind.courier.rawValue: "Courier"
            case Arguments.ClientKind.courierCallback.rawValue: "Courier(callback)"
            default: ratio.courierClient
            }
            let other = switch ratio.against {
            case Arguments.ClientKind.ahc.rawValue: "AHC"
            case Arguments.ClientKind.urlsession.rawValue: "URLSession"
            case Arguments.ClientKind.openapiAHC.rawValue: "openapi-ahc"
            case Arguments.ClientKind.go.rawValue: "Go"
            default: "Courier"
            }
            lines.append("\(ratio.scenario.padding(toLength: 10, withPad: " ", startingAt: 0)) \(name)/\(other): \(format(ratio.value, 2))×\(multiple ? " (medians)" : "")")
        }
        print(lines.joined(separator: "\n"))
    }

    static func printJSON(_ document: Document) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        if let data = try? encoder.encode(document) {
            print(String(decoding: data, as: UTF8.self))
        }
    }

    static func format(_ value: Double, _ decimals: Int) -> String {
        String(format: "%.\(decimals)f", value)
    }
}
