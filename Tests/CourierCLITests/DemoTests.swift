@testable import CourierCLI
import Foundation
import Testing

/// `courier demo` runs every step on its embedded server and exits 0.
@Suite("CLI: demo")
struct DemoTests {
    @Test("The demo walks through its seven steps")
    func demo() async throws {
        let result = try await CLIRunner.run(["demo", "--download-size", "300000", "--download-rate", "0"])
        #expect(result.status == 0, "\(result.standardError)")
        let text = result.output
        for step in 1...7 { #expect(text.contains("\n\(step). "), "step \(step)") }
        #expect(text.contains("args {\"lang\":\"swift\",\"q\":\"courier\"}"))
        #expect(text.contains("form {\"city\":\"Zürich\",\"name\":\"Ada\"}"))
        #expect(text.contains("CRC-32 matches"))
        #expect(text.contains("pinned to Courier's test root CA: trusted"))
        #expect(text.contains("pinned to another certificate: refused"))
        #expect(text.contains("status: "))
        #expect(!text.contains("\u{1B}["))
    }

    /// A failed check (a download's CRC-32, a wrong pin accepted) was printed and the demo went
    /// on, exiting 0.
    @Test("A failed check ends the demo with status 1")
    func aFailedCheckFails() throws {
        try DemoTour.check(true, "never shown")
        do {
            try DemoTour.check(false, "the downloaded file's CRC-32 does not match the served file's")
            Issue.record("a failed check did not fail")
        } catch {
            #expect(error.status == .failure)
            #expect(error.message == "the demo's check failed: the downloaded file's CRC-32 does not match the served file's")
        }
    }
}
