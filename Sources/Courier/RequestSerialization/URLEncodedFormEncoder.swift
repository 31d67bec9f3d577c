import Foundation

/// Encodes an `Encodable` value as an `application/x-www-form-urlencoded` string, with Alamofire's
/// options for arrays, booleans, dates, data, keys, nils and spaces.
///
/// ```swift
/// struct Search: Encodable { var q: String; var tags: [String]; var exact: Bool }
/// var encoder = URLEncodedFormEncoder()
/// encoder.arrayEncoding = .noBrackets
/// encoder.boolEncoding = .literal
/// encoder.spaceEncoding = .plusReplaced
/// try encoder.encode(Search(q: "swift nio", tags: ["a", "b"], exact: true))
/// // exact=true&q=swift+nio&tags=a&tags=b
/// ```
///
/// Nested values become `key[sub]` (``keyPathEncoding``); keys are written in sorted order at every depth
/// (``alphabetizeKeyValuePairs``); keys and values are escaped as
/// ``HTTPRequestSerializer/percentEscaped(_:)`` does (``allowedCharacters``). The value must encode
/// as a keyed container (a struct, class or dictionary with string keys): a top-level array or
/// scalar has no keys and fails with ``CourierError/Code/parameterEncodingFailed``.
///
/// The encoder is Courier's own (not a `JSONEncoder`): numbers are written in their shortest form
/// (`1.0` is written `1`, as AFNetworking's query strings do), NaN or an infinity fails with its
/// path, and a `Decimal` or `URL` is written as its text. A value may ask for a container again
/// under a key it already wrote, as hand-written `encode(to:)` methods do: containers of the same
/// kind merge (keys are added, elements appended), a write of another kind replaces what was
/// there, and `superEncoder()` writes into the same container (a form has no `super` key).
public struct URLEncodedFormEncoder: Sendable {
    /// How array elements are keyed.
    ///
    /// Two values are equal when they are the same built-in style, or copies of one
    /// ``custom(_:)`` value (closures cannot be compared).
    public struct ArrayEncoding: Hashable, Sendable {
        enum Base: Hashable, Sendable {
            case brackets, noBrackets, indexInBrackets
            case custom(CustomKey)
        }

        /// A custom style's closure, equal only to itself.
        final class CustomKey: Hashable, Sendable {
            let key: @Sendable (_ key: String, _ index: Int) -> String
            init(_ key: @escaping @Sendable (_ key: String, _ index: Int) -> String) { self.key = key }
            static func == (lhs: CustomKey, rhs: CustomKey) -> Bool { lhs === rhs }
            func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
        }

        let base: Base
        /// `key[]=a&key[]=b` (the default; AFNetworking's form).
        public static let brackets = ArrayEncoding(base: .brackets)
        /// `key=a&key=b`.
        public static let noBrackets = ArrayEncoding(base: .noBrackets)
        /// `key[0]=a&key[1]=b`.
        public static let indexInBrackets = ArrayEncoding(base: .indexInBrackets)
        /// A key of your making for each element, from the array's key and the element's index
        /// (from 0): `.custom { key, index in "\(key).\(index + 1)" }` writes `key.1=a&key.2=b`.
        /// The key it returns is escaped as every key is.
        public static func custom(_ key: @escaping @Sendable (_ key: String, _ index: Int) -> String) -> ArrayEncoding {
            ArrayEncoding(base: .custom(CustomKey(key)))
        }

        /// The key of the element at `index` of the array under `key`.
        func elementKey(_ key: String, index: Int) -> String {
            switch self.base {
            case .brackets: key + "[]"
            case .noBrackets: key
            case .indexInBrackets: key + "[" + String(index) + "]"
            case .custom(let custom): custom.key(key, index)
            }
        }
    }

    /// How booleans are written.
    public struct BoolEncoding: Hashable, Sendable {
        let trueText: String
        let falseText: String
        /// `1` and `0` (the default; AFNetworking's form).
        public static let numeric = BoolEncoding(trueText: "1", falseText: "0")
        /// `true` and `false`.
        public static let literal = BoolEncoding(trueText: "true", falseText: "false")
    }

    /// How dates are written.
    public struct DateEncoding: Sendable {
        enum Base: Sendable {
            case deferredToDate, secondsSince1970, millisecondsSince1970, iso8601
            case formatted(DateFormatter)
            case custom(@Sendable (Date) throws -> String)
        }
        let base: Base
        /// As `Date` encodes itself: seconds since 1 January 2001 (the default).
        public static let deferredToDate = DateEncoding(base: .deferredToDate)
        /// Seconds since 1 January 1970.
        public static let secondsSince1970 = DateEncoding(base: .secondsSince1970)
        /// Milliseconds since 1 January 1970.
        public static let millisecondsSince1970 = DateEncoding(base: .millisecondsSince1970)
        /// ISO 8601 (`2024-01-02T03:04:05Z`).
        public static let iso8601 = DateEncoding(base: .iso8601)
        /// The string `formatter` makes (`DateFormatter` is safe to share between threads; do not
        /// change it while an encoding runs).
        public static func formatted(_ formatter: DateFormatter) -> DateEncoding {
            DateEncoding(base: .formatted(formatter))
        }
        /// A string of your making; an error it throws fails the encoding (it is the
        /// ``CourierError/underlyingError``).
        public static func custom(_ format: @escaping @Sendable (Date) throws -> String) -> DateEncoding {
            DateEncoding(base: .custom(format))
        }
    }

