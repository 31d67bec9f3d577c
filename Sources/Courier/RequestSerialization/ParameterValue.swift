import Foundation

/// Parameters as a closed tree, checked once: what the query-string, JSON and property-list
/// writers render. Making one from `Any` is where unsupported values are caught, with their path.
indirect enum ParameterValue {
    /// A number, kept as AFNetworking renders it and as Foundation carries it.
    struct Number {
        /// The shortest text: `1`, `0.1`, `1e+16`, `nan`.
        var text: String
        /// Whether JSON can carry it (not NaN nor an infinity).
        var isFinite: Bool
        /// The value for Foundation's property-list writer.
        var foundation: NSNumber
    }

    case null
    case bool(Bool)
    case number(Number)
    case string(String)
    case date(Date)
    case data(Data)
    case array([ParameterValue])
    /// A set: its elements sorted as AFNetworking sorts them (by their text, with
    /// `sortsBefore(_:_:)`).
    case set([ParameterValue])
    /// A dictionary: its entries sorted by key as `-[NSString compare:]` orders them
    /// (`sortsBefore(_:_:)`).
    case dictionary([(key: String, value: ParameterValue)])

    /// Checks and converts `value` (found at `path`) into a tree.
    /// - Throws: ``CourierError/Code/parameterEncodingFailed`` naming the path of the first value
    ///   that is not a string, number, boolean, null, date, data, array, set or dictionary with
    ///   string keys, or of one nested deeper than ``HTTPRequestSerializer/maximumParameterDepth``.
    init(_ value: Any, path: ParameterPath = .root) throws(CourierError) {
        // Every walk of the tree recurses: a bounded depth here bounds them all.
        if path.depth > HTTPRequestSerializer.maximumParameterDepth {
            throw Self.tooDeep(at: path)
        }
        // An Optional inside `Any` (`["a": nil as Int?]`): nil is null, else its wrapped value.
        if let optional = value as? any OptionalProtocol {
            guard let wrapped = optional.wrappedValue else {
                self = .null
                return
            }
            try self.init(wrapped, path: path)
            return
        }
        if let number = value as? NSNumber, type(of: value) is NSNumber.Type {
            self = Self.foundationNumber(number)
            return
        }
        switch value {
        case is NSNull:
            self = .null
        case let bool as Bool where type(of: value) == Bool.self:
            // The exact-type check keeps a bridged `1` from being taken for `true`.
            self = .bool(bool)
        case let string as String:
            self = .string(string)
        case let string as Substring:
            self = .string(String(string))
        case let character as Character:
            self = .string(String(character))
        case let string as NSString:
            self = .string(string as String)
        case let integer as any BinaryInteger:
            let text = String(describing: integer)
            self = .number(Number(text: text, isFinite: true, foundation: Self.foundationInteger(integer)))
        case let double as Double:
            self = .number(Number(text: Self.shortestText(double.description), isFinite: double.isFinite, foundation: NSNumber(value: double)))
        case let cgFloat as CGFloat:
            let double = Double(cgFloat)
            self = .number(Number(text: Self.shortestText(double.description), isFinite: double.isFinite, foundation: NSNumber(value: double)))
        case let float as Float:
            self = .number(Number(text: Self.shortestText(float.description), isFinite: float.isFinite, foundation: NSNumber(value: float)))
        case let decimal as Decimal:
            self = .number(Number(text: decimal.description, isFinite: !decimal.isNaN, foundation: NSDecimalNumber(decimal: decimal)))
        case let date as Date:
            self = .date(date)
        case let data as Data:
            self = .data(data)
        case let url as URL:
            self = .string(url.absoluteString)
        case let uuid as UUID:
            self = .string(uuid.uuidString)
        case let dictionary as [String: Any]:
            self = .dictionary(try Self.entries(dictionary.map { ($0.key, $0.value) }, path: path))
        case let dictionary as [AnyHashable: Any]:
            var pairs: [(String, Any)] = []
            for (key, nested) in dictionary {
                guard let key = key.base as? String else {
                    throw CourierError(
                        .parameterEncodingFailed,
                        "the dictionary at '\(path)' has a key that is not a string: \(key.base) (\(type(of: key.base)))"
                    )
                }
                pairs.append((key, nested))
            }
            self = .dictionary(try Self.entries(pairs, path: path))
        case let array as [Any]:
            var elements: [ParameterValue] = []
            elements.reserveCapacity(array.count)
            for (index, element) in array.enumerated() {
                elements.append(try ParameterValue(element, path: path.appending(index: index)))
            }
            self = .array(elements)
        case let set as Set<AnyHashable>:
            var elements: [ParameterValue] = []
            for (index, element) in set.enumerated() {
                elements.append(try ParameterValue(element.base, path: path.appending(index: index)))
            }
            self = .set(elements.map { ($0.sortText, $0) }.sorted { Self.sortsBefore($0.0, $1.0) }.map(\.1))
        case let encodable as any Encodable:
            self = try Self.encoded(encodable, path: path)
        default:
            throw CourierError(
                .parameterEncodingFailed,
                "the value at '\(path)' is a \(type(of: value)), which cannot be encoded as a parameter"
            )
        }
    }

    /// The error for a value at `path`, deeper than ``HTTPRequestSerializer/maximumParameterDepth``:
    /// its path's start (the whole of it is as long as it is deep).
    static func tooDeep(at path: ParameterPath) -> CourierError {
        let limit = HTTPRequestSerializer.maximumParameterDepth
        return CourierError(
            .parameterEncodingFailed,
            "the parameters nest deeper than \(limit) levels (at '\(path.description.prefix(80))…'), more than HTTPRequestSerializer.maximumParameterDepth allows"
        )
    }

    /// Any other `Encodable` value, as ``URLEncodedFormEncoder``'s encoder sees it with dates and
    /// data as a default `JSONEncoder` writes them (seconds since 2001, Base64).
    private static func encoded(_ value: any Encodable, path: ParameterPath) throws(CourierError) -> ParameterValue {
        let root = FormNode()
        let encoder = FormTreeEncoder(
            node: root, codingPath: [], dateEncoding: .deferredToDate, dataEncoding: .base64,
            depthLimit: HTTPRequestSerializer.maximumParameterDepth - path.depth)
        do {
            try encoder.encodeValue(value)
        } catch let error as EncodingError {
            throw CourierError(
                .parameterEncodingFailed,
                "the value at '\(path.appending(error.parameterPath))' could not be encoded: \(error.reason)",
                underlyingError: error
            )
        } catch {
            throw CourierError(.parameterEncodingFailed, "the value at '\(path)' could not be encoded", underlyingError: error)
        }
        guard root.kind != .unset else {
            throw CourierError(.parameterEncodingFailed, "the value at '\(path)' (a \(type(of: value))) encoded no value")
        }
        return ParameterValue(root.value)
    }

    /// An encoded value as parameters.
    private init(_ form: FormValue) {
        switch form {
        case .null: self = .null
        case .bool(let bool): self = .bool(bool)
        case .number(let text):
            // An integer above Int64.max (a UInt64 ID) stays an integer, not a rounded real.
            let foundation =
                Int64(text).map { NSNumber(value: $0) } ?? UInt64(text).map { NSNumber(value: $0) } ?? NSNumber(value: Double(text) ?? 0)
            self = .number(Number(text: text, isFinite: true, foundation: foundation))
        case .string(let string): self = .string(string)
        case .array(let elements): self = .array(elements.map(ParameterValue.init))
        case .object(let entries): self = .dictionary(entries.map { ($0.key, ParameterValue($0.value)) })
        }
    }

    private static func entries(_ pairs: [(String, Any)], path: ParameterPath) throws(CourierError) -> [(key: String, value: ParameterValue)] {
        var entries: [(key: String, value: ParameterValue)] = []
        entries.reserveCapacity(pairs.count)
        for (key, nested) in pairs {
            entries.append((key, try ParameterValue(nested, path: path.appending(key: key))))
        }
        return entries.sorted { Self.sortsBefore($0.key, $1.key) }
    }

    /// Whether `a` sorts before `b` as `-[NSString compare:]` orders them, which is how AFNetworking
    /// sorts keys and set elements.
    ///
    /// `compare:` without options is not literal: Foundation's `CFStringCompareWithOptionsAndLocale`
    /// walks both strings by UTF-16 unit and, where they first differ, orders by the two units only
    /// when both are ASCII; otherwise it compares code points and canonical decompositions, so `é`
    /// sorts before `f`, `U+FF01` before an emoji, and `é` is the same as `e` + U+0301. A string
    /// that is a prefix of the other sorts first. Only a first difference involving a non-ASCII unit
    /// is left to Foundation (the same code on Apple platforms and in swift-corelibs-foundation).
    static func sortsBefore(_ a: String, _ b: String) -> Bool {
        var left = a.utf16.makeIterator()
        var right = b.utf16.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return false
            case (nil, _?): return true
            case (_?, nil): return false
            case let (x?, y?) where x == y: continue
            case let (x?, y?) where x < 0x80 && y < 0x80: return x < y
            case (_?, _?): return (a as NSString).compare(b) == .orderedAscending
            }
        }
    }

    /// The text a set element is sorted by: its `description`, which AFNetworking sorts sets by. A
    /// dictionary, array or set is written as Foundation describes one, so that a set of them is
    /// sorted as there rather than left in its hash order.
    private var sortText: String {
        switch self {
        case .null: "<null>"
        case .bool(let bool): bool ? "1" : "0"
        case .number(let number): number.text
        case .string(let string): string
        case .date(let date): date.description
        case .data(let data): data.base64EncodedString()
        case .array, .set, .dictionary: self.collectionDescription(level: 0)
        }
    }

    /// The value as Foundation's `descriptionWithLocale:indent:` writes it inside a collection at
    /// `level`: four spaces per level, `{\n    key = value;\n}`, `(\n    element\n)`,
    /// `{(\n    element\n)}`, keys in their sorted order, other values as their text, quoted
    /// unless it is ASCII letters and digits.
    private func collectionDescription(level: Int) -> String {
        let indent = String(repeating: " ", count: 4 * level)
        let inner = indent + "    "
        func lines(_ elements: [ParameterValue]) -> String {
            elements.isEmpty ? "" : elements.map { inner + $0.collectionDescription(level: level + 1) }.joined(separator: ",\n") + "\n"
        }
        switch self {
        case .dictionary(let entries):
            let body = entries.map { inner + Self.quotedIfNeeded($0.key) + " = " + $0.value.collectionDescription(level: level + 1) + ";\n" }
            return indent + "{\n" + body.joined() + indent + "}"
        case .array(let elements):
            return indent + "(\n" + lines(elements) + indent + ")"
        case .set(let elements):
            return indent + "{(\n" + lines(elements) + indent + ")}"
        case .null, .bool, .number, .string, .date, .data:
            return Self.quotedIfNeeded(self.sortText)
        }
    }

    /// `text` as a description inside a collection writes it: bare when it is ASCII letters and
    /// digits, else in quotes with `"`, `\` and newlines escaped and non-ASCII as `\Uxxxx`.
    private static func quotedIfNeeded(_ text: String) -> String {
        let isBare = !text.isEmpty && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            default: false
            }
        }
        if isBare { return text }
        var quoted = "\""
        for unit in text.utf16 {
            switch unit {
            case 0x22: quoted += "\\\""
            case 0x5C: quoted += "\\\\"
            case 0x0A: quoted += "\\n"
            case 0x20..<0x7F: quoted.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            default:
                let hex = String(unit, radix: 16)
                quoted += "\\U" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return quoted + "\""
    }

    /// An `NSNumber` as what it holds: a boolean, an integer or a floating-point number.
    ///
    /// On Linux `NSNumber(value: 1) as? Bool` succeeds, so a cast cannot tell `true` from `1`; the
    /// boolean singletons are instances of their own class on every platform, which can.
    private static func foundationNumber(_ number: NSNumber) -> ParameterValue {
        if String(describing: type(of: number)) == "__NSCFBoolean" {
            return .bool(number.boolValue)
        }
        if let decimal = number as? NSDecimalNumber {
            return .number(Number(text: decimal.description, isFinite: decimal != NSDecimalNumber.notANumber, foundation: decimal))
        }
        switch String(cString: number.objCType) {
        case "f":
            let float = number.floatValue
            return .number(Number(text: Self.shortestText(float.description), isFinite: float.isFinite, foundation: number))
        case "d":
            let double = number.doubleValue
            return .number(Number(text: Self.shortestText(double.description), isFinite: double.isFinite, foundation: number))
        case "Q", "L", "I", "S", "C":
            return .number(Number(text: String(number.uint64Value), isFinite: true, foundation: number))
        default:
            return .number(Number(text: String(number.int64Value), isFinite: true, foundation: number))
        }
    }

    private static func foundationInteger(_ integer: any BinaryInteger) -> NSNumber {
        if let signed = Int64(exactly: integer) { return NSNumber(value: signed) }
        return NSNumber(value: UInt64(truncatingIfNeeded: integer))
    }

    /// Swift's shortest round-trip text without a trailing `.0` (`100.0` → `100`), and with
    /// `nan`/`inf` as `NSNumber` writes them.
    static func shortestText(_ text: String) -> String {
        if text.hasSuffix(".0") { return String(text.dropLast(2)) }
        return text
    }
}

/// Lets `ParameterValue` see through an `Optional` hidden in `Any`.
private protocol OptionalProtocol {
    var wrappedValue: Any? { get }
}

extension Optional: OptionalProtocol {
    fileprivate var wrappedValue: Any? {
        switch self {
        case .some(let value): value
        case .none: nil
        }
    }
}
