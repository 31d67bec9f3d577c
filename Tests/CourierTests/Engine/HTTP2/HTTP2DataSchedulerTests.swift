@testable import Courier
import NIOHTTP2
import Testing

/// ``HTTP2DataScheduler`` without I/O: which DATA frames request bodies go out as, given the
/// server's windows, event by event.
@Suite("HTTP/2 data scheduler")
struct HTTP2DataSchedulerTests {
    typealias Scheduler = HTTP2DataScheduler
    typealias Frame = HTTP2DataScheduler.Frame

    static let floor = HTTP2DataScheduler.minimumFrameSize

    /// The sizes of `frames`' DATA (0 for an empty END_STREAM), with whether each is the body's last.
    static func sizes(_ frames: [Frame]) -> [(size: Int, last: Bool)] {
        frames.compactMap { frame in
            switch frame.kind {
            case .data(let length, _, let endStream): (length, endStream)
            case .endStream: (0, true)
            case .trailers: nil
            }
        }
    }

    /// A DATA frame without END_STREAM smaller than the floor, if `frames` has one.
    static func tinyNonFinal(_ frames: [Frame]) -> Int? {
        Self.sizes(frames).first { !$0.last && $0.size < Self.floor }?.size
    }

    /// A stream whose HEADERS went, with `chunks` queued and flushed (ended when `end` is set).
    static func scheduler(streams: [HTTP2StreamID], chunks: [Int], end: Scheduler.End? = nil) -> Scheduler {
        var scheduler = Scheduler()
        for id in streams {
            scheduler.streamOpened(id)
            for chunk in chunks { scheduler.queued(id, length: chunk) }
            if let end { scheduler.ended(id, with: end) }
            scheduler.flushed(id)
        }
        return scheduler
    }

    /// A 65,535-byte stream window filled with 16 KiB chunks, one at a time as the body pump
    /// writes them (each after the previous one went), the server returning exactly what each
    /// frame carried, one frame at a time, as Tomcat does: no frame without END_STREAM is below
    /// the floor. swift-nio-http2's own buffer sent 16384, 16384, 16384, 16383, then 1 byte.
    @Test func sixteenKiBChunksInA65535ByteWindowLeaveNoTinyFrame() {
        let id = HTTP2StreamID(1)
        var scheduler = Self.scheduler(streams: [id], chunks: [])
        var frames: [Frame] = []
        var returned: [Int] = []
        for chunk in 0..<64 {
            scheduler.queued(id, length: 16_384)
            if chunk == 63 { scheduler.ended(id, with: .endStream) }
            scheduler.flushed(id)
            var chunkDone = false
            while !chunkDone {
                let next = scheduler.nextFrames()
                frames += next
                for frame in next {
                    if case .data(let length, let endsChunk, _) = frame.kind {
                        returned.append(length)
                        if endsChunk { chunkDone = true }
                    }
                }
                // The server returns the oldest frame's bytes, to the stream and the connection.
                guard !chunkDone, !returned.isEmpty else { continue }
                let length = returned.removeFirst()
                scheduler.windowIncreased(id, by: length)
                scheduler.windowIncreased(.rootStream, by: length)
            }
        }
        #expect(Self.tinyNonFinal(frames) == nil, "\(Self.sizes(frames).map(\.size))")
        #expect(Self.sizes(frames).reduce(0) { $0 + $1.size } == 64 * 16_384)
        #expect(Self.sizes(frames).last?.last == true)
        // The window's edge: three whole chunks, then one cut to leave the floor.
        #expect(Self.sizes(frames).prefix(4).map(\.size) == [16_384, 16_384, 16_384, 16_384 - Self.floor])
    }