    /// How `Data` is written.
    public struct DataEncoding: Sendable {
        enum Base: Sendable {
            case base64, deferredToData
            case custom(@Sendable (Data) throws -> String)
        }
        let base: Base
        /// Base64 (the default).
        public static let base64 = DataEncoding(base: .base64)
        /// As `Data` encodes itself: an array of bytes.
        public static let deferredToData = DataEncoding(base: .deferredToData)
        /// A string of your making; an error it throws fails the encoding (it is the
        /// ``CourierError/underlyingError``).
        public static func custom(_ format: @escaping @Sendable (Data) throws -> String) -> DataEncoding {
            DataEncoding(base: .custom(format))
        }
    }

    /// How coding keys become form keys.
    public struct KeyEncoding: Sendable {
        fileprivate let convert: (@Sendable (String) -> String)?
        /// The keys as they are (the default).
        public static let useDefaultKeys = KeyEncoding(convert: nil)
        /// `userName` → `user_name`.
        public static let convertToSnakeCase = KeyEncoding(convert: { KeyEncoding.split($0, separator: "_") })
        /// `userName` → `user-name`.
        public static let convertToKebabCase = KeyEncoding(convert: { KeyEncoding.split($0, separator: "-") })
        /// `userName` → `UserName`: the first letter upper-cased, the rest as it is.
        public static let capitalized = KeyEncoding(convert: { $0.prefix(1).uppercased() + $0.dropFirst() })
        /// `userName` → `USERNAME`.
        public static let uppercased = KeyEncoding(convert: { $0.uppercased() })
        /// `userName` → `username`.
        public static let lowercased = KeyEncoding(convert: { $0.lowercased() })
        /// A conversion of your making.
        public static func custom(_ convert: @escaping @Sendable (String) -> String) -> KeyEncoding {
            KeyEncoding(convert: convert)
        }

        /// Lower-cases a camel-case key and puts `separator` between its words (`URLValue` →
        /// `url_value`); leading and trailing underscores are kept.
        static func split(_ key: String, separator: Character) -> String {
            guard !key.isEmpty else { return key }
            var words: [String] = []
            var current = ""
            let characters = Array(key)
            for (index, character) in characters.enumerated() {
                let next = index + 1 < characters.count ? characters[index + 1] : nil
                let previous = index > 0 ? characters[index - 1] : nil
                if character.isUppercase, !current.isEmpty,
                    previous?.isLowercase == true || previous?.isNumber == true || (previous?.isUppercase == true && next?.isLowercase == true)
                {
                    words.append(current)
                    current = ""
                }
                current.append(character)
            }
            words.append(current)
            return words.map { $0.lowercased() }.joined(separator: String(separator))
        }
    }

    /// How a nested key joins its parent's: `parent[child]` by default.
    public struct KeyPathEncoding: Sendable {
        /// nil: brackets, without a closure call.
        fileprivate let encode: (@Sendable (String) -> String)?
        /// `parent[child][grandchild]` (the default; AFNetworking's form).
        public static let brackets = KeyPathEncoding(encode: nil)
        /// `parent.child.grandchild`.
        public static let dots = KeyPathEncoding(encode: { "." + $0 })

        private init(encode: (@Sendable (String) -> String)?) {
            self.encode = encode
        }

        /// A joint of your making: `encoding` gets each nested key (after ``KeyEncoding``) and
        /// returns what follows the parent's key (`{ "-\($0)" }` writes `parent-child`).
        public init(encoding: @escaping @Sendable (_ subkey: String) -> String) {
            self.encode = encoding
        }

        func path(_ parent: String, _ subkey: String) -> String {
            guard let encode else { return parent + "[" + subkey + "]" }
            return parent + encode(subkey)
        }
    }

    /// How an explicit `nil` (`encodeNil`) is written. (A `nil` optional property that the
    /// synthesized `Encodable` skips writes nothing, whatever this says.)
    public struct NilEncoding: Hashable, Sendable {
        fileprivate enum Base: Hashable, Sendable { case dropKey, dropValue, null }
        fileprivate let base: Base
        /// Nothing is written (the default).
        public static let dropKey = NilEncoding(base: .dropKey)
        /// The key alone: `key` (AFNetworking's form for `NSNull`).
        public static let dropValue = NilEncoding(base: .dropValue)
        /// `key=null`.
        public static let null = NilEncoding(base: .null)
    }

    /// How spaces are written.
    public struct SpaceEncoding: Hashable, Sendable {
        fileprivate let plus: Bool
        /// `%20` (the default; RFC 3986).
        public static let percentEscaped = SpaceEncoding(plus: false)
        /// `+` (HTML forms).
        public static let plusReplaced = SpaceEncoding(plus: true)
    }

