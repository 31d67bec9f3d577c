import NIOCore

/// How one of the pool's connections was set up, for the task metrics of the first transaction
/// it carries (later ones are on a reused connection and have no setup of their own).
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
    /// The connected channel's addresses, read once when it connected: a channel's address
    /// getters take a lock and copy the address each time, and every transaction reports them.
    var localAddress: SocketAddress?
    var remoteAddress: SocketAddress?

    /// Copies the setup into `metrics`: its times when `firstTransaction`, its route, TLS
    /// version and cipher suite always, and the channel's addresses.
    func apply(to metrics: inout TransactionMetrics, firstTransaction: Bool, channel: any Channel) {
        metrics.isReusedConnection = !firstTransaction
        metrics.isProxyConnection = self.isProxyConnection
        metrics.tlsProtocolVersion = self.tlsVersion
        metrics.tlsCipherSuite = self.tlsCipherSuite
        metrics.localSocketAddress = self.localAddress ?? channel.localAddress
        metrics.remoteSocketAddress = self.remoteAddress ?? channel.remoteAddress
        guard firstTransaction else { return }
        metrics.domainLookupStart = self.domainLookupStart
        metrics.domainLookupEnd = self.domainLookupEnd
        metrics.connectStart = self.connectStart
        metrics.connectEnd = self.connectEnd
        metrics.secureConnectionStart = self.secureConnectionStart
        metrics.secureConnectionEnd = self.secureConnectionEnd
    }
}
