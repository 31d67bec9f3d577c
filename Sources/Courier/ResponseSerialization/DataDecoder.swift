import Foundation

/// Something that decodes a `Decodable` value from bytes: `JSONDecoder`, `PropertyListDecoder`, or
/// your own (used by ``DecodableResponseSerializer``).
public protocol DataDecoder: Sendable {
    /// Decodes a value of the given type from `data`.
    func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value
}

extension JSONDecoder: DataDecoder {}
extension PropertyListDecoder: DataDecoder {}
