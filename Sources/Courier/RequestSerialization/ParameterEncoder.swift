/// Encodes an `Encodable` value into a request (Alamofire's `ParameterEncoder`): in its body or its
/// query, as the encoder decides.
///
/// ``JSONParameterEncoder`` and ``URLEncodedFormParameterEncoder`` are the two Courier provides.
public protocol ParameterEncoder: Sendable {
    /// Returns `request` with `parameters` encoded into it. `nil` parameters return the request
    /// unchanged.
    /// - Throws: ``CourierError/Code/parameterEncodingFailed`` naming the coding path of the value
    ///   that could not be encoded.
    func encode<Parameters: Encodable & Sendable>(_ parameters: Parameters?, into request: Request) throws(CourierError) -> Request
}

extension EncodingError {
    /// The coding path of the failure, written as a parameter path: `items[2][price]`.
    var parameterPath: ParameterPath {
        let context: EncodingError.Context
        switch self {
        case .invalidValue(_, let valueContext): context = valueContext
        @unknown default: return .root
        }
        return context.codingPath.reduce(ParameterPath.root) { path, key in
            key.intValue.map { path.appending(index: $0) } ?? path.appending(key: key.stringValue)
        }
    }

    /// The debug description of the failure, when there is one.
    var reason: String {
        switch self {
        case .invalidValue(_, let context): context.debugDescription
        @unknown default: String(describing: self)
        }
    }
}
