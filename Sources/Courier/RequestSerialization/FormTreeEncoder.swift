import Foundation

/// One node of the tree ``URLEncodedFormEncoder`` builds while a value encodes itself: a keyed
/// container, an unkeyed one, a single value, or nothing yet.
///
/// Containers asked for again at the same node merge with what is there when they are of the same
/// kind (a second keyed container adds keys, a second unkeyed one appends); a write of another kind
/// replaces the node's content. Asking for a container writes nothing by itself, except on a node
/// that holds nothing yet, which takes the container's kind (so an empty struct is an empty form).
/// Used by one `encode` call on one thread only.
final class FormNode {
    enum Kind { case unset, keyed, unkeyed, leaf }

    private(set) var kind: Kind = .unset
    private var entries: [String: FormNode] = [:]
    /// The keys of `entries` in the order they were first written.
    private var order: [String] = []
    private var elements: [FormNode] = []
    private var leaf: FormValue = .null

    /// The number of elements when the node is unkeyed, else 0.
    var count: Int { self.kind == .unkeyed ? self.elements.count : 0 }

    /// Gives an empty node the kind of the container just asked for; any other node is unchanged.
    func claim(_ kind: Kind) {
        if self.kind == .unset { self.kind = kind }
    }

    /// Makes the node a single value, replacing whatever it held.
    func set(_ value: FormValue) {
        self.become(.leaf)
        self.leaf = value
    }

    /// The node under `key`, made if there is none; the node becomes keyed if it was not.
    func child(forKey key: String) -> FormNode {
        self.become(.keyed)
        if let existing = self.entries[key] { return existing }
        let child = FormNode()
        self.entries[key] = child
        self.order.append(key)
        return child
    }

    /// A new node under `key`, replacing any there (a value written twice under a key: the last wins).
    func replacingChild(forKey key: String) -> FormNode {
        self.become(.keyed)
        let child = FormNode()
        if self.entries.updateValue(child, forKey: key) == nil { self.order.append(key) }
        return child
    }

    /// A new last element; the node becomes unkeyed if it was not.
    func appendChild() -> FormNode {
        self.become(.unkeyed)
        let child = FormNode()
        self.elements.append(child)
        return child
    }

    /// The tree as a form value: keys sorted, elements in order; a node that never held anything
    /// is an empty object (it writes no pair).
    var value: FormValue { self.value(sortingKeys: true) }

    /// The tree as a form value, its keys converted by `convert` (as they are without one) at
    /// every depth, then sorted or left in the order they were first written.
    ///
    /// Sorted on the keys as they are written, as Alamofire sorts its pairs: a conversion can
    /// change their order (`.capitalized` makes `b` and `C` into `B` and `C`, which sorted as
    /// `C`, `B` on the keys before it). Two keys converted alike keep the order of the keys before.
    func value(sortingKeys: Bool, convertingKeys convert: ((String) -> String)? = nil) -> FormValue {
        switch self.kind {
        case .unset:
            return .object([])
        case .keyed:
            var keys = self.order.map { (original: $0, written: convert?($0) ?? $0) }
            if sortingKeys {
                keys.sort { left, right in
                    left.written == right.written
                        ? left.original.utf16.lexicographicallyPrecedes(right.original.utf16)
                        : left.written.utf16.lexicographicallyPrecedes(right.written.utf16)
                }
            }
            return .object(
                keys.map { (key: $0.written, value: self.entries[$0.original]!.value(sortingKeys: sortingKeys, convertingKeys: convert)) })
        case .unkeyed:
            return .array(self.elements.map { $0.value(sortingKeys: sortingKeys, convertingKeys: convert) })
        case .leaf:
            return self.leaf
        }
    }

    private func become(_ kind: Kind) {
        guard self.kind != kind else { return }
        self.kind = kind
        self.entries = [:]
        self.order = []
        self.elements = []
        self.leaf = .null
    }
}

