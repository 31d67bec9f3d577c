import Dispatch
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import Synchronization

/// What a streamed task made with ``SessionManager/streamTask(with:downloadProgress:events:)``
/// hands its handler, in this order: the response head, the pieces of its body as they arrive,
/// and one completion (Alamofire's `DataStreamRequest.Stream` events).
public enum DataStreamEvent: Sendable {
    /// The final response head, before any of its body.
    case response(HTTPResponse)
    /// The next piece of the body, as it arrived.
    case data(Data)
    /// The end: nil when the body ended whole, else the error the task ended with. A task that
    /// failed before a response head arrived has only this event.
    case completion(CourierError?)
}

extension SessionManager {
    /// Makes a streamed data task, suspended as every task is (`resume()` starts it), whose
    /// response comes to `handler` as it arrives: the head, each piece of the body, then the
    /// completion (Alamofire's `streamRequest(_:)` with `responseStream`, made with
    /// `startRequestsImmediately` false). The callback form of
    /// ``stream(_:downloadProgress:gatheringBodiesUpTo:)``, with its behaviour: the cache, a
    /// failed status held back while the retriers decide, the session's hooks and notifications.
    ///
    /// ```swift
    /// let task = manager.streamTask(with: Request(url: url)) { event in
    ///     switch event {
    ///     case .response(let head): print(head.status)
    ///     case .data(let piece): print("\(piece.count) bytes")
    ///     case .completion(let error): print(error.map { "\($0)" } ?? "done")
    ///     }
    /// }
    /// task.resume()
    /// ```
    ///
    /// The events come on ``completionQueue`` (the main queue when nil), one after the other,
    /// each once the one before it has returned, and inside ``completionGroup`` when set. The next
    /// piece is not handed on before the handler returned from the last: a slow handler slows the
    /// connection (it stops reading once 128 KiB wait), as the `async` stream's reader does.
    /// `cancel()` ends the task; a task released without being resumed hands on nothing.
    /// - Parameters:
    ///   - request: The request.
    ///   - downloadProgress: Called as the body arrives.
    ///   - handler: Gets the task's events.
    public func streamTask(
        with request: Request,
        downloadProgress: (@Sendable (Progress) -> Void)? = nil,
        events handler: @escaping @Sendable (DataStreamEvent) -> Void
    ) -> DataTask {
        let sink = ResponseStreamSink()
        let end = HandOnEnd()
        let task = self.makeStreamTask(request, sink: sink, downloadProgress: downloadProgress, resumedAtOnce: false, handOn: end)
        let (queue, group) = self.settings.withLockedValue { ($0.completionQueue ?? Self.mainQueue, $0.completionGroup) }
        // A callback API has no caller's task to read the body on: this one reads it. It holds
        // the sink, not the task, and ends when the sink does: the body ends, the task fails or
        // is cancelled (`cancel()` is how to stop it), or the task is released without being
        // resumed (``BodySink/abandon()``).
        Task {
            await Self.handOn(sink, to: handler, on: queue, group: group)
            end.readerEnded()
        }
        return task
    }

    /// Reads a streamed task's sink and hands each event to `handler` on `queue`, waiting for each
    /// to be handled before the next.
    static func handOn(
        _ sink: ResponseStreamSink, to handler: @escaping @Sendable (DataStreamEvent) -> Void, on queue: DispatchQueue,
        group: DispatchGroup?
    ) async {
        func deliver(_ event: DataStreamEvent) async {
            group?.enter()
            await withCheckedContinuation { (handled: CheckedContinuation<Void, Never>) in
                queue.async {
                    handler(event)
                    group?.leave()
                    handled.resume()
                }
            }
        }
        func failure(_ error: any Error) -> CourierError {
            error.asCourierError(.internalInconsistency, "the stream failed")
        }
        do {
            try await sink.waitForHead()
        } catch {
            if !sink.wasAbandoned { await deliver(.completion(failure(error))) }
            return
        }
        guard let response = sink.response, let body = sink.takeBody() else {
            await deliver(.completion(CourierError(.internalInconsistency, "the stream has no response")))
            return
        }
        await deliver(.response(response))
        do {
            for try await chunk in body { await deliver(.data(Data(buffer: chunk, byteTransferStrategy: .automatic))) }
            await deliver(.completion(nil))
        } catch {
            await deliver(.completion(failure(error)))
        }
    }
}

/// Where a streamed task's callback form ends the delivery its end counted
/// (``SessionManager/beginDelivery()``): once both the task has ended and its reader has handed
/// the last event on, whichever comes second, so that an invalidated manager waits for the last
/// event handler as it waits for a completion handler. A task released without being resumed
/// counted nothing and ends nothing.
final class HandOnEnd: Sendable {
    private enum Stage { case running, taskEnded(SessionManager), readerEnded, done }
    private let stage = Mutex(Stage.running)

    /// The task ended (its end counted a delivery on `manager`).
    func taskEnded(_ manager: SessionManager) {
        let ends = self.stage.withLock { stage -> Bool in
            guard case .readerEnded = stage else {
                stage = .taskEnded(manager)
                return false
            }
            stage = .done
            return true
        }
        if ends { manager.endDelivery() }
    }

    /// The reader handed on its last event (or nothing, for a task released unresumed).
    func readerEnded() {
        let manager = self.stage.withLock { stage -> SessionManager? in
            guard case .taskEnded(let manager) = stage else {
                stage = .readerEnded
                return nil
            }
            stage = .done
            return manager
        }
        manager?.endDelivery()
    }
}
