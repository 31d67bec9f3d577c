import Foundation
import NIOCore

extension DataStreamResponse {
    /// The body as a Foundation `InputStream` (Alamofire's `asInputStream(bufferSize:)`), for the
    /// APIs that read one, such as `XMLParser(stream:)`.
    ///
    /// ```swift
    /// let stream = try await manager.stream(Request(url: feedURL))
    /// let input = stream.inputStream()
    /// DispatchQueue.global().async {
    ///     let parser = XMLParser(stream: input)
    ///     parser.delegate = feedReader
    ///     parser.parse()
    /// }
    /// ```
    ///
    /// `read(_:maxLength:)` blocks until bytes come or the body ends, so read the stream on a
    /// thread of your own (a dispatch queue, a `Thread`) rather than on a Swift concurrency task,
    /// whose few threads other tasks wait for. The body itself is read for the input stream on a
    /// thread of its own, so readers that block every thread of Swift's pool still get their
    /// bytes (two readers in `async` functions on a two-core machine do). Once `bufferSize` bytes wait unread, the body is not read
    /// further (and the connection stops reading, as for an unread ``body``) until they are read.
    /// At the end `read` returns 0 and `streamStatus` is `.atEnd`; after a failure it returns -1 and
    /// `streamError` is the ``CourierError``. Closing the input stream before the end, or letting
    /// go of it, cancels the request. The body is read once: read this or ``body``, not both.
    /// - Parameter bufferSize: The most bytes read ahead of the reader (64 KiB by default).
    public func inputStream(bufferSize: Int = 64 * 1024) -> InputStream {
        BodyInputStream(body: self.body, bufferSize: bufferSize)
    }
}

/// An `InputStream` that a task of its own fills from a streamed body through a ``BodyPipe``,
/// ``BodyPipe/bufferSize`` bytes ahead of the reader at most. Letting go of it, or closing it,
/// ends the filling and cancels the request. The filling task runs on a thread of its own
/// (``OwnThreadExecutor``), not on Swift's cooperative pool, whose threads blocked readers may
/// hold.
final class BodyInputStream: InputStream {
    private let pipe: BodyPipe
    private let filling: Task<Void, Never>

    init(body: ResponseBodyStream, bufferSize: Int) {
        let pipe = BodyPipe(bufferSize: bufferSize)
        self.pipe = pipe
        // Reads the body for the reader, which blocks and cannot await. Ends with the body;
        // `close()` and `deinit` cancel it (and with it the request). On a thread of its own that
        // ends with it: a reader blocked on the cooperative pool must not keep it from running.
        let executor = OwnThreadExecutor(name: "Courier.BodyInputStream")
        self.filling = Task(executorPreference: executor) {
            await pipe.fill(from: body)
            executor.finish()
        }
        super.init(data: Data())
    }

    deinit {
        self.pipe.close()
        self.filling.cancel()
    }

    override func open() { self.pipe.open() }

    override func close() {
        if self.pipe.close() { self.filling.cancel() }
    }

    override var streamStatus: Stream.Status { self.pipe.status }

    override var streamError: (any Error)? { self.pipe.error }

    override var hasBytesAvailable: Bool {
        let status = self.pipe.status
        return status == .open || status == .notOpen
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        self.pipe.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max(0, length)))
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool {
        false
    }
}

/// What a ``BodyInputStream``'s filling task and its reader share.
///
/// `@unchecked Sendable`: every field is read and written with `condition` held; the filling task
/// and the reading thread meet there.
final class BodyPipe: @unchecked Sendable {
    private let condition = NSCondition()
    /// The most bytes read ahead of the reader.
    let bufferSize: Int
    /// The chunks not yet read, as they came (the reader's copy is the only one), and their bytes.
    private var pending = CircularBuffer<ByteBuffer>()
    private var pendingBytes = 0
    private var ended = false
    private var failure: CourierError?
    private var streamStatus = Stream.Status.notOpen
    /// The filling task, waiting until the reader has made room.
    private var roomWaiter: CheckedContinuation<Void, Never>?

