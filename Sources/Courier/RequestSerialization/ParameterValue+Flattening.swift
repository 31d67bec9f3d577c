extension ParameterValue {
    /// Calls `visit` for each scalar under `key`, with the key AFNetworking flattens it to: a
    /// nested dictionary's keys become `key[sub]`, an array's elements `key[]` (or as `arrays`
    /// says: `key`, `key[0]`, a custom key), a set's elements repeat `key`; entries keep their sorted order.
    /// Empty containers visit nothing.
    ///
    /// The query string escapes what this yields; a multipart form writes it as it is.
    func forEachFlattenedPair(
        key: String,
        path: ParameterPath,
        arrays: URLEncodedFormEncoder.ArrayEncoding = .brackets,
        _ visit: (_ key: String, _ scalar: ParameterValue, _ path: ParameterPath) throws(CourierError) -> Void
    ) throws(CourierError) {
        switch self {
        case .dictionary(let entries):
            for entry in entries {
                try entry.value.forEachFlattenedPair(
                    key: key + "[" + entry.key + "]", path: path.appending(key: entry.key), arrays: arrays, visit)
            }
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                try element.forEachFlattenedPair(key: arrays.elementKey(key, index: index), path: path.appending(index: index), arrays: arrays, visit)
            }
        case .set(let elements):
            for (index, element) in elements.enumerated() {
                try element.forEachFlattenedPair(key: key, path: path.appending(index: index), arrays: arrays, visit)
            }
        case .null, .bool, .number, .string, .date, .data:
            try visit(key, self, path)
        }
    }

    /// The top-level entries of parameters that must be a dictionary to be flattened.
    /// - Parameter destination: What the parameters are written as, for the error message.
    func flattenableEntries(for destination: String) throws(CourierError) -> [(key: String, value: ParameterValue)] {
        guard case .dictionary(let entries) = self else {
            throw CourierError(
                .parameterEncodingFailed,
                "parameters must be a dictionary to be written as \(destination); a top-level \(self.kind) has no key"
            )
        }
        return entries
    }
}
