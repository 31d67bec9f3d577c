/// Which parts of the exchange are printed (HTTPie's defaults and `--print`, `--verbose`,
/// `--headers`, `--body`).
struct OutputParts: Equatable {
    var requestHead = false
    var requestBody = false
    var responseHead = false
    var responseBody = false
    /// The task's metrics after the body (HTTPie's `m`, its response metadata).
    var metadata = false

    /// The letters `--print` takes, as HTTPie's: `H` request head, `B` request body, `h` response
    /// head, `b` response body, `m` metadata (the task's metrics).
    static let letters: Set<Character> = ["H", "B", "h", "b", "m"]

    init(command: RequestCommand, terminal: Bool) {
        if let letters = command.printed {
            // `--print` chooses, as in HTTPie, whatever `--verbose` says; `--headers` and `--body`
            // add their part, as they do to each other.
            self = OutputParts(letters: letters)
            if command.headers { self.responseHead = true }
            if command.body { self.responseBody = true }
        } else if command.verbose {
            self = OutputParts(requestHead: true, requestBody: true, responseHead: true, responseBody: true, metadata: true)
        } else if command.headers || command.body {
            self.responseHead = command.headers
            self.responseBody = command.body
        } else {
            // A terminal gets the head and the body; a pipe gets the body alone.
            self.responseHead = terminal
            self.responseBody = true
        }
    }

    /// The parts `--print` names (``letters``); any other letter is passed over (the command
    /// refuses it first).
    init(letters: String) {
        self.requestHead = letters.contains("H")
        self.requestBody = letters.contains("B")
        self.responseHead = letters.contains("h")
        self.responseBody = letters.contains("b")
        self.metadata = letters.contains("m")
    }

    init(requestHead: Bool, requestBody: Bool, responseHead: Bool, responseBody: Bool, metadata: Bool = false) {
        self.requestHead = requestHead
        self.requestBody = requestBody
        self.responseHead = responseHead
        self.responseBody = responseBody
        self.metadata = metadata
    }
}
