import Foundation
import HTTPTypes
import NIOCore

/// The events of a `text/event-stream`, reconnecting as an `EventSource` does
/// (``SessionManager/eventStream(_:options:)``).
///
/// Each connection is a ``SessionManager/stream(_:downloadProgress:gatheringBodiesUpTo:)``: events
/// are parsed as their bytes are read, so an unread stream holds the connection back. When the
/// connection ends or fails, the iterator waits the stream's `retry:` delay (at least
/// ``Options/minimumRetryDelay``) or else ``Options/retryDelay``, at most
/// ``Options/maximumRetryDelay``, on the session's ``SessionManager/retryClock``; then it
/// reconnects with `Last-Event-ID` set to the last event ID it saw (none once the server cleared
/// it with an empty `id`; a `Last-Event-ID` of the request's own is sent until the server names
/// an event). The session's cache is not consulted, and an event stream is not stored. A 204 ends
/// the sequence; any other status than 200, or another content type, fails it with
/// ``CourierError/Code/invalidResponse``; so do the failures no reconnection can mend, at once:
/// an invalidated session (``CourierError/Code/sessionInvalidated``, without waiting the retry
/// delay: invalidating the session ends a wait under way), cancellation, and a request that
/// cannot be sent. An event that holds more than
/// ``Options/maximumEventSize`` bytes before its blank line fails it too, with
/// ``CourierError/Code/responseSerializationFailed``, after the events before it (a server that
/// never ends an event would otherwise fill memory; reconnecting would ask for the same event
/// again). Stopping the iteration cancels the connection.
public struct ServerSentEventStream: AsyncSequence, Sendable {
    public typealias Element = ServerSentEvent
    public typealias Failure = CourierError

    /// How the stream reconnects.
    public struct Options: Sendable, Hashable {
        /// The delay before reconnecting until the server sends `retry:`. 3 seconds by default.
        public var retryDelay: Duration
        /// How many connections in a row may end or fail before the first event of each arrives;
        /// then the last failure is thrown (or the sequence ends, when the connections ended
        /// cleanly). nil (the default) reconnects forever.
        public var maximumReconnectionsWithoutEvent: Int?
        /// The most bytes one event may hold before the blank line that ends it (its `data`
        /// lines, its `event` type and the line under way): 16 MiB by default, as
        /// ``DecodableStreamSerializer/maximumLineLength``.
        public var maximumEventSize: Int

        /// The longest wait before a reconnection: a server's `retry:` (or a `retryDelay`) above
        /// it waits this long instead. 60 s by default, as ``RetryPolicy/maximumRetryAfter`` (a
        /// `retry:` of a day, honoured, left the iteration asleep for a day, the session
        /// invalidated or not).
        public var maximumRetryDelay: Duration

        /// The shortest wait a server's `retry:` can ask for: one below it waits this long
        /// instead (still at most ``maximumRetryDelay``). 500 ms by default, as Firefox's floor (a
        /// `retry: 0` had the stream reconnect as fast as the server ended its answers). The
        /// caller's own ``retryDelay`` is not raised to it.
        public var minimumRetryDelay: Duration

        /// ``maximumEventSize``'s default: 16 MiB.
        public static let defaultMaximumEventSize = 16 * 1024 * 1024

        /// Options; see each property.
        public init(
            retryDelay: Duration = .seconds(3), maximumReconnectionsWithoutEvent: Int? = nil,
            maximumEventSize: Int = Options.defaultMaximumEventSize, maximumRetryDelay: Duration = .seconds(60),
            minimumRetryDelay: Duration = .milliseconds(500)
        ) {
            self.retryDelay = retryDelay
            self.maximumReconnectionsWithoutEvent = maximumReconnectionsWithoutEvent
            self.maximumEventSize = maximumEventSize
            self.maximumRetryDelay = maximumRetryDelay
            self.minimumRetryDelay = minimumRetryDelay
        }
    }

