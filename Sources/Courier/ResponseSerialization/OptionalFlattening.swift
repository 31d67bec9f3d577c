/// Sees through an optional that was boxed as a value.
///
/// A serializer whose `Output` is itself optional (`(any Sendable)?`) returns a double optional from
/// ``ResponseSerializer/serialize(response:data:)``; through an existential (`any
/// ResponseSerializer`) the inner `nil` arrives boxed in a non-nil `any Sendable`. Callers that
/// hand the object on (the callback verbs, notifications, ``CompoundResponseSerializer``) unwrap it
/// here, so "no object" is `nil` and never a value wrapping `nil`.
enum OptionalFlattening {
    /// `value`, with any levels of boxed optionals removed; `nil` when the innermost one is `nil`.
    static func flattened(_ value: (any Sendable)?) -> (any Sendable)? {
        guard let value else { return nil }
        guard let optional = value as? any OptionalBox else { return value }
        // The wrapped value came out of a `Sendable` output, so handing it on keeps it `Sendable`.
        return optional.unboxed.flatMap { Self.flattened(transferringOwnership(of: $0)) }
    }
}

/// Lets ``OptionalFlattening`` see through an optional without knowing its wrapped type.
private protocol OptionalBox {
    var unboxed: Any? { get }
}

extension Optional: OptionalBox {
    fileprivate var unboxed: Any? { self.map { $0 } }
}
