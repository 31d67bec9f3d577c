import NIOCore
import NIOHTTP2

/// Which DATA frames a connection's request bodies go out as, and when: a value with no channel,
/// byte or promise (it counts lengths), owned by the connection's ``HTTP2ConnectionHandler``.
///
/// Each ``HTTP2Stream`` queues its body's chunks here (their lengths; the bytes stay with it) and
/// its end (END_STREAM, or the trailers' HEADERS); the handler feeds the server's WINDOW_UPDATE
/// and SETTINGS frames, and writes the frames ``nextFrames()`` returns. Courier keeps the server's
/// flow-control windows (the connection's and each stream's, RFC 9113 6.9) itself, so that
/// every DATA frame it hands to swift-nio-http2 fits them: swift-nio-http2's own buffer cut a
/// written frame at a window's edge and sent the tail later as a frame of its own (a 64 KiB chunk
/// in a 65,535-byte window left one byte), and a server that returns exactly what it read (Tomcat)
/// then got non-final DATA frames of 1 to 3 bytes from every stream waiting on the connection's
/// window, which Tomcat counts as abuse (`overheadDataThreshold`) and ends with GOAWAY
/// ENHANCE_YOUR_CALM.
///
/// The rules:
/// - A frame is at most the smaller window and the server's `SETTINGS_MAX_FRAME_SIZE`; frames
///   never join two chunks (a chunk's bytes are not copied).
/// - A DATA frame without END_STREAM is never smaller than ``minimumFrameSize`` (1 KiB, the
///   floor) when it is only part of its chunk: the stream waits for its window to reopen instead,
///   and a chunk is cut so that what is left of it is 0 or at least the floor. A whole chunk
///   goes as it is, however small (a stream's body gives what it gives, and nothing more of it
///   waits). The last frame of a body, with END_STREAM, may be any size; an empty body's end is
///   an empty DATA frame with END_STREAM.
/// - The floor is lowered to half the largest size a window has had, for a server whose windows
///   are that small (a server that grants 512 bytes at a time is sent 512 bytes at a time): a
///   stream waits only while the server owes it more than half of its window back, which a server
///   returns (RFC 9113 leaves when to the server; servers return half a window or less at a time,
///   Tomcat each byte at once).
/// - Streams take turns, one frame each, as swift-nio-http2's buffer does.
///
/// What Courier counts may only be below what swift-nio-http2 counts (a frame is counted when
/// Courier writes it, swift-nio-http2 when it sends it), so nothing Courier writes is cut. A frame
/// swift-nio-http2 dropped unsent (its stream closed first) gives its bytes back to the
/// connection's window (``dataNotSent(length:)``).
struct HTTP2DataScheduler {
    /// The floor: the smallest DATA frame without END_STREAM that carries part of a chunk. 1 KiB is
    /// Tomcat's `overheadDataThreshold` (the default, for which each non-final frame under it
    /// counts towards closing the connection); a frame of 1 KiB costs 9 bytes of header, under 1%.
    static let minimumFrameSize = 1024
    /// Every flow-control window's size before the server says otherwise (RFC 9113 6.9.2).
    static let defaultWindow = 65_535

    /// A frame to write, of the first queued chunk (or the end) of `streamID`.
    struct Frame: Equatable {
        enum Kind: Equatable {
            /// `length` bytes from the front of the stream's first chunk; the chunk's last bytes
            /// when `endsChunk`, and the body's last frame, with END_STREAM, when `endStream`.
            case data(length: Int, endsChunk: Bool, endStream: Bool)
            /// An empty DATA frame with END_STREAM: the body ended after its bytes went out.
            case endStream
            /// The trailers' HEADERS frame (with END_STREAM), after the body's last DATA.
            case trailers
        }

        var streamID: HTTP2StreamID
        var kind: Kind
    }

    /// How a stream's body ends.
    enum End: Equatable {
        /// END_STREAM, on its last DATA frame or an empty one.
        case endStream
        /// A HEADERS frame of trailer fields, with END_STREAM.
        case trailers
    }

    /// A flow-control window of the server's, as Courier counts it.
    struct Window: Equatable {
        /// The bytes Courier may still send (negative after the server lowered its initial window).
        var size: Int
        /// The largest size the window had.
        var peak: Int

        init(size: Int) {
            self.size = size
            self.peak = max(size, 0)
        }

