/// Whether output gets colours and formatting: `--pretty`, else all on a terminal and none when
/// piped (so that piped bytes are the server's bytes).
struct OutputStyle: Sendable {
    var colors: Bool
    var format: Bool
    /// Whether standard output is a terminal (binary bodies are not written to one).
    var terminal: Bool

    init(pretty: PrettyOption?, console: Console) {
        let terminal = console.isTerminal
        let choice = pretty ?? (terminal ? .all : PrettyOption.none)
        self.colors = choice == .all || choice == .colors
        self.format = choice == .all || choice == .format
        self.terminal = terminal
    }

    init(colors: Bool, format: Bool, terminal: Bool) {
        self.colors = colors
        self.format = format
        self.terminal = terminal
    }

    /// `text` in an ANSI colour when colours are on.
    func paint(_ text: String, _ color: ANSIColor) -> String {
        self.colors ? color.rawValue + text + ANSIColor.reset.rawValue : text
    }
}

/// The few terminal colours the output uses.
enum ANSIColor: String, Sendable {
    case reset = "\u{1B}[0m"
    case blue = "\u{1B}[34m"
    case cyan = "\u{1B}[36m"
    case green = "\u{1B}[32m"
    case yellow = "\u{1B}[33m"
    case red = "\u{1B}[31m"
    case magenta = "\u{1B}[35m"
    case gray = "\u{1B}[90m"
}