    /// The same window with a body in memory, all its 64 KiB slices queued at once.
    @Test func sixtyFourKiBSlicesQueuedAtOnceLeaveNoTinyFrame() {
        let id = HTTP2StreamID(1)
        var scheduler = Self.scheduler(streams: [id], chunks: Array(repeating: 65_536, count: 16), end: .endStream)
        var frames = scheduler.nextFrames()
        #expect(Self.sizes(frames).map(\.size) == [16_384, 16_384, 16_384, 16_384 - Self.floor])
        // One byte back at a time, as Tomcat gives it: the first chunk's last 1 KiB goes once
        // its window is back, then nothing until a whole floor is back again.
        func giveBack(_ bytes: Int) {
            scheduler.windowIncreased(id, by: bytes)
            scheduler.windowIncreased(.rootStream, by: bytes)
        }
        giveBack(1)
        #expect(scheduler.nextFrames() == [Frame(streamID: id, kind: .data(length: Self.floor, endsChunk: true, endStream: false))])
        for _ in 0..<(Self.floor - 1) {
            giveBack(1)
            #expect(scheduler.nextFrames().isEmpty)
        }
        giveBack(1)
        #expect(Self.sizes(scheduler.nextFrames()).map(\.size) == [Self.floor])
        frames = []
        var sent = 65_536 + Self.floor
        while sent < 16 * 65_536 {
            giveBack(5000)
            let next = scheduler.nextFrames()
            sent += Self.sizes(next).reduce(0) { $0 + $1.size }
            frames += next
        }
        #expect(Self.tinyNonFinal(frames) == nil, "\(Self.sizes(frames).map(\.size))")
        #expect(Self.sizes(frames).last?.last == true)
    }

    /// Several streams wait on the connection's window: a WINDOW_UPDATE of one byte for the
    /// connection (Tomcat's answer to a one-byte frame) lets no frame go; a floor's worth does.
    @Test func aOneByteConnectionUpdateWithStreamsWaitingSendsNothing() {
        let ids = [1, 3, 5, 7].map { HTTP2StreamID($0) }
        var scheduler = Self.scheduler(streams: ids, chunks: [65_536, 65_536])
        // The connection's 65,535 bytes go, the streams taking turns.
        let first = scheduler.nextFrames()
        #expect(Self.tinyNonFinal(first) == nil)
        #expect(Set(first.map(\.streamID)) == Set(ids))
        #expect(scheduler.connectionWindow.size < Self.floor)
        // Each stream's window has room; the connection's has not.
        for id in ids {
            scheduler.windowIncreased(id, by: 65_535)
        }
        for _ in 0..<3 {
            scheduler.windowIncreased(.rootStream, by: 1)
            #expect(scheduler.nextFrames().isEmpty)
        }
        scheduler.windowIncreased(.rootStream, by: 16_384)
        let next = scheduler.nextFrames()
        #expect(!next.isEmpty)
        #expect(Self.tinyNonFinal(next) == nil, "\(Self.sizes(next))")
    }

    /// The body's last frame, with END_STREAM, may be any size: one byte left goes.
    @Test func theLastFrameMayBeAnySize() {
        let id = HTTP2StreamID(1)
        var scheduler = Self.scheduler(streams: [id], chunks: [65_536], end: .endStream)
        let first = scheduler.nextFrames()
        #expect(Self.sizes(first).map(\.size) == [16_384, 16_384, 16_384, 16_383])
        scheduler.windowIncreased(id, by: 1)
        scheduler.windowIncreased(.rootStream, by: 1)
        #expect(scheduler.nextFrames() == [Frame(streamID: id, kind: .data(length: 1, endsChunk: true, endStream: true))])
    }

    /// A small chunk goes whole when nothing else of the body waits (the pump's chunk is all
    /// there is); it waits while the window is smaller than it.
    @Test func aSmallChunkGoesWhole() {
        let id = HTTP2StreamID(1)
        var scheduler = Self.scheduler(streams: [id], chunks: [100])
        #expect(scheduler.nextFrames() == [Frame(streamID: id, kind: .data(length: 100, endsChunk: true, endStream: false))])
    }

