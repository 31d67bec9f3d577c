import NIOCore
import NIOEmbedded
import Testing

@testable import Courier

/// ``HTTP2FlushCoalescer`` on an `EmbeddedChannel`: what reaches the socket side, flush by flush.
@Suite("HTTP/2 flush coalescer")
struct HTTP2FlushCoalescerTests {
    /// Counts the flushes that pass it on their way to the socket.
    final class FlushCounter: ChannelOutboundHandler {
        typealias OutboundIn = IOData
        var flushes = 0
        func flush(context: ChannelHandlerContext) {
            self.flushes += 1
            context.flush()
        }
    }

    private static func channel() throws -> (EmbeddedChannel, FlushCounter) {
        let counter = FlushCounter()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(HTTP2FlushCoalescer())
        return (channel, counter)
    }

    private static func send(_ text: String, on channel: EmbeddedChannel) {
        channel.writeAndFlush(IOData.byteBuffer(ByteBuffer(string: text)), promise: nil)
    }

    @Test func flushesAskedForInOneTaskLeaveAsOne() throws {
        let (channel, counter) = try Self.channel()
        defer { _ = try? channel.finish() }
        Self.send("HEADERS 1", on: channel)
        Self.send("HEADERS 3", on: channel)
        Self.send("HEADERS 5", on: channel)
        // Held until the loop runs the coalescer's task.
        #expect(counter.flushes == 0)
        #expect(try channel.readOutbound(as: IOData.self) == nil)
        channel.embeddedEventLoop.run()
        #expect(counter.flushes == 1)
        var written: [String] = []
        while let data = try channel.readOutbound(as: IOData.self) {
            if case .byteBuffer(let buffer) = data { written.append(String(buffer: buffer)) }
        }
        #expect(written == ["HEADERS 1", "HEADERS 3", "HEADERS 5"])
    }

    @Test func aLaterTaskFlushesAgain() throws {
        let (channel, counter) = try Self.channel()
        defer { _ = try? channel.finish() }
        Self.send("first", on: channel)
        channel.embeddedEventLoop.run()
        Self.send("second", on: channel)
        channel.embeddedEventLoop.run()
        #expect(counter.flushes == 2)
    }

    @Test func aCloseFlushesWhatWasWrittenFirst() throws {
        let (channel, counter) = try Self.channel()
        Self.send("GOAWAY", on: channel)
        #expect(counter.flushes == 0)
        channel.close(promise: nil)
        #expect(counter.flushes == 1)
        let data = try channel.readOutbound(as: IOData.self)
        guard case .byteBuffer(let buffer)? = data else {
            Issue.record("nothing reached the socket before the close")
            return
        }
        #expect(String(buffer: buffer) == "GOAWAY")
        // The task queued for the flush finds nothing left to do.
        channel.embeddedEventLoop.run()
        #expect(counter.flushes == 1)
    }
}
