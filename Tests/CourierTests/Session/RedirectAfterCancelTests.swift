@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// A redirect that reaches the task after its `cancel()` (the cancel on its way to the exchange)
/// is not followed, and nothing hears of it, as a final head after a cancel is refused: the task
/// ends cancelled, naming the request it sent. The redirect hook ran, the redirect's cookies were
/// stored, and the task's current request moved to the target.
@Suite("Session: a redirect after cancel")
struct RedirectAfterCancelTests {
    /// An engine whose exchanges run `before` as a redirect reaches the task.
    struct CancellingAtRedirect: Engine {
        let base: any Engine
        let before: @Sendable () -> Void

        func execute(_ request: Request, delegate: any ExchangeDelegate) -> any Exchange {
            self.base.execute(request, delegate: Wrapper(base: delegate, before: self.before))
        }

        func shutdown() async throws { try await self.base.shutdown() }

        final class Wrapper: ExchangeDelegate {
            let base: any ExchangeDelegate
            let before: @Sendable () -> Void
            init(base: any ExchangeDelegate, before: @escaping @Sendable () -> Void) {
                self.base = base
                self.before = before
            }
            func exchangeWillStart(_ exchange: any Exchange) { self.base.exchangeWillStart(exchange) }
            func exchange(didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64?) {
                self.base.exchange(didSendBodyData: bytesSent, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend)
            }
            func exchange(willPerformRedirection response: HTTPResponse, newRequest: Request) -> Request? {
                self.before()
                return self.base.exchange(willPerformRedirection: response, newRequest: newRequest)
            }
            func exchange(didReceive response: HTTPResponse, url: URL) -> ResponseDisposition { self.base.exchange(didReceive: response, url: url) }
            func exchange(willReceiveResponseOver networkProtocolName: String) { self.base.exchange(willReceiveResponseOver: networkProtocolName) }
            func exchange(didReceive chunk: ByteBuffer) { self.base.exchange(didReceive: chunk) }
            func exchange(didReceiveTrailers trailers: HTTPFields) { self.base.exchange(didReceiveTrailers: trailers) }
            func exchange(didFinishTransaction metrics: TransactionMetrics) { self.base.exchange(didFinishTransaction: metrics) }
            func exchange(didCompleteWith error: CourierError?) { self.base.exchange(didCompleteWith: error) }
        }
    }

    @Test func aRedirectThatArrivesAfterCancelIsNotFollowedAndNobodyHearsOfIt() async throws {
        try await withTestServer { server in
            let targetHits = NIOLockedValueBox(0)
            server.route("/from") { _ in
                TestServer.Response(status: .found, headerFields: [.location: "/to", .setCookie: "visited=1; Path=/"])
            }
            server.route("/to") { _ in
                targetHits.withLockedValue { $0 += 1 }
                return .text("arrived")
            }
            let taskBox = NIOLockedValueBox<SessionTask?>(nil)
            // Cancelled from another thread while the loop holds the redirect: the exchange's
            // cancel is queued behind it on the loop, as when `cancel()` races a 302.
            let manager = SessionManager(engine: CancellingAtRedirect(base: NIOEngine()) {
                let cancelled = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    taskBox.withLockedValue { $0 }?.cancel()
                    cancelled.signal()
                }
                cancelled.wait()
            })
            let hookCalls = NIOLockedValueBox(0)
            manager.hooks.taskWillPerformHTTPRedirection = { _, _, _, proposed in
                hookCalls.withLockedValue { $0 += 1 }
                return proposed
            }
            let ended = Recorder<CourierError?>()
            let task = manager.dataTask(with: Request(url: server.url("/from"))) { _, _, error in ended.append(error) }
            taskBox.withLockedValue { $0 = task }
            task.resume()
            #expect(await ended.wait { $0.count == 1 })
            #expect(ended.all.first??.code == .cancelled, "\(ended.all)")
            #expect(task.currentRequest.url.path == "/from", "the task's current request moved to the redirect's target")
            #expect(hookCalls.withLockedValue { $0 } == 0, "the redirect hook ran for a cancelled task")
            #expect(manager.configuration.httpCookieStorage?.cookies(for: server.url("/to")).isEmpty != false, "the redirect's cookie was stored")
            #expect(targetHits.withLockedValue { $0 } == 0)
            taskBox.withLockedValue { $0 = nil }
            await manager.invalidate(cancelingTasks: true)
        }
    }
}
