import NIOCore

/// A response body as it arrives: chunks, in order, with back-pressure (the connection stops
/// reading while the chunks already received wait unread).
///
/// Iterate it once: a second iteration of a body still arriving (of this value or a copy) ends
/// at once, with no chunk.
/// Stopping early (breaking out of the loop, or cancelling the iterating task)
/// cancels the request. A failure mid-body — a reset, a timeout — is thrown by the iteration.
/// A body that was read whole before the call returned (the `gatheringBodiesUpTo:` of
/// `SessionManager.stream(_:downloadProgress:gatheringBodiesUpTo:)`) comes from memory, in one
/// chunk, to every iteration (nothing is left to read from the connection, so a second one costs
/// nothing and cancels nothing).
public struct ResponseBodyStream: AsyncSequence, Sendable {
    public typealias Element = ByteBuffer
    public typealias Failure = CourierError

    private enum Base: Sendable {
        /// The sequence, and the sink that says whether its one iterator was made.
        case streamed(ResponseStreamSink.Producer, ResponseStreamSink)
        /// Read whole: its one chunk (none when the body was empty).
        case complete(ByteBuffer?)
        /// One reader of a body read by several (``DataStreamResponse/broadcast(to:)``).
        case branch(StreamBroadcast.Branch)
    }

    private let base: Base

    init(base: ResponseStreamSink.Producer, claimedThrough sink: ResponseStreamSink) {
        self.base = .streamed(base, sink)
    }

    init(complete body: ByteBuffer?) {
        self.base = .complete(body.flatMap { $0.readableBytes > 0 ? $0 : nil })
    }

    init(branch: StreamBroadcast.Branch) {
        self.base = .branch(branch)
    }

    /// The broadcast this body is a reader of, if any (tests check it is let go of).
    var broadcast: StreamBroadcast? {
        if case .branch(let branch) = self.base { branch.broadcast } else { nil }
    }

    /// Reads the chunks one at a time.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = ByteBuffer
        public typealias Failure = CourierError

        fileprivate enum Base {
            case streamed(ResponseStreamSink.Producer.AsyncIterator)
            case complete(ByteBuffer?)
            case branch(StreamBroadcast.Cursor)
        }

        fileprivate var base: Base

        /// Reads no more, after a failure of what reads it (a serializer's): the reader of a
        /// broadcast stops, as when its loop breaks (the request is cancelled once every reader
        /// has stopped); the body's one reader cancels `task`, the request's.
        func stop(cancelling task: DataTask) {
            if case .branch(let cursor) = self.base {
                cursor.stop()
            } else {
                task.cancel()
            }
        }

        public mutating func next() async throws(CourierError) -> ByteBuffer? {
            switch self.base {
            case .complete(let chunk):
                self.base = .complete(nil)
                return chunk
            case .branch(let cursor):
                return try await cursor.next()
            case .streamed(let iterator):
                do {
                    return try await iterator.next()
                } catch let error as CourierError {
                    throw error
                } catch {
                    throw CourierError(.cancelled, "reading the response body stopped", underlyingError: error)
                }
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        switch self.base {
        case .streamed(let sequence, let sink):
            sink.claimIterator() ? AsyncIterator(base: .streamed(sequence.makeAsyncIterator())) : AsyncIterator(base: .complete(nil))
        case .complete(let chunk): AsyncIterator(base: .complete(chunk))
        case .branch(let branch): AsyncIterator(base: .branch(branch.makeCursor()))
        }
    }
}
