import Foundation

/// The JSON body built from data fields whose names are paths, as HTTPie 3 builds it
/// (https://httpie.io/docs/cli/nested-json): `a[b][c]=1` is `{"a": {"b": {"c": "1"}}}`, `a[]=x`
/// appends to an array, `a[2]=x` sets an index (a gap before it is filled with `null`), and a name
/// that starts with `[` (`[]:=1`, `[0][name]=x`) makes the body an array. In a name, `\[`, `\]`
/// and `\\` are literal characters, and `[\1]` is the key `"1"`, not an index.
///
/// Values are JSON text, kept as written; a raw JSON object or array (`a:={"b": 1}`) can be added
/// to by a later path (`a[c]=2`). A container keeps the type it was first given: a path that uses
/// an array as an object, or a string as either, is a usage error; a last step replaces whatever
/// was there (`a[b]:=1 a[b]=x` sends `"x"`).
struct NestedJSON {
    /// One step of a path.
    enum Step: Equatable {
        case key(String)
        case index(Int)
        case append
    }

    /// The largest index a path may name (the gap before it is filled with nulls).
    static let maximumIndex = 10_000

    private var root: Node?

    /// The body: the object or array the paths built, `{}` when nothing was set.
    var text: String { self.root?.json ?? "{}" }

    /// Puts `value`, JSON text, where the path `name` says.
    /// - Throws: ``CLIFailure`` (usage) for a malformed path, or one that goes into a value of
    ///   another type than it needs.
    mutating func set(_ value: String, at name: String) throws(CLIFailure) {
        let steps = try Self.steps(of: name)
        try Self.set(value, at: steps[...], in: &self.root, path: "", name: name)
    }

    /// The steps of a field's name: a key (the name up to its first bracket, which may be empty
    /// only when a bracket follows), then `[key]`, `[index]` or `[]` steps.
    static func steps(of name: String) throws(CLIFailure) -> [Step] {
        let tokens = Self.tokens(of: name)
        func malformed(_ expected: String) -> CLIFailure {
            CLIFailure.usage("'\(name)': expected \(expected) in a nested JSON name (a[b], a[0], a[]; \\[ is a literal bracket)")
        }
        var steps: [Step] = []
        var position = 0
        if case .text(let text, let escaped)? = tokens.first {
            steps.append(.key(escaped ? text : Self.keyOfEscapedNumber(text) ?? text))
            position = 1
        }
        while position < tokens.count {
            guard tokens[position] == .open else { throw malformed("'['") }
            position += 1
            guard position < tokens.count else { throw malformed("a key, a number or ']'") }
            if tokens[position] == .close {
                steps.append(.append)
                position += 1
                continue
            }
            guard case .text(let text, let escaped) = tokens[position] else { throw malformed("a key, a number or ']'") }
            steps.append(try Self.step(between: text, escaped: escaped, name: name))
            position += 1
            guard position < tokens.count, tokens[position] == .close else { throw malformed("']'") }
            position += 1
        }
        guard let first = steps.first else { return [.key("")] }
        if tokens.first == .open, case .key = first {
            throw CLIFailure.usage("'\(name)': a name that starts with '[' makes the body an array: [0] or [], not [key]")
        }
        return steps
    }

    // MARK: - Names

    /// A part of a name: a bracket, or the text between brackets, with whether an escape made a
    /// character of it literal (then it is never a number).
    private enum Token: Equatable {
        case open
        case close
        case text(String, escaped: Bool)
    }

    private static func tokens(of name: String) -> [Token] {
        var tokens: [Token] = []
        var text = ""
        var escaped = false
        let characters = Array(name)
        var index = 0
        while index < characters.count {
            let character = characters[index]
            if character == "[" || character == "]" {
                if !text.isEmpty { tokens.append(.text(text, escaped: escaped)) }
                text = ""
                escaped = false
                tokens.append(character == "[" ? .open : .close)
            } else if character == "\\", index + 1 < characters.count {
                let next = characters[index + 1]
                if next == "[" || next == "]" || next == "\\" {
                    escaped = true
                } else {
                    text.append(character)
                }
                text.append(next)
                index += 1
            } else {
                text.append(character)
            }
            index += 1
        }
        if !text.isEmpty { tokens.append(.text(text, escaped: escaped)) }
        return tokens
    }

    /// What the text between two brackets names: digits an index, anything else a key (`\` and
    /// digits the key of those digits).
    private static func step(between text: String, escaped: Bool, name: String) throws(CLIFailure) -> Step {
        guard !escaped else { return .key(text) }
        if Self.isDigits(text[...]) {
            guard let index = Int(text), index <= Self.maximumIndex else {
                throw CLIFailure.usage("'\(name)': the index \(text) is over \(Self.maximumIndex)")
            }
            return .index(index)
        }
        if text.hasPrefix("-"), Self.isDigits(text.dropFirst()) {
            throw CLIFailure.usage("'\(name)': negative indexes are not supported")
        }
        return .key(Self.keyOfEscapedNumber(text) ?? text)
    }

    /// `\` and digits: the digits, as a key; nil for any other text.
    private static func keyOfEscapedNumber(_ text: String) -> String? {
        text.hasPrefix("\\") && Self.isDigits(text.dropFirst()) ? String(text.dropFirst()) : nil
    }

