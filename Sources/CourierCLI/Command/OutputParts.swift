/// Which parts of the exchange are printed (HTTPie's defaults and `--verbose`, `--headers`,
/// `--body`).
struct OutputParts: Equatable {
    var requestHead = false
    var requestBody = false
    var responseHead = false
    var responseBody = false

    init(command: RequestCommand, terminal: Bool) {
        if command.verbose {
            self = OutputParts(requestHead: true, requestBody: true, responseHead: true, responseBody: true)
        } else if command.headers || command.body {
            self.responseHead = command.headers
            self.responseBody = command.body
        } else {
            // A terminal gets the head and the body; a pipe gets the body alone.
            self.responseHead = terminal
            self.responseBody = true
        }
    }

    init(requestHead: Bool, requestBody: Bool, responseHead: Bool, responseBody: Bool) {
        self.requestHead = requestHead
        self.requestBody = requestBody
        self.responseHead = responseHead
        self.responseBody = responseBody
    }
}
