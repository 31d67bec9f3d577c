import NIOCore

/// How one of the pool's connections was set up, for the task metrics of the transaction it was
/// opened for (``apply(to:carriesSetup:channel:)``); every other transaction it carries is on a
/// reused connection, with no setup of its own.
struct ConnectionEstablishment: Sendable {
    var domainLookupStart: ContinuousClock.Instant?
    var domainLookupEnd: ContinuousClock.Instant?
    var connectStart: ContinuousClock.Instant
    /// TCP, a proxy's tunnel and TLS done.
    var connectEnd: ContinuousClock.Instant?
    var secureConnectionStart: ContinuousClock.Instant?
    var secureConnectionEnd: ContinuousClock.Instant?
    var tlsVersion: SecurityPolicy.TLSVersion?
    var tlsCipherSuite: TLSCipherSuite?
    var isProxyConnection: Bool
    /// Whether the TCP connect began: not when the name's lookup found no address, or never
    /// ended (a setup that failed).
    var connectBegan = true
    /// The connected channel's addresses, read once when it connected: a channel's address
    /// getters take a lock and copy the address each time, and every transaction reports them.
    var localAddress: SocketAddress?
    var remoteAddress: SocketAddress?

    /// When the setup began: the name's lookup, else the connect.
    var start: ContinuousClock.Instant { self.domainLookupStart ?? self.connectStart }

    /// Copies the setup into `metrics`: its route, TLS version and cipher suite and the channel's
    /// addresses always; its times (lookup, connect, TLS) only to the transaction it was made
    /// for, which is then the one on a new connection (``TransactionMetrics/isReusedConnection``
    /// false). That is the transaction the pool handed the connection to as it opened
    /// (`carriesSetup`: ``ConnectionPoolStateMachine/Action/run(_:on:carriesSetup:)``; not one
    /// that took it after it idled, however soon), and that began before the setup did: a
    /// request that arrived while a connection opened for another (cancelled, or gone on a
    /// connection freed first) waited for part of it only, and was not what it was opened for.
    /// As URLSession leaves a reused connection's lookup and connect dates nil, and OkHttp tells
    /// of a connect only the call that made it, every other transaction gets no times.
    func apply(to metrics: inout TransactionMetrics, carriesSetup: Bool, channel: any Channel) {
        let setUpForIt = carriesSetup && self.start >= metrics.fetchStart
        metrics.isReusedConnection = !setUpForIt
        metrics.isProxyConnection = self.isProxyConnection
        metrics.tlsProtocolVersion = self.tlsVersion
        metrics.tlsCipherSuite = self.tlsCipherSuite
        metrics.localSocketAddress = self.localAddress ?? channel.localAddress
        metrics.remoteSocketAddress = self.remoteAddress ?? channel.remoteAddress
        guard setUpForIt else { return }
        self.copyTimes(to: &metrics)
    }

    /// Copies the times of a setup that failed into `metrics`, a transaction that was waiting for
    /// it, as far as the setup went (URLSession's metrics of a failed load keep them too): when
    /// the lookup began and ended, when the connect began (unless the lookup found no address),
    /// when the TLS handshake began, and the ends of what ended. Nothing for a transaction that
    /// began after the setup did (as ``apply(to:carriesSetup:channel:)``): the setup was not its.
    func applyFailure(to metrics: inout TransactionMetrics) {
        guard self.start >= metrics.fetchStart else { return }
        metrics.isReusedConnection = false
        self.copyTimes(to: &metrics)
    }

    /// The lookup's, the connect's (its start only if it began) and the TLS handshake's times.
    private func copyTimes(to metrics: inout TransactionMetrics) {
        metrics.domainLookupStart = self.domainLookupStart
        metrics.domainLookupEnd = self.domainLookupEnd
        if self.connectBegan { metrics.connectStart = self.connectStart }
        metrics.connectEnd = self.connectEnd
        metrics.secureConnectionStart = self.secureConnectionStart
        metrics.secureConnectionEnd = self.secureConnectionEnd
    }
}
