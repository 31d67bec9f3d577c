import ArgumentParser
import Foundation

/// The process entry point: parses the command line, runs the command, and turns every failure
/// into one line on standard error and an exit status (``ExitStatus``), never a stack trace.
@main
enum Entry {
    static func main() async {
        // A reader that goes away (`courier … | head`) must not kill the process mid-write.
        signal(SIGPIPE, SIG_IGN)
        let status: ExitStatus
        do {
            var command = try CourierCommand.parseAsRoot()
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
            status = .success
        } catch let failure as CLIFailure {
            Console.standardError.write(line: "courier: error: " + failure.message)
            status = failure.status
        } catch let exit as ExitStatus {
            status = exit
        } catch {
            let code = CourierCommand.exitCode(for: error)
            if code == .success {
                // --help, --version: ArgumentParser prints them and exits 0.
                CourierCommand.exit(withError: error)
            }
            let message = CourierCommand.message(for: error)
                .split(whereSeparator: \.isNewline).first.map(String.init) ?? "\(error)"
            Console.standardError.write(line: "courier: error: " + Self.trimmingPrefix(message))
            status = .usage
        }
        Console.standardOutput.flush()
        exit(status.rawValue)
    }

    /// ArgumentParser's messages start with "Error: "; ours start with "courier: error: ".
    private static func trimmingPrefix(_ message: String) -> String {
        message.hasPrefix("Error: ") ? String(message.dropFirst("Error: ".count)) : message
    }
}