    /// How array elements are keyed; `.brackets` by default.
    public var arrayEncoding: ArrayEncoding = .brackets
    /// How booleans are written; `.numeric` by default.
    public var boolEncoding: BoolEncoding = .numeric
    /// How dates are written; `.deferredToDate` by default.
    public var dateEncoding: DateEncoding = .deferredToDate
    /// How data is written; `.base64` by default.
    public var dataEncoding: DataEncoding = .base64
    /// How keys are converted; `.useDefaultKeys` by default.
    public var keyEncoding: KeyEncoding = .useDefaultKeys
    /// How nested keys are joined; `.brackets` by default.
    public var keyPathEncoding: KeyPathEncoding = .brackets
    /// How an explicit nil is written; `.dropKey` by default.
    public var nilEncoding: NilEncoding = .dropKey
    /// How spaces are written; `.percentEscaped` by default.
    public var spaceEncoding: SpaceEncoding = .percentEscaped
    /// Whether an object's keys are written in sorted order (the default, at every depth, sorted
    /// as ``keyEncoding`` writes them), or in the order the value encoded them (`false`: a synthesized `Encodable` writes its properties
    /// in declaration order; a `Dictionary` has no order of its own).
    public var alphabetizeKeyValuePairs = true
    /// The characters of keys and values written as they are; every other byte of their UTF-8
    /// form is written `%XX` (a space as ``spaceEncoding`` says). `nil`, the default, is
    /// AFNetworking's set, ``queryAllowedCharacters``.
    ///
    /// ```swift
    /// var allowed = URLEncodedFormEncoder.queryAllowedCharacters
    /// allowed.remove(charactersIn: "?/")
    /// encoder.allowedCharacters = allowed   // ["path": "a/b?"] → path=a%2Fb%3F
    /// ```
    public var allowedCharacters: CharacterSet?

    /// The characters written as they are by default: the unreserved characters of RFC 3986
    /// (`A–Z a–z 0–9 - . _ ~`) and `?` and `/` (as ``HTTPRequestSerializer/percentEscaped(_:)``).
    public static let queryAllowedCharacters = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~?/")

    /// An encoder with the defaults above.
    public init() {}

    /// The form string for `value`.
    /// - Throws: ``CourierError/Code/parameterEncodingFailed`` naming the coding path of a value
    ///   that cannot be encoded, or when `value` is not a keyed container.
    public func encode(_ value: some Encodable) throws(CourierError) -> String {
        let tree = try self.tree(for: value)
        guard case .object(let entries) = tree else {
            throw CourierError(
                .parameterEncodingFailed,
                "form parameters must encode as a keyed container (a struct or a dictionary with string keys), not \(tree.kind)"
            )
        }
        var pairs: [String] = []
        for entry in entries {
            self.appendPairs(for: entry.value, key: entry.key, to: &pairs)
        }
        return pairs.joined(separator: "&")
    }

    private func tree(for value: some Encodable) throws(CourierError) -> FormValue {
        let root = FormNode()
        let encoder = FormTreeEncoder(node: root, codingPath: [], dateEncoding: self.dateEncoding, dataEncoding: self.dataEncoding)
        do {
            try encoder.encodeValue(value)
        } catch let error as EncodingError {
            throw CourierError(
                .parameterEncodingFailed,
                "the value at '\(error.parameterPath)' could not be form-encoded: \(error.reason)",
                underlyingError: error
            )
        } catch {
            throw CourierError(.parameterEncodingFailed, "the parameters could not be form-encoded", underlyingError: error)
        }
        guard root.kind != .unset else {
            throw CourierError(.parameterEncodingFailed, "the parameters (a \(type(of: value))) encoded no value")
        }
        // The keys converted in the tree, before they are sorted: the order is the written keys'.
        return root.value(sortingKeys: self.alphabetizeKeyValuePairs, convertingKeys: self.keyEncoding.convert)
    }

    private func appendPairs(for value: FormValue, key: String, to pairs: inout [String]) {
        let escape = { (text: String) in
            if let allowed = self.allowedCharacters {
                PercentEscaping.escape(text, allowing: allowed, spaceAsPlus: self.spaceEncoding.plus)
            } else {
                PercentEscaping.escape(text, spaceAsPlus: self.spaceEncoding.plus)
            }
        }
        switch value {
        case .object(let entries):
            for entry in entries {
                self.appendPairs(for: entry.value, key: self.keyPathEncoding.path(key, entry.key), to: &pairs)
            }
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                self.appendPairs(for: element, key: self.arrayEncoding.elementKey(key, index: index), to: &pairs)
            }
        case .null:
            switch self.nilEncoding.base {
            case .dropKey: break
            case .dropValue: pairs.append(escape(key))
            case .null: pairs.append(escape(key) + "=null")
            }
        case .bool(let bool):
            pairs.append(escape(key) + "=" + (bool ? self.boolEncoding.trueText : self.boolEncoding.falseText))
        case .number(let text), .string(let text):
            pairs.append(escape(key) + "=" + escape(text))
        }
    }
}

extension FormValue {
    /// A word for error messages.
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