    private static func isDigits(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    // MARK: - Building

    /// A value under construction: an object (its keys in the order they were first set), an
    /// array, or a JSON value's text.
    private indirect enum Node {
        case text(String)
        case object(keys: [String], members: [String: Node])
        case array([Node])

        /// The value as JSON text.
        var json: String {
            switch self {
            case .text(let text):
                text
            case .object(let keys, let members):
                "{" + keys.map { JSONText.quoted($0) + ": " + (members[$0]?.json ?? "null") }.joined(separator: ", ") + "}"
            case .array(let elements):
                "[" + elements.map(\.json).joined(separator: ", ") + "]"
            }
        }
    }

    private static func set(_ value: String, at steps: ArraySlice<Step>, in node: inout Node?, path: String, name: String) throws(CLIFailure) {
        guard let step = steps.first else {
            node = .text(value)
            return
        }
        let rest = steps.dropFirst()
        let childPath = path + Self.written(step, first: path.isEmpty)
        let container = try Self.container(for: step, in: node, path: path, name: name)
        switch (step, container) {
        case (.key(let key), .object(var keys, var members)):
            var child = members[key]
            try Self.set(value, at: rest, in: &child, path: childPath, name: name)
            if members[key] == nil { keys.append(key) }
            members[key] = child
            node = .object(keys: keys, members: members)
        case (.index(let index), .array(var elements)):
            while elements.count <= index { elements.append(.text("null")) }
            var child: Node? = elements[index]
            try Self.set(value, at: rest, in: &child, path: childPath, name: name)
            elements[index] = child ?? .text("null")
            node = .array(elements)
        case (.append, .array(var elements)):
            var child: Node?
            try Self.set(value, at: rest, in: &child, path: childPath, name: name)
            elements.append(child ?? .text("null"))
            node = .array(elements)
        default:
            // `container(for:in:path:name:)` returns the kind the step needs, or throws.
            break
        }
    }

    /// The container `step` goes into where `node` is: a new one for nothing or `null`, the node
    /// itself when it is of the kind the step needs (a raw JSON object or array opened), else a
    /// usage error that names the path and both types.
    private static func container(for step: Step, in node: Node?, path: String, name: String) throws(CLIFailure) -> Node {
        var current = node ?? .text("null")
        if case .text(let text) = current {
            if text == "null" {
                if case .key = step { return .object(keys: [], members: [:]) }
                return .array([])
            }
            if let opened = Self.opening(text) { current = opened }
        }
        switch (step, current) {
        case (.key, .object), (.index, .array), (.append, .array):
            return current
        default:
            let needed: String
            switch step {
            case .key: needed = "an object"
            case .index, .append: needed = "an array"
            }
            let what = path.isEmpty ? "the body" : "'\(path)'"
            throw CLIFailure.usage("'\(name)': \(what) is \(Self.kind(of: current)), not \(needed)")
        }
    }

    private static func kind(of node: Node) -> String {
        switch node {
        case .object: return "an object"
        case .array: return "an array"
        case .text(let text):
            switch text.first ?? " " {
            case "\"": return "a string"
            case "t", "f": return "a boolean"
            default: return "a number"
            }
        }
    }

    /// A step as a name writes it.
    private static func written(_ step: Step, first: Bool) -> String {
        switch step {
        case .key(let key): first ? key : "[\(key)]"
        case .index(let index): "[\(index)]"
        case .append: "[]"
        }
    }

    // MARK: - Raw JSON containers

    /// A raw JSON object's or array's text as a node whose members are their own texts, so that a
    /// later path can add to it; nil for any other value. The text was checked as JSON already.
    private static func opening(_ text: String) -> Node? {
        let bytes = Array(text.utf8)
        var index = Self.skippingSpace(bytes, from: 0)
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") || bytes[index] == UInt8(ascii: "[") else { return nil }
        let isObject = bytes[index] == UInt8(ascii: "{")
        let end = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        var keys: [String] = []
        var members: [String: Node] = [:]
        var elements: [Node] = []
        index += 1
        while true {
            index = Self.skippingSpace(bytes, from: index)
            guard index < bytes.count else { return nil }
            if bytes[index] == end { break }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            var key: String?
            if isObject {
                let start = index
                index = Self.endOfValue(bytes, from: start)
                let decoded = try? JSONSerialization.jsonObject(with: Data(bytes[start..<index]), options: [.fragmentsAllowed])
                guard let name = decoded as? String else { return nil }
                key = name
                index = Self.skippingSpace(bytes, from: index)
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index = Self.skippingSpace(bytes, from: index + 1)
            }
            let start = index
            index = Self.endOfValue(bytes, from: start)
            guard index > start else { return nil }
            let member = Node.text(String(decoding: bytes[start..<index], as: UTF8.self))
            if let key {
                if members[key] == nil { keys.append(key) }
                members[key] = member
            } else {
                elements.append(member)
            }
        }
        return isObject ? .object(keys: keys, members: members) : .array(elements)
    }

    /// Where the JSON value that starts at `start` ends: after a string's closing quote or a
    /// container's closing bracket; before the `,`, white space or bracket after a number or a
    /// literal.
    private static func endOfValue(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        var depth = 0
        var inString = false
        while index < bytes.count {
            let byte = bytes[index]
            if inString {
                if byte == UInt8(ascii: "\\") {
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "\"") {
                    inString = false
                    if depth == 0 { return index + 1 }
                }
            } else {
                switch byte {
                case UInt8(ascii: "\""):
                    inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { return index }
                    depth -= 1
                    if depth == 0 { return index + 1 }
                case UInt8(ascii: ","), 0x20, 0x09, 0x0A, 0x0D:
                    if depth == 0 { return index }
                default:
                    break
                }
            }
            index += 1
        }
        return min(index, bytes.count)
    }

    private static func skippingSpace(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        return index
    }
}
