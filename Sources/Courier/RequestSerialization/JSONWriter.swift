import Foundation

/// Writes a ``ParameterValue`` tree as JSON (RFC 8259), the way Foundation's `JSONSerialization`
/// writes it on Apple platforms, with keys always sorted so the bytes do not depend on hashing:
/// in the tree's order (as query-string keys are sorted), or, with `.sortedKeys`, in the order
/// `JSONSerialization` writes them then (``sortedKeysPrecedes(_:_:)``).
///
/// Our own writer rather than `JSONSerialization` because on Linux the latter cannot tell `true`
/// from `1` in an `NSNumber`, and so that NaN, infinities, dates and data fail with the path of the
/// value instead of an Objective-C exception or a message without a place.
struct JSONWriter {
    var prettyPrinted = false
    var escapeSlashes = true
    /// Whether keys are written in `JSONSerialization`'s `.sortedKeys` order rather than the tree's.
    var sortsKeysAsFoundation = false

    init(options: JSONSerialization.WritingOptions) {
        self.prettyPrinted = options.contains(.prettyPrinted)
        self.escapeSlashes = !options.contains(.withoutEscapingSlashes)
        self.sortsKeysAsFoundation = options.contains(.sortedKeys)
    }

    /// Whether key `a` comes before key `b` as `JSONSerialization` writes them with `.sortedKeys`.
    ///
    /// swift-corelibs-foundation sorts them with `compare(_:options:range:locale:)`, the options
    /// `[.numeric, .caseInsensitive, .forcedOrdering]` and the system locale (`NSLocale.system`,
    /// the root locale), and so does this: `a9` before `a10`, `b` and `B` next to each other
    /// before `C` (where `compare:` puts every capital first: `B`, `C`, `a10`, `a9`, `b`).
    static func sortedKeysPrecedes(_ a: String, _ b: String) -> Bool {
        a.compare(b, options: [.numeric, .caseInsensitive, .forcedOrdering], range: a.startIndex..<a.endIndex, locale: Self.systemLocale)
            == .orderedAscending
    }

    /// `NSLocale.system` as swift-corelibs-foundation makes it.
    private static let systemLocale = Locale(identifier: "")

    func write(_ value: ParameterValue) throws(CourierError) -> Data {
        var output = ""
        try self.write(value, path: .root, indent: 0, into: &output)
        return Data(output.utf8)
    }

    private func write(_ value: ParameterValue, path: ParameterPath, indent: Int, into output: inout String) throws(CourierError) {
        switch value {
        case .null:
            output += "null"
        case .bool(let bool):
            output += bool ? "true" : "false"
        case .number(let number):
            guard number.isFinite else {
                throw CourierError(.parameterEncodingFailed, "the number at '\(path)' is \(number.text), which JSON cannot carry")
            }
            output += number.text
        case .string(let string):
            self.writeString(string, into: &output)
        case .date, .data:
            throw CourierError(
                .parameterEncodingFailed,
                "the \(value.kind) at '\(path)' has no JSON form; convert it to a string, or use JSONParameterEncoder"
            )
        case .set:
            throw CourierError(.parameterEncodingFailed, "the set at '\(path)' has no JSON form; pass an array")
        case .array(let elements):
            guard !elements.isEmpty else {
                output += "[]"
                return
            }
            output += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { output += "," }
                self.newline(indent: indent + 1, into: &output)
                try self.write(element, path: path.appending(index: index), indent: indent + 1, into: &output)
            }
            self.newline(indent: indent, into: &output)
            output += "]"
        case .dictionary(let entries):
            guard !entries.isEmpty else {
                output += "{}"
                return
            }
            output += "{"
            let ordered = self.sortsKeysAsFoundation ? entries.sorted { Self.sortedKeysPrecedes($0.key, $1.key) } : entries
            for (index, entry) in ordered.enumerated() {
                if index > 0 { output += "," }
                self.newline(indent: indent + 1, into: &output)
                self.writeString(entry.key, into: &output)
                output += self.prettyPrinted ? " : " : ":"
                try self.write(entry.value, path: path.appending(key: entry.key), indent: indent + 1, into: &output)
            }
            self.newline(indent: indent, into: &output)
            output += "}"
        }
    }

    private func newline(indent: Int, into output: inout String) {
        guard self.prettyPrinted else { return }
        output += "\n" + String(repeating: "  ", count: indent)
    }

    private func writeString(_ string: String, into output: inout String) {
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "/": output += self.escapeSlashes ? "\\/" : "/"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}
