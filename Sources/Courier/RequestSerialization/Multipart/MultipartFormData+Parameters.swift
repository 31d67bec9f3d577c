import Foundation

extension MultipartFormData {
    /// Appends each parameter as a plain form field, flattened as the query string flattens it
    /// in `style` (`user[name]`, `tags[]`, a set's key repeated, keys sorted) but with nothing
    /// escaped: AFNetworking's `AFQueryStringPairsFromDictionary` feeding `appendPartWithFormData:name:`.
    ///
    /// Strings are written in `encoding`; booleans as `style` writes them (`1` and `0` by
    /// default); numbers in their shortest form; `Data` as its bytes; a null as an empty value
    /// (AFNetworking writes `<null>`).
    /// - Throws: ``CourierError/Code/parameterEncodingFailed`` naming the path of a value with no
    ///   form-field form (a date, a closure…), of a string `encoding` cannot represent, or when the
    ///   parameters are not a dictionary.
    mutating func appendParts(
        fromParameters parameters: any Sendable, encoding: String.Encoding, style: HTTPRequestSerializer.QueryStringSerializationStyle = .default
    ) throws(CourierError) {
        let tree = try ParameterValue(parameters)
        for entry in try tree.flattenableEntries(for: "multipart form fields") {
            try entry.value.forEachFlattenedPair(key: entry.key, path: ParameterPath.root.appending(key: entry.key), arrays: style.arrayEncoding) {
                key, scalar, path throws(CourierError) in
                self.appendPart(withForm: try Self.formData(for: scalar, path: path, encoding: encoding, booleans: style.boolEncoding), name: key)
            }
        }
    }

    private static func formData(
        for scalar: ParameterValue, path: ParameterPath, encoding: String.Encoding, booleans: URLEncodedFormEncoder.BoolEncoding
    ) throws(CourierError) -> Data {
        let text: String
        switch scalar {
        case .data(let data): return data
        case .null: text = ""
        case .bool(let bool): text = bool ? booleans.trueText : booleans.falseText
        case .number(let number): text = number.text
        case .string(let string): text = string
        case .date, .array, .set, .dictionary:
            throw CourierError(
                .parameterEncodingFailed,
                "the \(scalar.kind) at '\(path)' has no form-field form; convert it to a string first"
            )
        }
        guard let data = text.data(using: encoding, allowLossyConversion: false) else {
            throw CourierError(.parameterEncodingFailed, "the parameter at '\(path)' cannot be represented in the string encoding \(encoding)")
        }
        return data
    }
}
