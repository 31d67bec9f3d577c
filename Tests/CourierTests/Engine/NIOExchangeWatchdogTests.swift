@testable import Courier
import NIOCore
import NIOPosix
import Testing

@Suite("NIOExchangeWatchdog")
struct NIOExchangeWatchdogTests {
    @Test(arguments: [(60.0, 50), (1.0, 50), (0.5, 25), (0.2, 10), (0.01, 5)])
    func tickIsATwentiethOfTheShortestTimeoutWithinBounds(timeout: Double, milliseconds: Int64) {
        let watchdog = NIOExchangeWatchdog(eventLoop: MultiThreadedEventLoopGroup.singleton.next(), shortestTimeout: timeout)
        #expect(watchdog.tick == .milliseconds(milliseconds))
    }
}
