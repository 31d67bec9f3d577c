import Foundation

extension HTTPRequestSerializer {
    /// How the serializer turns parameters into a query string (and a form body): AFNetworking's
    /// form, or that form with Alamofire's array and boolean styles (`URLEncoding(arrayEncoding:
    /// boolEncoding:)`).
    ///
    /// ```swift
    /// serializer.setQueryStringSerialization(with: .init(arrayEncoding: .noBrackets, boolEncoding: .literal))
    /// // ["tags": ["a", "b"], "on": true] → on=true&tags=a&tags=b
    /// ```
    public struct QueryStringSerializationStyle: Hashable, Sendable {
        /// How an array's elements are keyed: `key[]` (AFNetworking's), `key`, `key[0]`, or a key of your
        /// making (``URLEncodedFormEncoder/ArrayEncoding/custom(_:)``).
        public var arrayEncoding: URLEncodedFormEncoder.ArrayEncoding
        /// How booleans are written: `1`/`0` (AFNetworking's) or `true`/`false`. Numbers stay
        /// numbers either way.
        public var boolEncoding: URLEncodedFormEncoder.BoolEncoding

        /// A style with these array and boolean forms; AFNetworking's by default.
        public init(
            arrayEncoding: URLEncodedFormEncoder.ArrayEncoding = .brackets, boolEncoding: URLEncodedFormEncoder.BoolEncoding = .numeric
        ) {
            self.arrayEncoding = arrayEncoding
            self.boolEncoding = boolEncoding
        }

        /// AFNetworking's `AFHTTPRequestQueryStringDefaultStyle`: see
        /// ``HTTPRequestSerializer/queryString(from:)``.
        public static let `default` = QueryStringSerializationStyle()
    }

    /// A custom query-string builder (AFNetworking's `setQueryStringSerializationWithBlock:`): given
    /// the request and the parameters, returns the query string, already escaped (a `#` left in
    /// it is data, written `%23`, not the start of a fragment). The request is
    /// the one being serialized, with the serializer's request options but, as in AFNetworking, not
    /// yet its default headers. An error it throws reaches the caller, wrapped in a ``CourierError``
    /// with code ``CourierError/Code/parameterEncodingFailed`` unless it is a ``CourierError`` itself.
    public typealias QueryStringSerialization = @Sendable (_ request: Request, _ parameters: any Sendable) throws -> String

    /// The query string for `parameters`, byte for byte as AFNetworking's
    /// `AFQueryStringFromParameters` writes it.
    ///
    /// - A dictionary's entries are written in key order, at every depth, as `-[NSString compare:]`
    ///   orders keys (by character code where two ASCII characters first differ; `é` before `f`);
    ///   a nested dictionary's keys become `key[sub]`, to any depth.
    /// - An array's elements are written with the key `key[]`, in order.
    /// - A set's elements are written with the same key, repeated, sorted as keys are by their
    ///   `description` (a dictionary's or array's as Foundation writes it: `{\n    id = 1;\n}`).
    /// - `NSNull` (or a `nil` optional) writes the bare key, with no `=`.
    /// - Booleans are `1` and `0`; numbers are written in their shortest form (`1`, `0.5`, `1e+16`).
    /// - Keys (brackets included) and values are escaped by ``percentEscaped(_:)``.
    /// - An empty array, set or dictionary writes nothing, as in AFNetworking.
    /// - Any other `Encodable` value (a struct of yours) is written as ``URLEncodedFormEncoder``
    ///   sees it with its default date and data options (as a default `JSONEncoder` writes them):
    ///   its properties become `key[property]`; a `nil` optional property is left out.
    ///
    /// ```swift
    /// try HTTPRequestSerializer.queryString(from: ["user": ["name": "Ann", "tags": ["a", "b"]], "q": "a b"])
    /// // q=a%20b&user%5Bname%5D=Ann&user%5Btags%5D%5B%5D=a&user%5Btags%5D%5B%5D=b
    /// ```
    ///
    /// - Parameter parameters: A dictionary with string keys, whose values are strings, numbers,
    ///   booleans, nulls, arrays, sets or dictionaries.
    /// - Throws: ``CourierError/Code/parameterEncodingFailed`` naming the path of a value that
    ///   cannot be written (a closure, an arbitrary object, data, a date, a non-string key), or when
    ///   `parameters` is not a dictionary: a top-level array or scalar has no key to write it under
    ///   (AFNetworking writes `(null)[]=…`).
    public static func queryString(from parameters: any Sendable) throws(CourierError) -> String {
        try Self.queryString(from: parameters, style: .default)
    }

    /// The query string for `parameters` in `style`: as ``queryString(from:)``, with the style's
    /// array keys and booleans.
    public static func queryString(from parameters: any Sendable, style: QueryStringSerializationStyle) throws(CourierError) -> String {
        let tree = try ParameterValue(parameters)
        return try Self.queryString(from: tree, style: style)
    }

    /// `string` percent-escaped for a query per RFC 3986 §3.4, as AFNetworking's
    /// `AFPercentEscapedStringFromString`: every byte of its UTF-8 form except the unreserved
    /// characters (`A–Z a–z 0–9 - . _ ~`) and `?` and `/` is written `%XX`, so `+` becomes `%2B`, a
    /// space `%20`, `%` itself `%25` (already-escaped input is escaped again), and an emoji, a flag
    /// or a letter with combining marks is escaped whole, however long the string.
    public static func percentEscaped(_ string: String) -> String {
        PercentEscaping.escape(string)
    }

    static func queryString(from tree: ParameterValue, style: QueryStringSerializationStyle = .default) throws(CourierError) -> String {
        var pairs: [String] = []
        for entry in try tree.flattenableEntries(for: "a query string") {
            try entry.value.forEachFlattenedPair(
                key: entry.key, path: ParameterPath.root.appending(key: entry.key), arrays: style.arrayEncoding
            ) {
                key, scalar, path throws(CourierError) in
                try Self.appendPair(key: key, scalar: scalar, path: path, booleans: style.boolEncoding, to: &pairs)
            }
        }
        return pairs.joined(separator: "&")
    }

    private static func appendPair(
        key: String, scalar: ParameterValue, path: ParameterPath, booleans: URLEncodedFormEncoder.BoolEncoding, to pairs: inout [String]
    ) throws(CourierError) {
        switch scalar {
        case .null:
            pairs.append(PercentEscaping.escape(key))
        case .bool(let bool):
            pairs.append(PercentEscaping.escape(key) + "=" + (bool ? booleans.trueText : booleans.falseText))
        case .number(let number):
            pairs.append(PercentEscaping.escape(key) + "=" + PercentEscaping.escape(number.text))
        case .string(let string):
            pairs.append(PercentEscaping.escape(key) + "=" + PercentEscaping.escape(string))
        case .date, .data, .array, .set, .dictionary:
            throw CourierError(
                .parameterEncodingFailed,
                "the \(scalar.kind) at '\(path)' has no query-string form; convert it to a string first"
            )
        }
    }
}

extension ParameterValue {
    /// A word for error messages.
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .date: "date"
        case .data: "data value"
        case .array: "array"
        case .set: "set"
        case .dictionary: "dictionary"
        }
    }
}
