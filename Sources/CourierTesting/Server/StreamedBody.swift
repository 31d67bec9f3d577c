import NIOCore

/// How a paced or streamed response ends.
enum ReplyEnding: Sendable, Equatable {
    /// The response ends; the connection stays open when the request allows it.
    case complete
    /// The response ends, then an HTTP/1 connection closes (the head says `Connection: close`).
    /// An HTTP/2 stream just ends.
    case completeThenClose
    /// The connection (the stream, on HTTP/2) closes after the last byte without ending the
    /// response: a chunked body lacks its last chunk, a `Content-Length` body may fall short.
    case drop
}

/// A response body made while it is written (`Reply.streamed`): never held whole, written as
/// fast as the peer reads it, or slower when paced.
///
/// It is a state machine: the handler asks ``next(isWritable:allocator:)`` what to do, does
/// it, and comes back when the channel becomes writable or a tick elapses.
struct StreamedBody: Sendable {
    /// Where the bytes come from.
    enum Source: Sendable, Equatable {
        /// ``GeneratedBytes/chunk`` over and over (`/courier/big/{n}`).
        case pattern
        /// `/courier/file/{n}`'s content with this seed, from this offset on.
        case file(seed: UInt64, offset: Int)
    }

    /// How fast the bytes may go.
    enum Pace: Sendable, Equatable {
        /// As fast as the peer reads.
        case unlimited
        /// `left` more bytes in the current tick, `perTick` in each of the next.
        case ticking(left: Int, perTick: Int)
        /// The tick's bytes are spent; a timer will start the next one.
        case waitingForTick(perTick: Int)
    }

    /// What the handler does next.
    enum Action {
        /// Write this chunk, then ask again.
        case write(ByteBuffer)
        /// Flush and wait until the channel is writable again.
        case waitForWritable
        /// Flush and call ``tickElapsed()`` after ``tick``, then ask again.
        case scheduleTick
        /// A tick is already scheduled: do nothing.
        case waitForTick
        /// Every byte is written: end as told.
        case finish(ReplyEnding)
    }

    /// The length of one pacing tick.
    static let tick = TimeAmount.milliseconds(50)
    /// The largest chunk written at once.
    static let chunkSize = 65_536

    private(set) var source: Source
    /// Bytes still to write.
    private(set) var remaining: Int
    let ending: ReplyEnding
    private(set) var pace: Pace

    /// A body of `length` bytes from `source`, ending as `ending` says, at most
    /// `bytesPerSecond` fast when given.
    init(_ source: Source, length: Int, ending: ReplyEnding = .complete, bytesPerSecond: Int? = nil) {
        self.source = source
        self.remaining = length
        self.ending = ending
        if let bytesPerSecond {
            let perTick = max(1, bytesPerSecond / Int(TimeAmount.seconds(1).nanoseconds / Self.tick.nanoseconds))
            self.pace = .ticking(left: perTick, perTick: perTick)
        } else {
            self.pace = .unlimited
        }
    }

    /// The next step; a `.write` takes its bytes off ``remaining``.
    mutating func next(isWritable: Bool, allocator: ByteBufferAllocator) -> Action {
        guard self.remaining > 0 else { return .finish(self.ending) }
        switch self.pace {
        case .waitingForTick:
            return .waitForTick
        case .ticking(left: 0, let perTick):
            self.pace = .waitingForTick(perTick: perTick)
            return .scheduleTick
        case .unlimited, .ticking:
            break
        }
        guard isWritable else { return .waitForWritable }
        var size = min(self.remaining, Self.chunkSize)
        if case .ticking(let left, let perTick) = self.pace {
            size = min(size, left)
            self.pace = .ticking(left: left - size, perTick: perTick)
        }
        self.remaining -= size
        return .write(self.makeChunk(size, allocator: allocator))
    }

    /// The scheduled tick elapsed: a new tick's bytes may go.
    mutating func tickElapsed() {
        guard case .waitingForTick(let perTick) = self.pace else { return }
        self.pace = .ticking(left: perTick, perTick: perTick)
    }

    private mutating func makeChunk(_ size: Int, allocator: ByteBufferAllocator) -> ByteBuffer {
        switch self.source {
        case .pattern:
            return GeneratedBytes.chunk.getSlice(at: 0, length: size)!
        case .file(let seed, let offset):
            var buffer = allocator.buffer(capacity: size)
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { pointer in
                TestServer.GeneratedFile.fill(UnsafeMutableRawBufferPointer(rebasing: pointer.prefix(size)), from: offset, seed: seed)
                return size
            }
            self.source = .file(seed: seed, offset: offset + size)
            return buffer
        }
    }
}
