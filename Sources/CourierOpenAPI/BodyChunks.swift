import Courier
import NIOCore
import OpenAPIRuntime

/// A request `HTTPBody` as the chunks Courier sends: each byte slice copied into a `ByteBuffer` as
/// the connection asks for it, so only the chunks in flight are held.
struct HTTPBodyChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    typealias Failure = any Error

    let body: HTTPBody

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: HTTPBody.Iterator

        mutating func next() async throws -> ByteBuffer? {
            guard let slice = try await self.base.next() else { return nil }
            return ByteBuffer(bytes: slice)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: self.body.makeAsyncIterator())
    }
}

/// A streamed response body as the runtime's byte chunks. Iterated once; a failure mid-body is the
/// `CourierError` the stream threw.
struct ResponseChunks: AsyncSequence, Sendable {
    typealias Element = HTTPBody.ByteChunk
    typealias Failure = CourierError

    let base: ResponseBodyStream

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: ResponseBodyStream.AsyncIterator

        mutating func next() async throws(CourierError) -> HTTPBody.ByteChunk? {
            guard let buffer = try await self.base.next() else {
                // A cancelled reader sees the stream end early (and the task is cancelled): say so,
                // rather than hand the runtime a body that looks complete and is not.
                if Task.isCancelled { throw CourierError(.cancelled, "reading the response body was cancelled") }
                return nil
            }
            return HTTPBody.ByteChunk(buffer.readableBytesView)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: self.base.makeAsyncIterator())
    }
}
