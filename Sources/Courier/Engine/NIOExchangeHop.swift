import AsyncHTTPClient
import Foundation
import HTTPTypes
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
        self.exchange.hopSentBodyPart(Int64(part.readableBytes))
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        self.exchange.hopReceivedHead(head)
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        self.exchange.hopReceivedBodyPart(buffer, on: task.eventLoop) ?? task.eventLoop.makeSucceededVoidFuture()
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