    /// A body with no bytes ends with an empty DATA frame with END_STREAM, whatever the windows;
    /// so does one whose end comes after its bytes went.
    @Test func anEmptyEndStillGoes() {
        let id = HTTP2StreamID(1)
        var scheduler = Self.scheduler(streams: [id], chunks: [], end: .endStream)
        #expect(scheduler.nextFrames() == [Frame(streamID: id, kind: .endStream)])

        var drained = Self.scheduler(streams: [id], chunks: [65_535])
        #expect(Self.sizes(drained.nextFrames()).map(\.size) == [16_384, 16_384, 16_384, 16_383])
        #expect(drained.connectionWindow.size == 0)
        drained.ended(id, with: .endStream)
        drained.flushed(id)
        #expect(drained.nextFrames() == [Frame(streamID: id, kind: .endStream)])

        var trailers = Self.scheduler(streams: [id], chunks: [10], end: .trailers)
        #expect(
            trailers.nextFrames() == [
                Frame(streamID: id, kind: .data(length: 10, endsChunk: true, endStream: false)), Frame(streamID: id, kind: .trailers),
            ])
    }

    /// Nothing goes before the stream flushes.
    @Test func nothingGoesBeforeAFlush() {
        let id = HTTP2StreamID(1)
        var scheduler = Scheduler()
        scheduler.streamOpened(id)
        scheduler.queued(id, length: 500)
        scheduler.ended(id, with: .endStream)
        #expect(scheduler.nextFrames().isEmpty)
        scheduler.flushed(id)
        #expect(scheduler.nextFrames() == [Frame(streamID: id, kind: .data(length: 500, endsChunk: true, endStream: true))])
    }

    /// A server whose windows are smaller than the floor (a stream window of 512 bytes, granted
    /// 512 at a time) is sent what it grants: the floor is half the largest window it had.
    @Test func aServerWithSmallWindowsIsSentWhatItGrants() {
        let id = HTTP2StreamID(1)
        var scheduler = Scheduler()
        scheduler.settingsReceived([HTTP2Setting(parameter: .initialWindowSize, value: 512)])
        scheduler.streamOpened(id)
        scheduler.queued(id, length: 4096)
        scheduler.flushed(id)
        #expect(Self.sizes(scheduler.nextFrames()).map(\.size) == [512])
        scheduler.windowIncreased(id, by: 512)
        #expect(Self.sizes(scheduler.nextFrames()).map(\.size) == [512])
        // And 0 to start with, then a grant.
        var pulled = Scheduler()
        pulled.settingsReceived([HTTP2Setting(parameter: .initialWindowSize, value: 0)])
        pulled.streamOpened(id)
        pulled.queued(id, length: 4096)
        pulled.flushed(id)
        #expect(pulled.nextFrames().isEmpty)
        pulled.windowIncreased(id, by: 300)
        #expect(Self.sizes(pulled.nextFrames()).map(\.size) == [300])
    }

    /// The server's SETTINGS move open streams' windows and the frame size; a frame dropped
    /// unsent gives its bytes back to the connection.
    @Test func settingsAndDroppedFramesMoveTheWindows() {
        let id = HTTP2StreamID(1)
        var scheduler = Self.scheduler(streams: [id], chunks: [])
        scheduler.settingsReceived([
            HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20), HTTP2Setting(parameter: .maxFrameSize, value: 1 << 15),
        ])
        #expect(scheduler.window(of: id)?.size == 1 << 20)
        scheduler.windowIncreased(.rootStream, by: 1 << 20)
        scheduler.queued(id, length: 100_000)
        scheduler.flushed(id)
        #expect(Self.sizes(scheduler.nextFrames()).map(\.size) == [32_768, 32_768, 32_768, 1_696])
        let left = scheduler.connectionWindow.size
        scheduler.dataNotSent(length: 1_696)
        #expect(scheduler.connectionWindow.size == left + 1_696)
    }
}