        mutating func increase(by increment: Int) {
            self.size += increment
            self.peak = max(self.peak, self.size)
        }

        /// A new initial window moved the window, and what the server grants, by `delta`.
        mutating func move(by delta: Int) {
            self.size += delta
            self.peak = max(self.peak + delta, self.size, 0)
        }
    }

    private struct Stream {
        var window: Window
        /// The bytes left of each queued chunk, oldest first.
        var chunks = CircularBuffer<Int>(initialCapacity: 4)
        /// How many of `chunks` (the first ones) were flushed, and may go.
        var flushedChunks = 0
        var end: End?
        /// Whether `end` was flushed (every chunk before it was too).
        var endFlushed = false
        /// Whether the stream is in ``HTTP2DataScheduler/turns``.
        var hasTurn = false

        var hasFlushedWork: Bool { self.flushedChunks > 0 || self.endFlushed }
    }

    let floor: Int
    /// The connection's window.
    private(set) var connectionWindow = Window(size: HTTP2DataScheduler.defaultWindow)
    /// The window a stream starts with (the server's `SETTINGS_INITIAL_WINDOW_SIZE`).
    private(set) var initialStreamWindow = HTTP2DataScheduler.defaultWindow
    /// The server's `SETTINGS_MAX_FRAME_SIZE`.
    private(set) var maximumFrameSize = 1 << 14
    private var streams: [HTTP2StreamID: Stream] = [:]
    /// The streams with flushed bytes or a flushed end, in turn.
    private var turns = CircularBuffer<HTTP2StreamID>(initialCapacity: 8)

    init(floor: Int = HTTP2DataScheduler.minimumFrameSize) {
        self.floor = max(floor, 1)
    }

    /// Whether any stream has a body here: a connection of bodiless requests (most) has none, and
    /// its streams' flushes and the server's WINDOW_UPDATEs need no scheduling.
    var hasBodies: Bool { !self.streams.isEmpty }

    /// A stream's window, nil for a stream not open here.
    func window(of streamID: HTTP2StreamID) -> Window? {
        self.streams[streamID]?.window
    }

    // MARK: Streams

    /// A stream's HEADERS went out: its window is the server's initial one.
    mutating func streamOpened(_ streamID: HTTP2StreamID) {
        guard self.streams[streamID] == nil else { return }
        self.streams[streamID] = Stream(window: Window(size: self.initialStreamWindow))
    }

    /// A stream is over: what it still had queued is dropped.
    mutating func streamClosed(_ streamID: HTTP2StreamID) {
        self.streams[streamID] = nil
    }

    /// A chunk of `length` bytes (at least one) of a stream's body, after those queued before.
    mutating func queued(_ streamID: HTTP2StreamID, length: Int) {
        precondition(length > 0, "an empty chunk is no frame")
        self.streams[streamID]?.chunks.append(length)
    }

    /// The stream's body ends after what was queued.
    mutating func ended(_ streamID: HTTP2StreamID, with end: End) {
        self.streams[streamID]?.end = end
    }

    /// The stream flushed: what it queued may go.
    mutating func flushed(_ streamID: HTTP2StreamID) {
        // In place: a copy of the stream out of the dictionary would share its chunks' storage.
        guard let index = self.streams.index(forKey: streamID) else { return }
        let takesTurn = Self.flush(&self.streams.values[index])
        if takesTurn { self.turns.append(streamID) }
    }

    /// Marks what `stream` queued as flushed; whether it now takes a turn it did not have.
    private static func flush(_ stream: inout Stream) -> Bool {
        stream.flushedChunks = stream.chunks.count
        if stream.end != nil { stream.endFlushed = true }
        guard stream.hasFlushedWork, !stream.hasTurn else { return false }
        stream.hasTurn = true
        return true
    }

    // MARK: The server's frames

    /// A WINDOW_UPDATE from the server, for the connection (``HTTP2StreamID/rootStream``) or a stream.
    mutating func windowIncreased(_ streamID: HTTP2StreamID, by increment: Int) {
        if streamID == .rootStream {
            self.connectionWindow.increase(by: increment)
        } else {
            self.streams[streamID]?.window.increase(by: increment)
        }
    }

