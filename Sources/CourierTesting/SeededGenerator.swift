/// A seeded random number generator (SplitMix64: small, fast, and its output depends only on its
/// seed), for tests that must run again the same way: a fuzz, a soak or a simulation that fails
/// names its seed, and the same seed gives the same inputs. The test server's random-bytes routes
/// (`/bytes/{n}?seed=`, `/stream-bytes/{n}?seed=`) use it for their `seed` parameter.
///
/// ```swift
/// var random = SeededGenerator(seed: 42)
/// let cut = Int.random(in: 1...100, using: &random)
/// ```
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose output is fixed by `seed`.
    public init(seed: UInt64) { self.state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var value = self.state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
