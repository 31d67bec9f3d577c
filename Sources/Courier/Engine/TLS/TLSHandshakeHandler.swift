import NIOCore
import NIOSSL
import NIOTLS
import SwiftASN1
import X509

/// Follows one TLS handshake after swift-nio-ssl's handler: runs the policy's evaluation from the
/// verification callback, bounds the handshake in time, turns its failure into a typed
/// ``CourierError`` naming the host and the phase, and, once it is done, lets the caller add the
/// protocol's handlers before passing on what the server already sent. Then it leaves the pipeline.
///
/// On its channel's event loop only.
final class TLSHandshakeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias InboundOut = NIOAny

    private enum State {
        /// Handshaking; the timer runs once the channel is active.
        case handshaking
        /// Done and configured: reads are held until the handler is removed.
        case holding
        /// The result is given (success or failure).
        case finished
    }

    let host: String
    let port: Int
    let policy: SecurityPolicy
    let timeout: TimeAmount
    private let promise: EventLoopPromise<TLSHandshakeResult>
    private let configurePipeline: @Sendable (TLSHandshakeResult, any Channel) throws -> Void
    private var state = State.handshaking
    private var timer: Scheduled<Void>?
    /// Why the policy refused the server, set by the verification callback.
    private var trustFailure: ServerTrustFailure?
    private var validatedChain: [X509.Certificate]?
    /// The suite the server chose, as ``ServerHelloObserver`` read it before the handshake ended.
    var cipherSuite: TLSCipherSuite?
    /// The TLS handler whose handshake this is, for the version it agreed: not the pipeline's first
    /// one, which through an `https://` proxy is the proxy's. Weak: its verification callback
    /// holds this handler.
    weak var tlsHandler: NIOSSLClientHandler?
    private var heldReads: [NIOAny] = []
    private var heldReadComplete = false

    /// The handshake's outcome, once the protocol's handlers are in place.
    var result: EventLoopFuture<TLSHandshakeResult> { self.promise.futureResult }

    init(
        host: String,
        port: Int,
        policy: SecurityPolicy,
        timeout: TimeAmount,
        eventLoop: any EventLoop,
        configurePipeline: @escaping @Sendable (TLSHandshakeResult, any Channel) throws -> Void
    ) {
        self.host = host
        self.port = port
        self.policy = policy
        self.timeout = timeout
        self.promise = eventLoop.makePromise()
        self.configurePipeline = configurePipeline
    }

    // MARK: The verification callback

    /// Evaluates the presented chain and completes swift-nio-ssl's verification promise; called
    /// by the callback, on the event loop.
    func verify(
        _ presented: [NIOSSLCertificate],
        with evaluator: SecurityPolicyEvaluator,
        completing verification: EventLoopPromise<NIOSSLVerificationResultWithMetadata>
    ) {
        let host = self.host
        let verdict = verification.futureResult.eventLoop.makePromise(of: SecurityPolicyEvaluator.Verdict.self)
        // swift-certificates' verifier is async, so the evaluation runs in a task. It does no I/O
        // and ends by itself within milliseconds; nothing can cancel it, and nothing needs to:
        // when the connection has gone meanwhile, its verdict completes a promise nobody awaits.
        // Started immediately it runs to its end here, on the event loop, as it never suspends
        // (its certificate stores are in memory), instead of waiting for a thread of the
        // concurrency pool, which a busy process may not have free.
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, *) {
            Task.immediate { verdict.succeed(await evaluator.evaluate(presented: presented, host: host)) }
        } else {
            verdict.completeWithTask { await evaluator.evaluate(presented: presented, host: host) }
        }
        verdict.futureResult.assumeIsolated().whenSuccess { verdict in
            switch verdict {
            case .trusted(let chain):
                self.validatedChain = chain
                verification.succeed(.certificateVerified(VerificationMetadata(chain.flatMap(Self.nioChain))))
            case .refused(let failure):
                self.trustFailure = failure
                verification.succeed(.failed)
            }
        }
    }

    /// The chain as swift-nio-ssl keeps it, or nil if a certificate does not re-encode.
    private static func nioChain(_ chain: [X509.Certificate]) -> NIOSSL.ValidatedCertificateChain? {
        var certificates: [NIOSSLCertificate] = []
        for certificate in chain {
            var serializer = DER.Serializer()
            guard (try? serializer.serialize(certificate)) != nil,
                let nio = try? NIOSSLCertificate(bytes: serializer.serializedBytes, format: .der)
            else { return nil }
            certificates.append(nio)
        }
        return NIOSSL.ValidatedCertificateChain(certificates)
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { self.startTimer(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.timer?.cancel()
        if self.state == .handshaking {
            self.fail(CourierError(.tlsFailure, "\(self.endpoint): the TLS handler was removed before the handshake finished"), context: context)
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        self.startTimer(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.state {
        case .holding: self.heldReads.append(data)
        case .handshaking, .finished: context.fireChannelRead(data)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        switch self.state {
        case .holding: self.heldReadComplete = true
        case .handshaking, .finished: context.fireChannelReadComplete()
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard self.state == .handshaking, let event = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = event else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        self.timer?.cancel()
        let version = self.tlsHandler?.tlsVersion
        let result = TLSHandshakeResult(
            applicationProtocol: negotiated.flatMap(TLSConnector.ApplicationProtocol.init(rawValue:)) ?? .http1_1,
            tlsVersion: version.map(SecurityPolicy.TLSVersion.init),
            cipherSuite: self.cipherSuite,
            validatedChain: self.validatedChain
        )
        context.fireUserInboundEventTriggered(event)
        self.state = .holding
        do {
            try self.configurePipeline(result, context.channel)
        } catch {
            self.fail(
                CourierError(.internalInconsistency, "\(self.endpoint): the connection could not be set up after the TLS handshake", underlyingError: error),
                context: context
            )
            return
        }
        self.state = .finished
        self.promise.succeed(result)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func removeHandler(context: ChannelHandlerContext, removalToken: ChannelHandlerContext.RemovalToken) {
        let reads = self.heldReads
        self.heldReads = []
        for read in reads { context.fireChannelRead(read) }
        if self.heldReadComplete || !reads.isEmpty {
            self.heldReadComplete = false
            context.fireChannelReadComplete()
        }
        context.leavePipeline(removalToken: removalToken)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard self.state == .handshaking else {
            context.fireErrorCaught(error)
            return
        }
        self.fail(self.courierError(for: error), context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if self.state == .handshaking {
            let failure = self.trustFailure
                ?? ServerTrustFailure(.handshakeFailure, host: self.host, policy: self.policy, detail: "the server closed the connection during the handshake")
            self.fail(failure.courierError(), context: context)
        }
        context.fireChannelInactive()
    }

    // MARK: Failing

    private var endpoint: String { "\(self.host):\(self.port)" }

    /// The handler never joined a pipeline (the channel had closed, or a handler before it could
    /// not be made): its handshake fails with `error`, said as the handshake's failure, and its
    /// promise is completed rather than dropped. Returns the error the promise failed with.
    func abandon(_ error: any Error) -> CourierError {
        let failure: CourierError
        if let error = error as? ChannelError, error == .ioOnClosedChannel {
            failure = ServerTrustFailure(
                .handshakeFailure, host: self.host, policy: self.policy,
                detail: "the connection closed before the handshake began").courierError()
        } else {
            failure = self.courierError(for: error)
        }
        self.state = .finished
        self.promise.fail(failure)
        return failure
    }

    /// The error a failed handshake ends with: the policy's refusal when there was one, else the
    /// handshake's own failure.
    private func courierError(for error: any Error) -> CourierError {
        if let failure = self.trustFailure { return failure.courierError() }
        if let error = error as? CourierError { return error }
        return ServerTrustFailure(.handshakeFailure, host: self.host, policy: self.policy, detail: "\(error)").courierError()
    }

    private func startTimer(context: ChannelHandlerContext) {
        guard self.timer == nil, self.state == .handshaking else { return }
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(in: self.timeout) {
            guard self.state == .handshaking else { return }
            self.fail(
                CourierError(.timedOut, "\(self.endpoint): the TLS handshake did not finish within \(NIOEngine.seconds(self.timeout))"),
                context: context
            )
        }
    }

    private func fail(_ error: CourierError, context: ChannelHandlerContext) {
        self.timer?.cancel()
        self.state = .finished
        self.heldReads = []
        self.promise.fail(error)
        context.close(promise: nil)
    }
}
