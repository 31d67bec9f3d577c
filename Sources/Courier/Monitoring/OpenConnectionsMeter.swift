import Metrics
import NIOCore

/// The engine's count of open connections, a swift-metrics `Meter` labelled
/// `courier_open_connections` with the dimension `protocol` (`http/1.1` or `h2`, the ALPN names
/// ``TransactionMetrics/networkProtocolName`` uses). The connection pool counts a connection once
/// it is established (TCP, the proxy's tunnel and TLS done, the protocol known) and uncounts it
/// when its channel closes, whatever closed it: the server, an error, the idle timeout, or the
/// engine's shutdown. A connection that fails before it is established is never counted.
struct OpenConnectionsMeter: Sendable {
    /// The meter's label.
    static let label = "courier_open_connections"

    private let http1: Meter
    private let http2: Meter

    /// Meters made with `factory`.
    init(factory: any MetricsFactory) {
        self.http1 = Meter(label: Self.label, dimensions: [("protocol", "http/1.1")], factory: factory)
        self.http2 = Meter(label: Self.label, dimensions: [("protocol", "h2")], factory: factory)
    }

    /// Counts `channel`, just established, as an open connection speaking `applicationProtocol`,
    /// until it closes.
    func track(_ channel: any Channel, speaking applicationProtocol: TLSConnector.ApplicationProtocol) {
        let meter: Meter
        switch applicationProtocol {
        case .http1_1: meter = self.http1
        case .http2: meter = self.http2
        }
        meter.increment()
        channel.closeFuture.whenComplete { _ in meter.decrement() }
    }
}
