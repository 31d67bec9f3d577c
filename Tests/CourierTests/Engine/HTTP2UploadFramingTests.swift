@testable import Courier
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Request bodies over HTTP/2, as DATA frames a server receives (``DataFrameRecordingServer``,
/// which returns the window as Tomcat does): no frame without END_STREAM below the floor
/// (``HTTP2DataScheduler/minimumFrameSize``), and a server that returns nothing stops the upload.
@Suite("HTTP/2: request bodies as DATA frames")
struct HTTP2UploadFramingTests {
    typealias Recorder = HTTP2GoAwayTests.ExchangeRecorder

    static let floor = HTTP2DataScheduler.minimumFrameSize

    /// 16 KiB chunks of `total` bytes, counting how many the pump took.
    struct Chunks: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let total: Int
        let taken: NIOLockedValueBox<Int>

        struct AsyncIterator: AsyncIteratorProtocol {
            var left: Int
            let taken: NIOLockedValueBox<Int>

            mutating func next() async throws -> ByteBuffer? {
                guard self.left > 0 else { return nil }
                let size = Swift.min(16_384, self.left)
                self.left -= size
                self.taken.withLockedValue { $0 += 1 }
                return ByteBuffer(repeating: UInt8(ascii: "c"), count: size)
            }
        }

        func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(left: self.total, taken: self.taken)
        }
    }

    /// The DATA frames without END_STREAM smaller than the floor, by stream; for a streamed body
    /// its last chunk is exempt when an empty END_STREAM frame follows it (the pump learns of the
    /// end only after the last chunk went).
    static func tinyNonFinalFrames(_ frames: [DataFrameRecordingServer.DataFrame], streamed: Bool) -> [DataFrameRecordingServer.DataFrame] {
        var tiny: [DataFrameRecordingServer.DataFrame] = []
        for (index, frame) in frames.enumerated() where !frame.endStream && frame.size < Self.floor {
            if streamed,
                frames[(index + 1)...].first(where: { $0.streamID == frame.streamID }).map({ $0.endStream && $0.size == 0 }) == true
            {
                continue
            }
            tiny.append(frame)
        }
        return tiny
    }

    /// Eight uploads of 1 MB at once on one connection, bodies in memory and streamed: every
    /// byte arrives, and no DATA frame without END_STREAM is under 1 KiB. Before, the server saw
    /// frames of 1 to 3 bytes from every stream (a 64 KiB slice cut at a 65,535-byte window's
    /// edge, then the bytes the server returned one frame at a time).
    @Test(arguments: [false, true])
    func concurrentUploadsSendNoTinyFrames(streamed: Bool) async throws {
        let server = try await DataFrameRecordingServer.start()
        let (engine, group) = try HTTP2GoAwayTests.engine()
        let url = URL(string: "https://localhost:\(server.port)/upload")!
        let total = 1_000_000
        let recorders = (0..<8).map { _ in Recorder() }
        for recorder in recorders {
            let body: RequestBody =
                streamed
                ? .stream(Chunks(total: total, taken: NIOLockedValueBox(0)), length: .known(Int64(total)))
                : .data(Data(repeating: UInt8(ascii: "d"), count: total))
            _ = engine.execute(Request(method: .post, url: url, body: body), delegate: recorder)
        }
        for recorder in recorders {
            #expect(await recorder.completion())
            #expect(recorder.snapshot.error == nil, "\(String(describing: recorder.snapshot.error))")
            #expect(recorder.snapshot.body == String(total))
        }
        let frames = server.frames
        #expect(server.bytesReceived == 8 * total)
        let tiny = Self.tinyNonFinalFrames(frames, streamed: streamed)
        #expect(tiny.isEmpty, "\(tiny.count) of \(frames.count) frames under \(Self.floor) bytes without END_STREAM: \(tiny.prefix(20))")
        try await engine.shutdown()
        try await server.shutdown()
        try await group.shutdownGracefully()
    }

    /// A server that returns no window: the streamed body's pump stops once the stream's window
    /// is used (the chunks that fit, and the one that waits), where the server stopped receiving.
    @Test func aServerThatReturnsNoWindowStopsThePump() async throws {
        let server = try await DataFrameRecordingServer.start(returnsWindow: false)
        let (engine, group) = try HTTP2GoAwayTests.engine()
        let url = URL(string: "https://localhost:\(server.port)/upload")!
        let taken = NIOLockedValueBox(0)
        let recorder = Recorder()
        _ = engine.execute(
            Request(method: .post, url: url, body: .stream(Chunks(total: 4_000_000, taken: taken), length: .known(4_000_000))),
            delegate: recorder)
        // Three chunks whole, and of the fourth all but the floor.
        #expect(await eventually { server.bytesReceived == 65_535 - (Self.floor - 1) })
        #expect(taken.withLockedValue { $0 } <= 5, "the pump took \(taken.withLockedValue { $0 }) chunks")
        #expect(!recorder.snapshot.completed)
        try await engine.shutdown()
        #expect(await recorder.completion())
        try await server.shutdown()
        try await group.shutdownGracefully()
    }
}
