import Foundation

// courier-bench: Courier, raw AsyncHTTPClient and raw URLSession on the same work against one
// local server. Run in release mode: `swift run -c release courier-bench --help`.

switch CommandLine.arguments.dropFirst().first {
case "json":
    JSONBench.run(Array(CommandLine.arguments.dropFirst(2)))
    exit(0)
case "transfer":
    exit(await TransferBench.run(Array(CommandLine.arguments.dropFirst(2))))
case "soak":
    exit(await SoakBench.run(Array(CommandLine.arguments.dropFirst(2))))
case "soak-mixed":
    exit(await MixedSoakBench.run(Array(CommandLine.arguments.dropFirst(2))))
case "transfer-child":
    exit(await TransferChild.run(Array(CommandLine.arguments.dropFirst(2))))
case "session":
    exit(await SessionOverheadBench.run(Array(CommandLine.arguments.dropFirst(2))))
case "ws":
    exit(await WebSocketBench.run(Array(CommandLine.arguments.dropFirst(2))))
case "ws-child":
    exit(await WebSocketBenchChild.run(Array(CommandLine.arguments.dropFirst(2))))
case "cache", "cookies":
    exit(await SessionFeatureBench.run(CommandLine.arguments[1], Array(CommandLine.arguments.dropFirst(2))))
default:
    break
}

let arguments: Arguments
do {
    arguments = try Arguments.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    let message = error.description.isEmpty ? Arguments.usage : "courier-bench: \(error)\n\(Arguments.usage)"
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(error.description.isEmpty ? 0 : 2)
}

ChildProcesses.installSignalHandlers()
let loadBefore = MachineLoad.current()
let server: any BenchServer
do {
    server = try await ServerLauncher.start(arguments)
} catch {
    FileHandle.standardError.write(Data("courier-bench: \(error)\n".utf8))
    exit(1)
}
FileHandle.standardError.write(Data("server: \(server.summary)\n".utf8))

let results = await Runner(arguments: arguments, url: server.url, unixSocketPath: server.unixSocketPath).runAll()
await server.stop()

let document = Report.Document(
    server: server.summary, loadBefore: loadBefore, loadAfter: MachineLoad.current(),
    arguments: Array(CommandLine.arguments.dropFirst()), runs: results, ratios: Report.ratios(results))
if arguments.json {
    Report.printJSON(document)
} else {
    Report.printTable(document)
}
exit(results.contains { $0.summary.failures > 0 } ? 3 : 0)
