import ArgumentParser
import Courier
import CourierTesting
import Foundation

/// `courier demo`: starts ``TestServer`` on 127.0.0.1 (HTTP and HTTPS) and walks through the
/// seeds' examples with the library, printing what each step sends and gets. Loopback only.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "A guided tour of Courier on an embedded local server (loopback only).",
        helpNames: [.long]
    )

    @Option(name: .long, help: "Bytes the download step fetches.")
    var downloadSize: Int = 8 << 20

    @Option(name: .long, help: "Pace of the download step, in bytes a second (0: as fast as possible).")
    var downloadRate: Int = 8 << 20

    @Option(name: .long, help: "Colours: all, colors, format, none (default: all on a terminal).")
    var pretty: PrettyOption?

    func validate() throws {
        if self.downloadSize < 0 { throw ValidationError("--download-size must not be negative") }
        if self.downloadRate < 0 { throw ValidationError("--download-rate must not be negative") }
    }

    func run() async throws {
        let style = OutputStyle(pretty: self.pretty, console: .standardOutput)
        let http: TestServer
        let https: TestServer
        do {
            http = try await TestServer.start()
            https = try await TestServer.start(.https())
        } catch {
            throw CLIFailure(.failure, "the demo server could not start: \(error)")
        }
        let tour = DemoTour(http: http, https: https, style: style, downloadSize: self.downloadSize, downloadRate: self.downloadRate)
        do {
            try await tour.run()
        } catch {
            try? await http.shutdown()
            try? await https.shutdown()
            throw error
        }
        try? await http.shutdown()
        try? await https.shutdown()
    }
}
