import Foundation
import Courier

/// The command's exit statuses; the DocC article *The courier command* (CommandLine.md) lists them
/// under "Exit status". 1–6 follow HTTPie's.
struct ExitStatus: Error, Hashable, Sendable {
    let rawValue: Int32

    /// The request was sent and a response came back (any status without `--check-status`).
    static let success = ExitStatus(rawValue: 0)
    /// The request failed: connection refused or reset, TLS or pinning refusal, a file that
    /// could not be written; or a check of `courier demo` failed.
    static let failure = ExitStatus(rawValue: 1)
    /// The request timed out (`--timeout`).
    static let timeout = ExitStatus(rawValue: 2)
    /// `--check-status` (or `--download`) and a 3xx without `--follow`.
    static let redirection = ExitStatus(rawValue: 3)
    /// `--check-status` (or `--download`) and a 4xx.
    static let clientError = ExitStatus(rawValue: 4)
    /// `--check-status` (or `--download`) and a 5xx.
    static let serverError = ExitStatus(rawValue: 5)
    /// More redirects than `--max-redirects`.
    static let tooManyRedirects = ExitStatus(rawValue: 6)
    /// The command line is wrong: an unknown flag, a missing value, a malformed item, a bad URL
    /// (sysexits' `EX_USAGE`).
    static let usage = ExitStatus(rawValue: 64)
    /// A file named on the command line cannot be read (sysexits' `EX_NOINPUT`).
    static let unreadableInput = ExitStatus(rawValue: 66)

    /// The status `--check-status` gives a response status, or nil for 1xx and 2xx, and for a
    /// 3xx when redirects were followed (`followingRedirects`): one that was not followed (a
    /// 304, a 300 without `Location`) is then the answer, as HTTPie counts it.
    static func checking(_ status: HTTPResponse.Status, followingRedirects: Bool = false) -> ExitStatus? {
        switch status.kind {
        case .redirection: followingRedirects ? nil : .redirection
        case .clientError: .clientError
        case .serverError: .serverError
        default: nil
        }
    }

    /// The status for a failed request.
    static func failing(_ error: CourierError) -> ExitStatus {
        switch error.code {
        case .timedOut: .timeout
        case .tooManyRedirects: .tooManyRedirects
        default: .failure
        }
    }
}

/// A failure the command reports in one line, with its exit status.
struct CLIFailure: Error, Sendable {
    let status: ExitStatus
    let message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message.replacingOccurrences(of: "\n", with: " ")
    }

    static func usage(_ message: String) -> CLIFailure { CLIFailure(.usage, message) }

    /// A library error: its message, and the status its code calls for.
    static func request(_ error: CourierError) -> CLIFailure {
        CLIFailure(ExitStatus.failing(error), error.message)
    }
}
