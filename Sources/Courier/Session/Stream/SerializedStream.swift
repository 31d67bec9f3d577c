import Foundation
import NIOCore

/// A streamed body as values, made by a ``DataStreamSerializer`` as the chunks arrive
/// (``DataStreamResponse/serialized(by:)``, ``DataStreamResponse/strings``,
/// ``DataStreamResponse/decoded(_:decoder:)``).
///
/// Iterate it once, instead of the response's ``DataStreamResponse/body``: it reads that body.
/// A failure of the body (a reset, a timeout) is thrown as the body throws it; a failure of the
/// serializer is thrown with the request and response filled in, and cancels the request
/// (Alamofire's `automaticallyCancelOnStreamError`), so that the connection is not left holding
/// what nobody reads; on a reader of ``DataStreamResponse/broadcast(to:)`` it stops that reader
/// alone, and the request is cancelled once every reader has stopped. Stopping early cancels the
/// request, as stopping the body's iteration does.
public struct SerializedStream<Serializer: DataStreamSerializer>: AsyncSequence, Sendable {
    public typealias Element = Serializer.Output
    public typealias Failure = CourierError

    let response: DataStreamResponse
    let serializer: Serializer

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(response: self.response, body: self.response.body.makeAsyncIterator(), serializer: self.serializer)
    }

    /// Reads the values one at a time.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = Serializer.Output
        public typealias Failure = CourierError

        let response: DataStreamResponse
        var body: ResponseBodyStream.AsyncIterator
        var serializer: Serializer
        /// Values made and not handed out yet, from `next`.
        private var made: [Element] = []
        private var next = 0
        private var isDone = false

        init(response: DataStreamResponse, body: ResponseBodyStream.AsyncIterator, serializer: Serializer) {
            self.response = response
            self.body = body
            self.serializer = serializer
        }

        public mutating func next() async throws(CourierError) -> Element? {
            while true {
                if self.next < self.made.count {
                    defer { self.next += 1 }
                    return self.made[self.next]
                }
                if self.isDone { return nil }
                // Emptied first: a serializer that throws leaves nothing to hand out again.
                self.made.removeAll(keepingCapacity: true)
                self.next = 0
                // A failure after the values just handed out ends the stream now, not after the
                // next chunk (which may be long in coming).
                if let failure = self.serializer.takeFailure() { throw self.ended(by: failure) }
                let chunk: ByteBuffer?
                do {
                    chunk = try await self.body.next()
                } catch {
                    // The body failed: the values before it were handed out, nothing follows (the
                    // serializer's `finish` would read what was cut off as a whole last value).
                    self.isDone = true
                    throw error
                }
                do {
                    if let chunk {
                        self.made = try self.serializer.serialize(chunk)
                    } else {
                        self.isDone = true
                        self.made = try self.serializer.finish()
                    }
                } catch {
                    throw self.ended(by: error)
                }
            }
        }

        /// The serializer failed: the stream ends, and the request is cancelled (a reader of a
        /// broadcast stops, and the request is cancelled once every reader has).
        private mutating func ended(by error: CourierError) -> CourierError {
            self.isDone = true
            self.body.stop(cancelling: self.response.task)
            return error.adding(request: self.response.request, response: self.response.response)
        }
    }
}

extension DataStreamResponse {
    /// The body as the values `serializer` makes of it (Alamofire's `responseStream(using:)`).
    ///
    /// ```swift
    /// let stream = try await manager.stream(Request(url: url))
    /// for try await data in stream.serialized(by: PassthroughStreamSerializer()) { consume(data) }
    /// ```
    public func serialized<Serializer: DataStreamSerializer>(by serializer: Serializer) -> SerializedStream<Serializer> {
        SerializedStream(response: self, serializer: serializer)
    }

    /// The body as text, a string a chunk: UTF-8, or UTF-16 or UTF-32 when it starts with their
    /// byte-order mark (``StringStreamSerializer``; Alamofire's `responseStreamString`).
    public var strings: SerializedStream<StringStreamSerializer> {
        self.serialized(by: StringStreamSerializer())
    }

    /// The body as values of `type`, one a line (``DecodableStreamSerializer``: JSON Lines with
    /// the default decoder; Alamofire's `responseStreamDecodable(of:)`).
    ///
    /// ```swift
    /// struct Token: Decodable, Sendable { let text: String }
    /// let stream = try await manager.stream(Request(url: url))
    /// for try await token in stream.decoded(Token.self) { print(token.text, terminator: "") }
    /// ```
    public func decoded<Value: Decodable & Sendable>(
        _ type: Value.Type, decoder: any DataDecoder = JSONDecoder()
    ) -> SerializedStream<DecodableStreamSerializer<Value>> {
        self.serialized(by: DecodableStreamSerializer(type, decoder: decoder))
    }
}
