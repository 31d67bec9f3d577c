import NIOConcurrencyHelpers
import NIOCore

extension DataStreamResponse {
    /// `count` readers of this response's body, each of which yields every chunk, in order
    /// (Alamofire's several `responseStream` handlers on one request): read the body as it is
    /// and decoded at once, or from two tasks.
    ///
    /// ```swift
    /// let stream = try await manager.stream(Request(url: url))
    /// let readers = stream.broadcast(to: 2)
    /// async let raw = readers[0].body.reduce(0) { $0 + $1.readableBytes }
    /// for try await event in readers[1].decoded(Event.self) { handle(event) }
    /// ```
    ///
    /// Iterate the readers' bodies (each once, as any body) instead of this response's. The body
    /// is read from the connection as fast as the fastest reader asks; a chunk is kept until every
    /// reader has read it, so a reader that falls behind holds what it has not read yet (no
    /// back-pressure from it). A reader that stops early (its loop breaks, its serializer fails,
    /// it is dropped without being iterated) no longer holds anything; when every reader has
    /// stopped before the end, the request is cancelled, as when the body's one reader stops. A
    /// failure of the body (a reset, a timeout) reaches every reader. A reader whose task is
    /// cancelled while it waits for a chunk another reader is reading stops with
    /// ``CourierError/Code/cancelled``; cancelling the task that is reading from the connection
    /// for all of them cancels the request.
    ///
    /// No readers (`count` 0 or less) is every reader stopped at once: the result is empty and the
    /// request is cancelled (unless its body has ended already).
    /// - Parameter count: How many readers.
    public func broadcast(to count: Int) -> [DataStreamResponse] {
        let task = self.task
        guard count >= 1 else {
            task.cancel()
            return []
        }
        let broadcast = StreamBroadcast(source: self.body.makeAsyncIterator(), readers: count) { task.cancel() }
        return (0..<count).map { index in
            DataStreamResponse(
                task: self.task, request: self.request, response: self.response,
                body: ResponseBodyStream(branch: StreamBroadcast.Branch(broadcast, index: index)))
        }
    }
}

/// What a broadcast reads: a body's chunks, one call at a time.
protocol BroadcastSource {
    mutating func next() async throws(CourierError) -> ByteBuffer?
}

extension ResponseBodyStream.AsyncIterator: BroadcastSource {}

/// One body read by several readers: each reader has a position in the chunks read from the
/// body so far; the reader that needs a chunk nobody has read yet reads it from the body while
/// the others that need it wait; a chunk is dropped once every live reader is past it.
final class StreamBroadcast: Sendable {
    /// The body's iterator. `@unchecked Sendable`: a body's iterator is not `Sendable`, but this
    /// one is only ever used by one reader at a time, taken out of the lock's state while it reads
    /// (`isReading`) and put back after, so never by two threads at once.
    private struct Source: @unchecked Sendable {
        var iterator: any BroadcastSource
    }

    private struct State {
        var source: Source?
        /// Chunks not yet read by every live reader; the first is chunk number `first`. A ring:
        /// dropping the chunks a lagging reader has just read costs what is dropped (an array's
        /// `removeFirst` moved every chunk kept, for each chunk read, while that reader caught up).
        var chunks = CircularBuffer<ByteBuffer>()
        var first = 0
        /// Each reader's next chunk number; nil once it stopped (ended, or let go of).
        var positions: [Int?]
        var isReading = false
        /// Readers waiting for the chunk being read, by a number each.
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
        /// Set when the body ended: nil error for its end, else its failure.
        var ended: CourierError?? = .none
    }

    private enum Step {
        case chunk(ByteBuffer)
        case end
        case fail(CourierError)
        case wait
        case read(Source)
    }

    private let state: NIOLockedValueBox<State>
    /// Called once when every reader stopped before the body's end (the request is cancelled).
    private let abandon: @Sendable () -> Void

    init(source: some BroadcastSource, readers: Int, abandon: @escaping @Sendable () -> Void) {
        self.state = NIOLockedValueBox(State(source: Source(iterator: source), positions: Array(repeating: 0, count: readers)))
        self.abandon = abandon
    }

