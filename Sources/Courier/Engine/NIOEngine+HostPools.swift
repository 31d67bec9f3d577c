import NIOConcurrencyHelpers

extension NIOEngine {
    /// The clients of one policy whose evaluator must know the host (a pinned CA-issued leaf
    /// anchoring trust, with the domain name validated: see ``ServerTrustEvaluator``): one per
    /// host, made on first use. None is made once ``close()`` has been called.
    final class HostPools: Sendable {
        private struct State {
            var pools: [String: Pool] = [:]
            var closed = false
        }

        private let state = NIOLockedValueBox(State())
        private let make: @Sendable (String) -> Pool

        /// - Parameter make: Makes the pool for a host (lowercased).
        init(make: @escaping @Sendable (String) -> Pool) {
            self.make = make
        }

        /// The pool for `host`, made now if it is the first request there; nil once closed.
        func pool(forHost host: String) -> Pool? {
            let key = host.lowercased()
            return self.state.withLockedValue { state in
                guard !state.closed else { return nil }
                if let pool = state.pools[key] { return pool }
                let pool = self.make(key)
                state.pools[key] = pool
                return pool
            }
        }

        /// The hosts that have a pool so far.
        var hosts: [String] { self.state.withLockedValue { Array($0.pools.keys) } }

        /// Stops making pools and hands back every pool made, for its client to be shut down.
        func close() -> [Pool] {
            self.state.withLockedValue { state in
                state.closed = true
                return Array(state.pools.values)
            }
        }
    }
}
