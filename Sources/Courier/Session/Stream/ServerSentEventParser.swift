import NIOCore

/// Turns the bytes of a `text/event-stream` into events, chunk by chunk, following the WHATWG
/// HTML standard's "interpreting an event stream": lines end with CR LF, LF or CR (a CR at the end
/// of one chunk and an LF at the start of the next are one ending); a leading byte-order mark is
/// dropped; `:` starts a comment; a field without `:` has an empty value; one space after the
/// colon is dropped; `retry` takes digits only; an `id` containing NUL is ignored; a blank line
/// dispatches the event when it has data.
///
/// What an event holds while it waits for its blank line (the line under way, the `data` gathered,
/// the `event` type) is bounded by ``maximumEventSize``: past it the parser stops and says so
/// (``overflow``), instead of gathering a stream that never ends an event until memory runs out.
struct ServerSentEventParser {
    /// The most bytes an event may hold before its blank line.
    let maximumEventSize: Int
    /// How many bytes the event held when it ran over ``maximumEventSize``; nil while it has not.
    /// Once set, `feed` parses nothing more.
    private(set) var overflow: Int?
    private var line: [UInt8] = []
    private var lastByteWasCR = false
    private var data: [UInt8] = []
    private var hasData = false
    private var eventType: [UInt8] = []
    /// The last event ID: set from ``idBuffer`` as each blank line ends an event (one without
    /// data too), it outlives that event and is sent back as `Last-Event-ID`. An `id` whose event
    /// the stream cut off before its blank line never reaches it, so the server sends that event again.
    private(set) var lastEventID: String?
    /// The last `id` field read (the standard's "last event ID buffer").
    private var idBuffer: String?
    /// The reconnection delay from the last valid `retry` field.
    private(set) var retry: Duration?

    /// A parser whose events hold at most `maximumEventSize` bytes before their blank line.
    init(maximumEventSize: Int = ServerSentEventStream.Options.defaultMaximumEventSize) {
        self.maximumEventSize = maximumEventSize
    }

    /// Parses `chunk` and returns the events it completed (those before an ``overflow`` too).
    mutating func feed(_ chunk: ByteBuffer) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in chunk.readableBytesView {
            guard self.overflow == nil else { break }
            if let seen = self.byteOrderMarkSeen {
                // The byte-order mark EF BB BF, if the stream starts with it, is not content.
                if byte == Self.byteOrderMark[seen] {
                    self.byteOrderMarkSeen = seen + 1 == Self.byteOrderMark.count ? nil : seen + 1
                    continue
                }
                self.byteOrderMarkSeen = nil
                for early in Self.byteOrderMark.prefix(seen) { self.consume(early, into: &events) }
            }
            self.consume(byte, into: &events)
        }
        return events
    }

    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
    /// How many bytes of a leading byte-order mark the stream has matched; nil once past its start.
    private var byteOrderMarkSeen: Int? = 0

    private mutating func consume(_ byte: UInt8, into events: inout [ServerSentEvent]) {
        switch byte {
        case UInt8(ascii: "\n"):
            if self.lastByteWasCR {
                self.lastByteWasCR = false
                return
            }
            self.endLine(into: &events)
        case UInt8(ascii: "\r"):
            self.lastByteWasCR = true
            self.endLine(into: &events)
        default:
            self.lastByteWasCR = false
            self.line.append(byte)
            self.checkSize(line: self.line.count)
        }
    }

    /// Sets ``overflow`` when the event under way, with a line of `line` bytes, holds more than
    /// ``maximumEventSize`` bytes.
    private mutating func checkSize(line: Int) {
        let held = line + self.data.count + self.eventType.count
        if held > self.maximumEventSize { self.overflow = held }
    }

    /// The stream ended: an event not yet dispatched is dropped, as the standard says, with the
    /// `id` it may have read.
    mutating func reset() {
        self.idBuffer = self.lastEventID
        self.line = []
        self.lastByteWasCR = false
        self.data = []
        self.hasData = false
        self.eventType = []
        self.byteOrderMarkSeen = 0
        self.overflow = nil
    }

    private mutating func endLine(into events: inout [ServerSentEvent]) {
        defer { self.line.removeAll(keepingCapacity: true) }
        if self.line.isEmpty {
            if let event = self.dispatch() { events.append(event) }
            return
        }
        if self.line.first == UInt8(ascii: ":") { return }
        let name: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = self.line.firstIndex(of: UInt8(ascii: ":")) {
            name = self.line[..<colon]
            value = self.line[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            name = self.line[...]
            value = []
        }
        switch String(decoding: name, as: UTF8.self) {
        case "event":
            self.eventType = Array(value)
        case "data":
            if self.hasData { self.data.append(UInt8(ascii: "\n")) }
            self.data.append(contentsOf: value)
            self.hasData = true
            // The line is done with: its value is in the data now.
            self.checkSize(line: 0)
        case "id":
            if !value.contains(0) { self.idBuffer = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                let milliseconds = Int64(String(decoding: value, as: UTF8.self))
            {
                self.retry = .milliseconds(milliseconds)
            }
        default:
            break
        }
    }

    private mutating func dispatch() -> ServerSentEvent? {
        self.lastEventID = self.idBuffer
        defer {
            self.data = []
            self.hasData = false
            self.eventType = []
        }
        guard self.hasData else { return nil }
        let type = self.eventType.isEmpty ? "message" : String(decoding: self.eventType, as: UTF8.self)
        let id = self.lastEventID.flatMap { $0.isEmpty ? nil : $0 }
        return ServerSentEvent(event: type, data: String(decoding: self.data, as: UTF8.self), id: id, retry: self.retry)
    }
}