    let manager: SessionManager
    let request: Request
    let options: Options

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(manager: self.manager, request: self.request, options: self.options)
    }

    /// Reads the events one at a time. Once it has thrown, it returns nil (and connects no more).
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Element = ServerSentEvent
        public typealias Failure = CourierError

        let manager: SessionManager
        let request: Request
        let options: Options
        private var parser: ServerSentEventParser
        /// Events parsed from the last chunk; those before ``handedOut`` were returned.
        private var pending: [ServerSentEvent] = []
        private var handedOut = 0
        /// Whether the connection under way brought an event (its end then counts no failure).
        private var connectionBroughtAnEvent = false
        /// Thrown once `pending` is delivered: an event ran over ``Options/maximumEventSize``.
        private var failure: CourierError?
        private var body: ResponseBodyStream.AsyncIterator?
        private var connections = 0
        private var failuresWithoutEvent = 0
        private var isDone = false

        init(manager: SessionManager, request: Request, options: Options) {
            self.manager = manager
            self.request = request
            self.options = options
            self.parser = ServerSentEventParser(maximumEventSize: options.maximumEventSize)
        }

        public mutating func next() async throws(CourierError) -> ServerSentEvent? {
            do {
                return try await self.nextEvent()
            } catch {
                // Thrown once: after it the sequence is over (and never asks the server again).
                self.isDone = true
                self.body = nil
                throw error
            }
        }

        private mutating func nextEvent() async throws(CourierError) -> ServerSentEvent? {
            while !self.isDone {
                if self.handedOut < self.pending.count {
                    self.failuresWithoutEvent = 0
                    self.connectionBroughtAnEvent = true
                    defer { self.handedOut += 1 }
                    return self.pending[self.handedOut]
                }
                // Thrown once: `next()` ends the sequence after it.
                if let failure = self.failure.take() { throw failure }
                if self.body == nil {
                    try await self.connect()
                    continue
                }
                do {
                    if let chunk = try await self.body!.next() {
                        self.pending = self.parser.feed(chunk)
                        self.handedOut = 0
                        if let held = self.parser.overflow {
                            // Dropping the body's iterator cancels the connection.
                            self.body = nil
                            self.failure = CourierError(
                                .responseSerializationFailed,
                                "\(self.request.summary): an event of the stream holds over \(self.options.maximumEventSize) bytes (\(held) so far) without the blank line that ends it",
                                request: self.request)
                        }
                    } else {
                        try self.connectionEnded(with: nil)
                    }
                } catch {
                    if Self.endsTheStream(error) || Task.isCancelled { throw error }
                    try self.connectionEnded(with: error)
                }
            }
            return nil
        }

        /// Whether no reconnection can mend `error`: cancelled, an invalidated session, a request
        /// that cannot be sent as it is. (Reconnecting on them ran for ever: every attempt failed
        /// at once, and no event ever reset the count.)
        static func endsTheStream(_ error: CourierError) -> Bool {
            switch error.code {
            case .cancelled, .sessionInvalidated, .invalidURL, .missingBaseURL, .unsupportedScheme, .invalidRequest, .unsupportedOption:
                true
            default:
                false
            }
        }

        /// Opens the next connection, after the retry delay when it is a reconnection.
        private mutating func connect() async throws(CourierError) {
            if self.connections > 0 {
                // Invalidated since the last connection, or while waiting (the wait ends then, as a
                // retrying task's does): no point waiting to be refused.
                let invalidated = CourierError(.sessionInvalidated, "\(self.request.summary): the session was invalidated", request: self.request)
                if self.manager.isInvalidated { throw invalidated }
                let cancelled = CourierError(.cancelled, "\(self.request.summary): cancelled while waiting to reconnect", request: self.request)
                let waited: Bool
                do {
                    waited = try await self.manager.sleepUnlessInvalidated(for: self.reconnectionDelay)
                } catch {
                    throw cancelled
                }
                // Cancelled, the wait may have ended as an invalidation's: the cancellation is the cause.
                if Task.isCancelled { throw cancelled }
                if !waited || self.manager.isInvalidated { throw invalidated }
            }
            self.connections += 1
            self.connectionBroughtAnEvent = false
            var request = self.request
            request.headerFields[.accept] = "text/event-stream"
            request.headerFields[.cacheControl] = "no-cache"
            // As an `EventSource`'s fetch (its cache mode is no-store): never answered from the
            // session's cache (and an event stream is never stored in it).
            request.options.cachePolicy = .reloadIgnoringLocalCacheData
            // Once the server named an event, its ID replaces one the request came with; an empty
            // one (a bare `id` line) is sent as none, as the standard says.
            if let id = self.parser.lastEventID { request.headerFields[HTTPField.Name("Last-Event-ID")!] = id.isEmpty ? nil : id }
            let stream: DataStreamResponse
            do {
                stream = try await self.manager.stream(request)
            } catch {
                if Self.endsTheStream(error) || Task.isCancelled { throw error }
                try self.connectionEnded(with: error)
                return
            }
            let status = stream.response.status.code
            if status == 204 {
                stream.task.cancel()
                self.isDone = true
                return
            }
            let contentType = stream.response.headerFields.value(of: .contentType)?.split(separator: ";").first?
                .trimmingCharacters(in: .whitespaces).lowercasedASCII
            guard status == 200, contentType == "text/event-stream" else {
                stream.task.cancel()
                throw CourierError(
                    .invalidResponse,
                    "\(request.summary): the server answered \(status) with \(contentType ?? "no content type"), not a text/event-stream",
                    request: request, response: stream.response)
            }
            self.body = stream.body.makeAsyncIterator()
        }

        /// The wait before the next connection.
        var reconnectionDelay: Duration {
            Self.delay(retry: self.parser.retry, options: self.options)
        }

        /// The wait before a reconnection: the server's `retry:` (at least
        /// ``Options/minimumRetryDelay``), else the options' ``Options/retryDelay``; at most
        /// ``Options/maximumRetryDelay``.
        static func delay(retry: Duration?, options: Options) -> Duration {
            let delay = retry.map { Swift.max($0, options.minimumRetryDelay) } ?? options.retryDelay
            return Swift.min(delay, options.maximumRetryDelay)
        }

        /// A connection ended (cleanly when `error` is nil): reconnect, unless too many connections
        /// in a row brought nothing.
        private mutating func connectionEnded(with error: CourierError?) throws(CourierError) {
            self.body = nil
            self.parser.reset()
            // A connection that brought events and then ended is not one "without event".
            if !self.connectionBroughtAnEvent { self.failuresWithoutEvent += 1 }
            if let maximum = self.options.maximumReconnectionsWithoutEvent, self.failuresWithoutEvent > maximum {
                self.isDone = true
                if let error { throw error }
            }
        }
    }
}

extension SessionManager {
    /// The server-sent events `request` answers with, reconnecting as an `EventSource` does.
    ///
    /// ```swift
    /// for try await event in manager.eventStream(Request(url: url)) {
    ///     print(event.event, event.data)
    /// }
    /// ```
    /// Nothing is sent until iteration begins; each iteration opens its own connection.
    public func eventStream(_ request: Request, options: ServerSentEventStream.Options = .init()) -> ServerSentEventStream {
        ServerSentEventStream(manager: self, request: request, options: options)
    }
}
