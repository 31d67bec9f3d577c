import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// AsyncHTTPClient's delegate for one hop of an exchange. AHC calls it on the exchange's event
/// loop, one call at a time.
final class NIOExchangeHop: HTTPClientResponseDelegate {
    typealias Response = Void

    let exchange: NIOExchange

    init(exchange: NIOExchange) {
        self.exchange = exchange
    }

    func didSendRequestHead(task: HTTPClient.Task<Void>, _ head: HTTPRequestHead) {
        self.exchange.requestHeadSent()
    }

    func didSendRequestPart(task: HTTPClient.Task<Void>, _ part: IOData) {
        let bytes = Int64(part.readableBytes)
        guard bytes > 0 else { return }
        let (total, expected) = self.exchange.state.withLockedValue { state -> (Int64, Int64?) in
            state.bytesSent += bytes
            state.lastActivity = .now()
            return (state.bytesSent, state.expectedBytesToSend)
        }
        self.exchange.delegate.exchange(didSendBodyData: bytes, totalBytesSent: total, totalBytesExpectedToSend: expected)
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let response = HTTPResponse(nioHead: head)
        let exchange = self.exchange
        let (request, redirect) = exchange.state.withLockedValue { state -> (Request, RedirectStep) in
            state.lastActivity = .now()
            state.headStatus = response.status.code
            let step = RedirectPlanner.step(
                for: response,
                request: state.request,
                policy: exchange.engine.configuration.redirectPolicy,
                redirectCount: state.redirectCount,
                visitedURLs: state.visitedURLs
            )
            return (state.request, step)
        }
        switch redirect {
        case .none:
            break
        case .fail(let message):
            let error = CourierError(.tooManyRedirects, "\(request.summary): \(message)", request: request, response: response)
            exchange.cancel(with: error)
            return task.eventLoop.makeSucceededVoidFuture()
        case .follow(let proposed):
            if let chosen = exchange.delegate.exchange(willPerformRedirection: response, newRequest: proposed) {
                exchange.state.withLockedValue { state in
                    state.redirectCount += 1
                    state.visitedURLs.insert(chosen.url.absoluteString)
                    state.bytesSent = 0
                    state.expectedBytesToSend = chosen.body.knownLength
                    state.phase = .redirecting(chosen)
                }
                return task.eventLoop.makeSucceededVoidFuture()
            }
        }
        exchange.state.withLockedValue { $0.phase = .streaming }
        if exchange.delegate.exchange(didReceive: response, url: request.url) == .cancel {
            exchange.cancel(with: CourierError(.cancelled, "\(request.summary): cancelled on receiving the response", request: request, response: response))
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let exchange = self.exchange
        let deliver = exchange.state.withLockedValue { state -> Bool in
            state.lastActivity = .now()
            if case .streaming = state.phase, !state.isFinished, state.pendingCancellation == nil { return true }
            return false
        }
        guard deliver else { return task.eventLoop.makeSucceededVoidFuture() }
        exchange.delegate.exchange(didReceive: buffer)
        // Back-pressure: while paused, hand AHC a future that `resumeReceiving` completes.
        return exchange.state.withLockedValue { state -> EventLoopFuture<Void> in
            guard state.isPaused, !state.isFinished, state.pendingCancellation == nil else {
                return task.eventLoop.makeSucceededVoidFuture()
            }
            let promise = task.eventLoop.makePromise(of: Void.self)
            state.pausedPromise = promise
            return promise.futureResult
        }
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        // The task's future reports the error; `NIOExchange.hopCompleted` handles it.
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {}
}

extension HTTPResponse {
    /// A swift-http-types response from NIO's head; fields with invalid names are dropped.
    init(nioHead head: HTTPResponseHead) {
        var fields = HTTPFields()
        fields.reserveCapacity(head.headers.count)
        for (name, value) in head.headers {
            if let fieldName = HTTPField.Name(name) {
                fields.append(HTTPField(name: fieldName, value: value))
            }
        }
        self.init(
            status: HTTPResponse.Status(code: Int(head.status.code), reasonPhrase: head.status.reasonPhrase),
            headerFields: fields
        )
    }
}