/// The `Encoder` behind ``URLEncodedFormEncoder``: writes into a ``FormNode``.
///
/// As in Alamofire's form encoder, `superEncoder()` writes into the same container (a form has no
/// place for a `super` key) and `superEncoder(forKey:)` into the node under the key.
struct FormTreeEncoder: Encoder {
    let node: FormNode
    let codingPath: [any CodingKey]
    let dateEncoding: URLEncodedFormEncoder.DateEncoding
    let dataEncoding: URLEncodedFormEncoder.DataEncoding
    /// How many keys and indexes deep a value may be written, from this encoder's root: a value
    /// that encodes itself recursively stops there (``HTTPRequestSerializer/maximumParameterDepth``,
    /// less the depth of the parameter that holds it).
    var depthLimit = HTTPRequestSerializer.maximumParameterDepth

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        self.node.claim(.keyed)
        return KeyedEncodingContainer(FormKeyedContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        self.node.claim(.unkeyed)
        return FormUnkeyedContainer(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        FormSingleValueContainer(encoder: self)
    }

    /// The encoder of `node`, one step below this one.
    func nested(_ node: FormNode, key: any CodingKey) -> FormTreeEncoder {
        FormTreeEncoder(
            node: node, codingPath: self.codingPath + [key], dateEncoding: self.dateEncoding, dataEncoding: self.dataEncoding,
            depthLimit: self.depthLimit)
    }

    /// Writes `value` into this encoder's node: dates and data as the options say, decimals and
    /// URLs as text (as `JSONEncoder` does), anything else as it encodes itself.
    func encodeValue<T: Encodable>(_ value: T) throws {
        // The recursion of a value that encodes itself in itself goes through here.
        if self.codingPath.count > self.depthLimit {
            throw self.invalid(value, "it is nested deeper than the \(HTTPRequestSerializer.maximumParameterDepth) levels parameters may nest")
        }
        switch value {
        case let date as Date: try self.encodeDate(date)
        case let data as Data: try self.encodeData(data)
        case let decimal as Decimal:
            guard !decimal.isNaN else { throw self.invalid(decimal, "a NaN decimal cannot be written in a form") }
            self.node.set(.number(decimal.description))
        case let url as URL: self.node.set(.string(url.absoluteString))
        default: try value.encode(to: self)
        }
    }

    /// A finite number's shortest text (`1`, `0.5`); NaN and infinities fail with the path.
    func number<F: BinaryFloatingPoint & CustomStringConvertible>(_ value: F) throws -> FormValue {
        guard value.isFinite else { throw self.invalid(value, "\(value) cannot be written in a form") }
        return .number(ParameterValue.shortestText(value.description))
    }

    func invalid(_ value: Any, _ reason: String) -> EncodingError {
        EncodingError.invalidValue(value, EncodingError.Context(codingPath: self.codingPath, debugDescription: reason))
    }

    private func encodeDate(_ date: Date) throws {
        switch self.dateEncoding.base {
        case .deferredToDate: try date.encode(to: self)
        case .secondsSince1970: self.node.set(try self.number(date.timeIntervalSince1970))
        case .millisecondsSince1970: self.node.set(try self.number(1000 * date.timeIntervalSince1970))
        case .iso8601: self.node.set(.string(date.ISO8601Format()))
        case .formatted(let formatter): self.node.set(.string(formatter.string(from: date)))
        case .custom(let format): self.node.set(.string(try format(date)))
        }
    }

    private func encodeData(_ data: Data) throws {
        switch self.dataEncoding.base {
        case .base64: self.node.set(.string(data.base64EncodedString()))
        case .deferredToData: try data.encode(to: self)
        case .custom(let format): self.node.set(.string(try format(data)))
        }
    }
}

private struct FormKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: FormTreeEncoder
    var codingPath: [any CodingKey] { self.encoder.codingPath }

    mutating func encodeNil(forKey key: Key) throws {
        self.encoder.node.replacingChild(forKey: key.stringValue).set(.null)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let child = self.encoder.node.replacingChild(forKey: key.stringValue)
        try self.encoder.nested(child, key: key).encodeValue(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        self.encoder.nested(self.encoder.node.child(forKey: key.stringValue), key: key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        self.encoder.nested(self.encoder.node.child(forKey: key.stringValue), key: key).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        self.encoder
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        self.encoder.nested(self.encoder.node.child(forKey: key.stringValue), key: key)
    }
}

private struct FormUnkeyedContainer: UnkeyedEncodingContainer {
    let encoder: FormTreeEncoder
    var codingPath: [any CodingKey] { self.encoder.codingPath }
    var count: Int { self.encoder.node.count }

    mutating func encodeNil() throws {
        self.encoder.node.appendChild().set(.null)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try self.nextEncoder().encodeValue(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        self.nextEncoder().container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        self.nextEncoder().unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        self.encoder
    }

    /// The encoder of a new last element.
    private func nextEncoder() -> FormTreeEncoder {
        let index = self.count
        return self.encoder.nested(self.encoder.node.appendChild(), key: AnyCodingKey(intValue: index))
    }
}

private struct FormSingleValueContainer: SingleValueEncodingContainer {
    let encoder: FormTreeEncoder
    var codingPath: [any CodingKey] { self.encoder.codingPath }

    mutating func encodeNil() throws { self.encoder.node.set(.null) }
    mutating func encode(_ value: Bool) throws { self.encoder.node.set(.bool(value)) }
    mutating func encode(_ value: String) throws { self.encoder.node.set(.string(value)) }
    mutating func encode(_ value: Double) throws { self.encoder.node.set(try self.encoder.number(value)) }
    mutating func encode(_ value: Float) throws { self.encoder.node.set(try self.encoder.number(value)) }
    mutating func encode(_ value: Int) throws { self.integer(value) }
    mutating func encode(_ value: Int8) throws { self.integer(value) }
    mutating func encode(_ value: Int16) throws { self.integer(value) }
    mutating func encode(_ value: Int32) throws { self.integer(value) }
    mutating func encode(_ value: Int64) throws { self.integer(value) }
    mutating func encode(_ value: UInt) throws { self.integer(value) }
    mutating func encode(_ value: UInt8) throws { self.integer(value) }
    mutating func encode(_ value: UInt16) throws { self.integer(value) }
    mutating func encode(_ value: UInt32) throws { self.integer(value) }
    mutating func encode(_ value: UInt64) throws { self.integer(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try self.encoder.encodeValue(value) }

    private func integer(_ value: some BinaryInteger) {
        self.encoder.node.set(.number(String(value)))
    }
}