    /// The server's SETTINGS: a new `SETTINGS_INITIAL_WINDOW_SIZE` moves every open stream's window
    /// by the difference (RFC 9113 6.9.2); a new `SETTINGS_MAX_FRAME_SIZE` bounds frames from now.
    mutating func settingsReceived(_ settings: HTTP2Settings) {
        if let size = settings.last(where: { $0.parameter == .initialWindowSize })?.value {
            let delta = size - self.initialStreamWindow
            self.initialStreamWindow = size
            for id in self.streams.keys {
                self.streams[id]?.window.move(by: delta)
            }
        }
        if let size = settings.last(where: { $0.parameter == .maxFrameSize })?.value, size >= 1 << 14 {
            self.maximumFrameSize = size
        }
    }

    /// A DATA frame of `length` bytes was written but never sent (swift-nio-http2 dropped it when
    /// its stream closed): the connection's window has those bytes still.
    mutating func dataNotSent(length: Int) {
        self.connectionWindow.size += length
    }

    // MARK: Frames

    /// The frames to write now, the streams taking turns, one frame each; the windows are counted
    /// as if they were sent.
    mutating func nextFrames() -> [Frame] {
        var frames: [Frame] = []
        var blockedInARow = 0
        while blockedInARow < self.turns.count, let id = self.turns.popFirst() {
            // In place: a copy of the stream out of the dictionary would share its chunks'
            // storage, and taking a chunk off it would copy that storage, once a frame.
            guard let index = self.streams.index(forKey: id) else { continue }
            let (kind, keepsTurn) = Self.nextFrame(
                of: &self.streams.values[index], connectionWindow: &self.connectionWindow, maximumFrameSize: self.maximumFrameSize,
                floor: self.floor)
            if let kind {
                frames.append(Frame(streamID: id, kind: kind))
                blockedInARow = 0
            } else {
                blockedInARow += 1
            }
            if keepsTurn { self.turns.append(id) }
        }
        return frames
    }

    /// The floor for a stream now: ``floor``, or half the largest window the stream or the
    /// connection had, if smaller.
    private static func effectiveFloor(_ floor: Int, _ stream: Stream, connectionWindow: Window) -> Int {
        max(1, min(floor, stream.window.peak / 2, connectionWindow.peak / 2))
    }

    /// The stream's next frame, if its windows allow one, and whether the stream keeps its turn
    /// (it has flushed work left; else its turn ends).
    private static func nextFrame(
        of stream: inout Stream, connectionWindow: inout Window, maximumFrameSize: Int, floor: Int
    ) -> (Frame.Kind?, keepsTurn: Bool) {
        let kind = Self.takeFrame(of: &stream, connectionWindow: &connectionWindow, maximumFrameSize: maximumFrameSize, floor: floor)
        if !stream.hasFlushedWork { stream.hasTurn = false }
        return (kind, stream.hasFlushedWork)
    }

    private static func takeFrame(
        of stream: inout Stream, connectionWindow: inout Window, maximumFrameSize: Int, floor baseFloor: Int
    ) -> Frame.Kind? {
        guard stream.flushedChunks > 0, let remaining = stream.chunks.first else {
            guard stream.endFlushed, let end = stream.end else { return nil }
            stream.end = nil
            stream.endFlushed = false
            return end == .endStream ? .endStream : .trailers
        }
        // The body's last bytes, sent with END_STREAM: any size.
        let endsBody = stream.chunks.count == 1 && stream.endFlushed && stream.end == .endStream
        let limit = min(stream.window.size, connectionWindow.size, maximumFrameSize)
        var length = remaining
        if remaining > limit {
            let floor = Self.effectiveFloor(baseFloor, stream, connectionWindow: connectionWindow)
            length = limit
            // What is left of the chunk goes as a frame of its own: not a few bytes either.
            if !endsBody, remaining - length < floor { length = remaining - floor }
            guard length >= floor else { return nil }
        }
        stream.window.size -= length
        connectionWindow.size -= length
        let endsChunk = length == remaining
        if endsChunk {
            stream.chunks.removeFirst()
            stream.flushedChunks -= 1
        } else {
            stream.chunks[stream.chunks.startIndex] = remaining - length
        }
        let endStream = endsChunk && endsBody
        if endStream {
            stream.end = nil
            stream.endFlushed = false
        }
        return .data(length: length, endsChunk: endsChunk, endStream: endStream)
    }
}
