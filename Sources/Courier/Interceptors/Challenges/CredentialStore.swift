import NIOConcurrencyHelpers

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

    /// An empty store.
    public init() {}

    /// Stores `credential` for `space`, replacing what was there.
    public func set(_ credential: HTTPCredential, for space: ProtectionSpace) {
        self.entries.withLockedValue { $0[space] = credential }
    }

    /// Removes the credential stored for exactly `space`.
    public func remove(for space: ProtectionSpace) {
        self.entries.withLockedValue { $0[space] = nil }
    }

    /// Removes every credential.
    public func removeAll() {
        self.entries.withLockedValue { $0.removeAll() }
    }

    /// The credential for a challenge's space: the most specific stored space that covers it.
    public func credential(for space: ProtectionSpace) -> HTTPCredential? {
        self.entries.withLockedValue { entries in
            entries.filter { $0.key.covers(space) }.max { $0.key.specificity < $1.key.specificity }?.value
        }
    }

    /// Whether the store holds nothing.
    public var isEmpty: Bool { self.entries.withLockedValue { $0.isEmpty } }
}
