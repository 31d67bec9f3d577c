import Foundation
import NIOCore

extension NIOExchange {
    /// What a failed request body stream ends the exchange with: Courier's errors (and the pool's
    /// length check) as they are, anything the stream threw as ``CourierError/Code/bodyReadFailed``.
    static func bodyStreamFailure(_ error: any Error, request: Request) -> any Error {
        if error is CourierError || error is ConnectionPoolError { return error }
        return CourierError(.bodyReadFailed, "\(request.summary): the body stream failed", request: request, underlyingError: error)
    }
}
