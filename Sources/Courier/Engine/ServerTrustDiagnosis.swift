import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// Says why BoringSSL refused a chain when it only said CERTIFICATE_VERIFY_FAILED.
///
/// AsyncHTTPClient installs no verification callback, and BoringSSL reports an unknown authority,
/// an expired and a not-yet-valid chain alike. After such a failure, one more TLS handshake (on a
/// connection of its own, which sends no request and is closed at once) reads the chain the server
/// presents through swift-nio-ssl's custom verification callback, refuses it there, and compares
/// its dates with the clock.
enum ServerTrustDiagnosis {
    /// `.expired` or `.notYetValid` when a presented certificate is out of its validity period,
    /// else nil (keep the reason you had). Never fails: a diagnosis that cannot run gives nil.
    static func reason(
        host: String,
        port: Int,
        on eventLoop: any EventLoop,
        timeout: TimeAmount = .seconds(2)
    ) -> EventLoopFuture<ServerTrustFailure.Reason?> {
        let result = eventLoop.makePromise(of: ServerTrustFailure.Reason?.self)
        let done = NIOLockedValueBox(false)
        @Sendable func complete(_ reason: ServerTrustFailure.Reason?) {
            let first = done.withLockedValue { done in
                defer { done = true }
                return !done
            }
            if first { result.succeed(reason) }
        }
        let context: NIOSSLContext
        do {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.certificateVerification = .noHostnameVerification
            tls.trustRoots = .certificates([])
            context = try NIOSSLContext(configuration: tls)
        } catch {
            return eventLoop.makeSucceededFuture(nil)
        }
        // SNI carries names only.
        let isAddress = IPAddress(host) != nil
        let timer = eventLoop.scheduleTask(in: timeout) { complete(nil) }
        ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(
                        context: context,
                        serverHostname: isAddress ? nil : host,
                        customVerificationCallback: { chain, verification in
                            complete(Self.reason(for: chain))
                            verification.succeed(.failed)
                        }
                    )
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(host: host, port: port)
            .whenComplete { connection in
                switch connection {
                case .success(let channel):
                    result.futureResult.whenComplete { _ in channel.close(promise: nil) }
                case .failure:
                    complete(nil)
                }
            }
        result.futureResult.whenComplete { _ in timer.cancel() }
        return result.futureResult
    }

    /// `.expired` or `.notYetValid` when a certificate of `chain` is out of its validity period.
    static func reason(for chain: [NIOSSLCertificate], now: time_t = time(nil)) -> ServerTrustFailure.Reason? {
        if chain.contains(where: { $0.notValidAfter < now }) { return .expired }
        if chain.contains(where: { $0.notValidBefore > now }) { return .notYetValid }
        return nil
    }
}