    init(bufferSize: Int) {
        self.bufferSize = max(1, bufferSize)
    }

    private func locked<T>(_ body: () -> T) -> T {
        self.condition.lock()
        defer { self.condition.unlock() }
        return body()
    }

    var status: Stream.Status { self.locked { self.streamStatus } }

    var error: CourierError? { self.locked { self.streamStatus == .error ? self.failure : nil } }

    /// Reads `body` into the pipe until it ends or the pipe is closed, waiting for room after each
    /// chunk that takes it to ``bufferSize`` or more.
    func fill(from body: ResponseBodyStream) async {
        do {
            for try await chunk in body {
                guard let mustWait = self.append(chunk) else { return }
                if mustWait { await withCheckedContinuation { self.waitForRoom($0) } }
            }
            self.end(with: nil)
        } catch {
            self.end(with: error.asCourierError(.internalInconsistency, "the body failed"))
        }
    }

    /// Adds a chunk for the reader; returns whether the filling must wait for room, or nil when
    /// the pipe was closed.
    private func append(_ chunk: ByteBuffer) -> Bool? {
        self.locked {
            guard self.streamStatus != .closed else { return nil }
            guard chunk.readableBytes > 0 else { return false }
            self.pending.append(chunk)
            self.pendingBytes += chunk.readableBytes
            self.condition.broadcast()
            return self.pendingBytes >= self.bufferSize
        }
    }

    /// Keeps `room` until the reader has made room (resumed at once if it has, or if the pipe was
    /// closed).
    private func waitForRoom(_ room: CheckedContinuation<Void, Never>) {
        let now = self.locked { () -> Bool in
            guard self.pendingBytes >= self.bufferSize, self.streamStatus != .closed else { return true }
            self.roomWaiter = room
            return false
        }
        if now { room.resume() }
    }

    private func end(with failure: CourierError?) {
        self.locked {
            self.ended = true
            self.failure = failure
            self.condition.broadcast()
        }
    }

    func open() {
        self.locked { if self.streamStatus == .notOpen { self.streamStatus = .open } }
    }

    /// Closes the pipe: a blocked read returns, the filling stops. Returns whether it was open.
    @discardableResult
    func close() -> Bool {
        let (wasOpen, waiter) = self.locked { () -> (Bool, CheckedContinuation<Void, Never>?) in
            let wasOpen = self.streamStatus != .closed
            self.streamStatus = .closed
            defer { self.roomWaiter = nil }
            self.pending.removeAll()
            self.pendingBytes = 0
            self.condition.broadcast()
            return (wasOpen, self.roomWaiter)
        }
        waiter?.resume()
        return wasOpen
    }

    /// Blocks until bytes come or the body ends; returns how many were copied into `buffer`, 0 at
    /// the end (or once closed), -1 after a failure.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard buffer.count > 0 else { return 0 }
        self.condition.lock()
        while self.pending.isEmpty, !self.ended, self.streamStatus != .closed {
            self.condition.wait()
        }
        guard self.streamStatus != .closed else {
            self.condition.unlock()
            return 0
        }
        guard self.pending.isEmpty else {
            // From the chunks in order, until the buffer is full.
            var count = 0
            while count < buffer.count, var chunk = self.pending.popFirst() {
                let taken = min(buffer.count - count, chunk.readableBytes)
                chunk.withUnsafeReadableBytes { bytes in
                    UnsafeMutableRawBufferPointer(rebasing: buffer[count..<(count + taken)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<taken]))
                }
                chunk.moveReaderIndex(forwardBy: taken)
                if chunk.readableBytes > 0 { self.pending.prepend(chunk) }
                count += taken
            }
            self.pendingBytes -= count
            var waiter: CheckedContinuation<Void, Never>?
            if self.pendingBytes < self.bufferSize {
                waiter = self.roomWaiter
                self.roomWaiter = nil
            }
            self.condition.unlock()
            waiter?.resume()
            return count
        }
        let failed = self.failure != nil
        self.streamStatus = failed ? .error : .atEnd
        self.condition.unlock()
        return failed ? -1 : 0
    }
}
