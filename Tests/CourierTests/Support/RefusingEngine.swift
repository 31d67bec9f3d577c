import Courier
import Foundation
import NIOCore

/// An engine that fails every exchange at once, for tests that must never reach a transport.
final class RefusingEngine: Engine {
    final class Handle: Exchange {
        func cancel(with error: CourierError) {}
        func suspendReceiving() {}
        func resumeReceiving() {}
    }

    func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange {
        delegate.exchange(didCompleteWith: CourierError(.connectionFailed, "RefusingEngine refuses \(request.summary)", request: request))
        return Handle()
    }

    func shutdown() async throws {}
}
