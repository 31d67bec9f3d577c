/// One event of a `text/event-stream` (the WHATWG HTML standard's server-sent events).
public struct ServerSentEvent: Sendable, Hashable {
    /// The event's type: its `event:` field, `message` when it had none.
    public var event: String
    /// The event's `data:` lines, joined with line feeds.
    public var data: String
    /// The last event ID when the event was dispatched (its own `id:`, or an earlier one), if any.
    public var id: String?
    /// The reconnection delay the stream asked for with `retry:` when this event was dispatched,
    /// if it did.
    public var retry: Duration?

    /// An event.
    public init(event: String = "message", data: String, id: String? = nil, retry: Duration? = nil) {
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry
    }
}
