import NIOConcurrencyHelpers
import Synchronization

/// Credentials per protection space, for answering `WWW-Authenticate` challenges
/// (URLSession's `URLCredentialStorage`, in memory). Thread safe.
///
/// ```swift
/// manager.credentials.set(HTTPCredential(user: "ann", password: "secret"),
///                         for: ProtectionSpace(url: URL(string: "https://api.example.com")!, realm: "staff")!)
/// ```
///
/// When a server challenges, the session takes the most specific credential whose space covers
/// the challenge's (same origin; same realm and method, or a space that leaves them open).
public final class CredentialStore: Sendable {
    private let entries = NIOLockedValueBox<[ProtectionSpace: HTTPCredential]>([:])
    /// Goes up with every change, so that a space answered from the store can tell, without a
    /// lookup, that the store changed since (``HTTPAuthenticationResponder``).
    private let changes = Atomic<UInt64>(0)

    /// An empty store.
    public init() {}

    /// Stores `credential` for `space`, replacing what was there. Spaces the session answered
    /// with the store's credentials take it from their next request.
    public func set(_ credential: HTTPCredential, for space: ProtectionSpace) {
        self.entries.withLockedValue { $0[space] = credential }
        self.changes.add(1, ordering: .releasing)
    }

    /// Removes the credential stored for exactly `space`. Spaces the session answered with it are
    /// no longer authenticated ahead of a challenge.
    public func remove(for space: ProtectionSpace) {
        self.entries.withLockedValue { $0[space] = nil }
        self.changes.add(1, ordering: .releasing)
    }

    /// Removes every credential (a logout): no request goes out with one the session took from
    /// this store any more.
    public func removeAll() {
        self.entries.withLockedValue { $0.removeAll() }
        self.changes.add(1, ordering: .releasing)
    }

    /// How many changes the store has seen.
    var generation: UInt64 { self.changes.load(ordering: .acquiring) }

    /// The credential for a challenge's space: the most specific stored space that covers it.
    public func credential(for space: ProtectionSpace) -> HTTPCredential? {
        self.entries.withLockedValue { entries in
            entries.filter { $0.key.covers(space) }.max { $0.key.specificity < $1.key.specificity }?.value
        }
    }

    /// Whether the store holds nothing.
    public var isEmpty: Bool { self.entries.withLockedValue { $0.isEmpty } }
}
