/// A test peer stopped by awaiting its `shutdown()`: the servers and proxies of `CourierTesting`,
/// and the package's own test peers.
///
/// Package access only: a helper for this package's tests, not part of `CourierTesting`'s API.
package protocol ShutDownByAwaiting: Sendable {
    func shutdown() async throws
}

extension TestServer: ShutDownByAwaiting {}
extension TestProxy: ShutDownByAwaiting {}
extension FaultServer: ShutDownByAwaiting {}

/// Runs `body` with `peer`, then awaits the peer's shutdown whatever `body` did (a `defer` could
/// only start it in a task nobody waits for). A failure of `body` wins over one of the shutdown.
@discardableResult
package func withShutdown<Peer: ShutDownByAwaiting, T>(of peer: Peer, _ body: (Peer) async throws -> T) async throws -> T {
    let result: T
    do {
        result = try await body(peer)
    } catch {
        try? await peer.shutdown()
        throw error
    }
    try await peer.shutdown()
    return result
}
