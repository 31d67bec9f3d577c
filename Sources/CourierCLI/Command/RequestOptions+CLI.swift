import ArgumentParser

/// How the output is dressed (HTTPie's `--pretty`).
enum PrettyOption: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// Colours and formatting.
    case all
    /// Colours only.
    case colors
    /// Formatting (indented JSON and XML) only.
    case format
    /// The bytes as they came.
    case none
}
