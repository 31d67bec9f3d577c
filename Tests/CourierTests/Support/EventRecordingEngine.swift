import Courier
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore

/// An engine that carries every exchange on another one (a `NIOEngine` by default) and records
/// what passes between the tasks and the exchanges: suspend and resume, the response head, body
/// chunks, completion. Tests wait for these events instead of sleeping, and check the order they
/// came in (a suspended exchange delivers no more than the read under way; a paused task completes
/// only after it was resumed).
final class EventRecordingEngine: Engine {
    enum Event: Sendable, Hashable {
        case suspend, resume, head, chunk(Int), complete
    }

    let base: any Engine
    private let events = NIOLockedValueBox<[Event]>([])
    private let waiters = NIOLockedValueBox<[(check: @Sendable ([Event]) -> Bool, waiter: NotificationWaiter)]>([])

    /// `execute` returns only once the first body chunk (or the completion) was delivered: the
    /// caller holds no handle while the exchange's first events run, as when its thread stalls.
    let returnsAfterFirstChunk: Bool

    init(base: any Engine = NIOEngine(), returnsAfterFirstChunk: Bool = false) {
        self.base = base
        self.returnsAfterFirstChunk = returnsAfterFirstChunk
    }

    func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange {
        let recording = Delegate(base: delegate, engine: self)
        let exchange = self.base.execute(request, delegate: recording)
        if self.returnsAfterFirstChunk {
            // Blocks the caller's thread, at most 10 s, for this test double's one purpose.
            _ = recording.firstChunk.wait(timeout: .now() + 10)
        }
        // The handle the task was given when the exchange started, if the base engine said.
        return recording.handle.withLockedValue { $0 } ?? Handle(base: exchange, engine: self)
    }

    func shutdown() async throws {
        try await self.base.shutdown()
    }

    /// Every event so far, in order.
    var all: [Event] { self.events.withLockedValue { $0 } }

    fileprivate func record(_ event: Event) {
        let events = self.events.withLockedValue { events in
            events.append(event)
            return events
        }
        let ready = self.waiters.withLockedValue { waiters -> [NotificationWaiter] in
            let ready = waiters.filter { $0.check(events) }.map(\.waiter)
            waiters.removeAll { entry in ready.contains { $0 === entry.waiter } }
            return ready
        }
        for waiter in ready { waiter.deliver(nil) }
    }

    /// Waits until `condition` holds for the events; false when it did not within `seconds` (a
    /// bound on a failing test, not a pause: ``Changes/hangGuard`` by default).
    func wait(within seconds: Double = NotificationWaiter.hangGuard, until condition: @escaping @Sendable ([Event]) -> Bool) async -> Bool {
        let waiter = NotificationWaiter()
        let already = self.events.withLockedValue { events -> Bool in
            if condition(events) { return true }
            self.waiters.withLockedValue { $0.append((condition, waiter)) }
            return false
        }
        if already { return true }
        _ = await waiter.wait(seconds: seconds)
        return condition(self.all)
    }

    /// The most chunks delivered between a suspend and the resume after it.
    var mostChunksWhileSuspended: Int {
        var most = 0
        var current: Int?
        for event in self.all {
            switch event {
            case .suspend: current = current ?? 0
            case .resume: current = nil
            case .chunk:
                if let count = current {
                    current = count + 1
                    most = max(most, count + 1)
                }
            case .head, .complete: break
            }
        }
        return most
    }

    /// Whether the exchange completed while suspended (after a suspend, before its resume).
    var completedWhileSuspended: Bool {
        var suspended = false
        for event in self.all {
            switch event {
            case .suspend: suspended = true
            case .resume: suspended = false
            case .complete: if suspended { return true }
            case .head, .chunk: break
            }
        }
        return false
    }

    private final class Delegate: ExchangeDelegate {
        let base: any ExchangeDelegate
        let engine: EventRecordingEngine
        let handle = NIOLockedValueBox<Handle?>(nil)
        /// Signalled by the first chunk and by the completion.
        let firstChunk = DispatchSemaphore(value: 0)

        init(base: any ExchangeDelegate, engine: EventRecordingEngine) {
            self.base = base
            self.engine = engine
        }

        func exchangeWillStart(_ exchange: any Exchange) {
            let handle = Handle(base: exchange, engine: self.engine)
            self.handle.withLockedValue { $0 = handle }
            self.base.exchangeWillStart(handle)
        }

        func exchange(didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
            self.base.exchange(didSendBodyData: bytesSent, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend)
        }

        func exchange(willPerformRedirection response: HTTPResponse, newRequest: Request) -> Request? {
            self.base.exchange(willPerformRedirection: response, newRequest: newRequest)
        }

        func exchange(didReceive response: HTTPResponse, url: URL) -> ResponseDisposition {
            self.engine.record(.head)
            return self.base.exchange(didReceive: response, url: url)
        }

        func exchange(didReceive chunk: ByteBuffer) {
            // Recorded before the task sees it: a suspend the chunk causes comes after it.
            self.engine.record(.chunk(chunk.readableBytes))
            self.base.exchange(didReceive: chunk)
            self.firstChunk.signal()
        }

        func exchange(didCompleteWith error: CourierError?) {
            self.engine.record(.complete)
            self.base.exchange(didCompleteWith: error)
            self.firstChunk.signal()
            // The handle holds the base exchange, which may hold this delegate: the cycle ends
            // with the exchange, as a task lets go of its exchange when it ends.
            self.handle.withLockedValue { $0 = nil }
        }
    }

    private final class Handle: Exchange {
        let base: any Exchange
        let engine: EventRecordingEngine

        init(base: any Exchange, engine: EventRecordingEngine) {
            self.base = base
            self.engine = engine
        }

        func cancel(with error: CourierError) { self.base.cancel(with: error) }

        func suspendReceiving() {
            self.engine.record(.suspend)
            self.base.suspendReceiving()
        }

        func resumeReceiving() {
            self.engine.record(.resume)
            self.base.resumeReceiving()
        }
    }
}
