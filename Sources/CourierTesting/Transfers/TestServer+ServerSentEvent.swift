extension TestServer {
    /// One server-sent event (the `text/event-stream` format of the HTML standard), and the
    /// events `/courier/sse` sends.
    ///
    /// `/courier/sse` sends a prelude, ``courierPrelude(retry:)``, then for each event number `i`
    /// of `count` the block of ``courier(_:of:event:)``:
    ///
    /// ```
    /// : courier event stream
    /// retry: 1500
    ///
    /// id: 1
    /// event: tick
    /// data: event 1
    /// data: of 3
    ///
    /// ```
    ///
    /// (every line ends with a single `\n`; the `retry:` line only with the `retry` option). A
    /// client that parses the stream sees events whose ``data`` is `"event 1\nof 3"`.
    public struct ServerSentEvent: Sendable, Hashable {
        /// The `id:` field, or nil for none.
        public var id: String?
        /// The `event:` field (the event type), or nil for none.
        public var event: String?
        /// The data: the `data:` lines joined with `\n`.
        public var data: String

        /// Makes an event.
        public init(id: String? = nil, event: String? = nil, data: String) {
            self.id = id
            self.event = event
            self.data = data
        }

        /// The event's block on the wire: `id:` and `event:` when set, one `data:` line per line of
        /// ``data`` (lines end at CR LF, LF or CR, as a client reads them), then an empty line.
        public var wireFormat: String {
            var text = ""
            if let id = self.id { text += "id: \(id)\n" }
            if let event = self.event { text += "event: \(event)\n" }
            // Scalars, not `Character`s: CR LF is one `Character`, and a combining mark joins the
            // line end before it into one.
            var line = String.UnicodeScalarView()
            var afterCR = false
            for scalar in self.data.unicodeScalars {
                defer { afterCR = scalar == "\r" }
                if scalar == "\n" && afterCR { continue }
                if scalar == "\n" || scalar == "\r" {
                    text += "data: \(String(line))\n"
                    line = String.UnicodeScalarView()
                } else {
                    line.append(scalar)
                }
            }
            return text + "data: \(String(line))\n\n"
        }

        /// The event `/courier/sse` sends as number `number` of `count`: id `"number"`, type
        /// `event`, data `"event {number}\nof {count}"`.
        public static func courier(_ number: Int, of count: Int, event: String = "tick") -> ServerSentEvent {
            ServerSentEvent(id: String(number), event: event, data: "event \(number)\nof \(count)")
        }

        /// What `/courier/sse` sends before its first event: the comment line
        /// `: courier event stream`, `retry: {retry}` when given, and an empty line. It
        /// dispatches no event.
        public static func courierPrelude(retry: Int? = nil) -> String {
            ": courier event stream\n" + (retry.map { "retry: \($0)\n" } ?? "") + "\n"
        }
    }
}
