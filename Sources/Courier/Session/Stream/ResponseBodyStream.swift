import NIOCore

/// A response body as it arrives: chunks, in order, with back-pressure (the connection stops
/// reading while the chunks already received wait unread).
///
/// Iterate it once. Stopping early (breaking out of the loop, or cancelling the iterating task)
/// cancels the request. A failure mid-body — a reset, a timeout — is thrown by the iteration.
public struct ResponseBodyStream: AsyncSequence, Sendable {
    public typealias Element = ByteBuffer
    public typealias Failure = CourierError

    let base: ResponseStreamSink.Producer

    /// Reads the chunks one at a time.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = ByteBuffer
        public typealias Failure = CourierError

        var base: ResponseStreamSink.Producer.AsyncIterator

        public mutating func next() async throws(CourierError) -> ByteBuffer? {
            do {
                return try await self.base.next()
            } catch let error as CourierError {
                throw error
            } catch {
                throw CourierError(.cancelled, "reading the response body stopped", underlyingError: error)
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: self.base.makeAsyncIterator())
    }
}