    /// The next chunk for reader `index`.
    func next(for index: Int) async throws(CourierError) -> ByteBuffer? {
        while true {
            let step = self.state.withLockedValue { state -> Step in
                guard let position = state.positions[index] else { return .end }
                if position - state.first < state.chunks.count {
                    state.positions[index] = position + 1
                    let chunk = state.chunks[state.chunks.index(state.chunks.startIndex, offsetBy: position - state.first)]
                    Self.trim(&state)
                    return .chunk(chunk)
                }
                switch state.ended {
                case .some(.none): return .end
                case .some(.some(let error)): return .fail(error)
                case .none: break
                }
                if state.isReading { return .wait }
                state.isReading = true
                return .read(state.source.take()!)
            }
            switch step {
            case .chunk(let chunk):
                return chunk
            case .end:
                return nil
            case .fail(let error):
                throw error
            case .wait:
                let number = self.state.withLockedValue { state in
                    defer { state.nextWaiter += 1 }
                    return state.nextWaiter
                }
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let waits = self.state.withLockedValue { state in
                            guard state.isReading, !Task.isCancelled else { return false }
                            state.waiters[number] = continuation
                            return true
                        }
                        if !waits { continuation.resume() }
                    }
                } onCancel: {
                    self.state.withLockedValue { $0.waiters.removeValue(forKey: number) }?.resume()
                }
                if Task.isCancelled { throw CourierError(.cancelled, "the task reading the body was cancelled") }
            case .read(var source):
                let result: Result<ByteBuffer?, CourierError>
                do {
                    result = .success(try await source.iterator.next())
                } catch {
                    result = .failure(error)
                }
                let waiters = self.state.withLockedValue { state in
                    state.isReading = false
                    switch result {
                    case .success(let chunk?): state.chunks.append(chunk)
                    case .success(nil): state.ended = .some(nil)
                    case .failure(let error): state.ended = .some(error)
                    }
                    // The body is kept while a reader may still need it.
                    if state.ended == nil, state.positions.contains(where: { $0 != nil }) { state.source = source }
                    defer { state.waiters = [:] }
                    return state.waiters.values
                }
                for waiter in waiters { waiter.resume() }
            }
        }
    }

    /// Reader `index` stopped: it holds no chunk any more; when it was the last reader and the
    /// body has not ended, the request is cancelled.
    func stop(_ index: Int) {
        // The body's iterator, if no reader holds it now, goes too (dropping it also ends the
        // body, and may end the task there and then): taken out under the lock, and let go of
        // when the closure's result is, after it.
        let (cancels, _) = self.state.withLockedValue { state -> (Bool, Source?) in
            guard state.positions[index] != nil else { return (false, nil) }
            state.positions[index] = nil
            Self.trim(&state)
            guard state.positions.allSatisfy({ $0 == nil }), state.ended == nil else { return (false, nil) }
            return (true, state.source.take())
        }
        if cancels { self.abandon() }
    }

    /// What the tests look at: chunks kept, whether a reader is reading the body, readers waiting.
    var snapshot: (buffered: Int, isReading: Bool, waiting: Int) {
        self.state.withLockedValue { ($0.chunks.count, $0.isReading, $0.waiters.count) }
    }

    /// Drops the chunks every live reader has read.
    private static func trim(_ state: inout State) {
        let lowest = state.positions.lazy.compactMap { $0 }.min() ?? (state.first + state.chunks.count)
        let read = lowest - state.first
        guard read > 0 else { return }
        state.chunks.removeFirst(read)
        state.first = lowest
    }

    /// A reader's share of a broadcast: until an iterator is made of it, dropping it stops the
    /// reader; after, the iterator's end (or its being dropped) does.
    final class Branch: Sendable {
        let broadcast: StreamBroadcast
        let index: Int
        private let iterated = NIOLockedValueBox(false)

        init(_ broadcast: StreamBroadcast, index: Int) {
            self.broadcast = broadcast
            self.index = index
        }

        /// The reader's iterator; a second one ends at once (a body is read once).
        func makeCursor() -> Cursor {
            let first = self.iterated.withLockedValue { iterated in
                defer { iterated = true }
                return !iterated
            }
            return Cursor(first ? self : nil)
        }

        deinit {
            if !self.iterated.withLockedValue({ $0 }) { self.broadcast.stop(self.index) }
        }
    }

    /// A reader's iteration: stops the reader when it ends, is stopped or is dropped.
    final class Cursor {
        private var branch: Branch?

        init(_ branch: Branch?) {
            self.branch = branch
        }

        func next() async throws(CourierError) -> ByteBuffer? {
            guard let branch = self.branch else { return nil }
            do {
                guard let chunk = try await branch.broadcast.next(for: branch.index) else {
                    self.stop()
                    return nil
                }
                return chunk
            } catch {
                self.stop()
                throw error
            }
        }

        /// The reader reads no more: it holds no chunk, and the request is cancelled if every
        /// other reader stopped too (``StreamBroadcast/stop(_:)``). Later calls of `next()` return nil.
        func stop() {
            guard let branch = self.branch.take() else { return }
            branch.broadcast.stop(branch.index)
        }

        deinit {
            if let branch = self.branch { branch.broadcast.stop(branch.index) }
        }
    }
}
