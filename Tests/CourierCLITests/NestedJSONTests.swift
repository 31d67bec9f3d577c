@testable import CourierCLI
import Foundation
import Testing

/// HTTPie 3's nested JSON (https://httpie.io/docs/cli/nested-json): data field names are paths.
/// They were sent as plain names (`a[b]=1` as `{"a[b]": "1"}`).
@Suite("CLI: nested JSON")
struct NestedJSONTests {
    /// The body `pairs` (name, JSON text) make, in order.
    private func body(_ pairs: [(String, String)]) throws -> String {
        var body = NestedJSON()
        for (name, value) in pairs { try body.set(value, at: name) }
        return body.text
    }

    @Test("Keys nest objects, [] appends, an index fills the gap before it with null (HTTPie's examples)")
    func objectsAndArrays() throws {
        let platform = try self.body([
            ("platform[name]", #""HTTPie""#), ("platform[about][mission]", #""Make APIs simple""#),
            ("platform[about][homepage]", #""httpie.io""#), ("platform[about][homepage]", #""httpie.io""#),
            ("platform[about][stars]", "54000"), ("platform[apps][]", #""Terminal""#), ("platform[apps][]", #""Desktop""#),
        ])
        #expect(
            platform
                == #"{"platform": {"name": "HTTPie", "about": {"mission": "Make APIs simple", "homepage": "httpie.io", "stars": 54000}, "apps": ["Terminal", "Desktop"]}}"#)
        let gaps = try self.body([
            ("category", #""tools""#), ("search[platforms][]", #""Terminal""#), ("search[platforms][1]", #""Desktop""#),
            ("search[platforms][3]", #""Mobile""#),
        ])
        #expect(gaps == #"{"category": "tools", "search": {"platforms": ["Terminal", "Desktop", null, "Mobile"]}}"#)
        let order = try self.body([("search[keywords][1]", #""APIs""#), ("search[keywords][0]", #""CLI""#)])
        #expect(order == #"{"search": {"keywords": ["CLI", "APIs"]}}"#)
        // Plain names as before: a repeated one keeps its first place and its last value.
        #expect(try self.body([("a", #""1""#), ("b", #""2""#), ("a", #""3""#)]) == #"{"a": "3", "b": "2"}"#)
        // A last step replaces whatever was there.
        #expect(try self.body([("user[name]", "411"), ("user[name]", #""string""#)]) == #"{"user": {"name": "string"}}"#)
    }

    @Test("A raw JSON array or object can be added to by a later path")
    func rawJSONContainers() throws {
        let array = try self.body([("search[platforms]", #"["Terminal", "Desktop"]"#), ("search[platforms][]", #""Web""#)])
        #expect(array == #"{"search": {"platforms": ["Terminal", "Desktop", "Web"]}}"#)
        let object = try self.body([("a", #"{"b": 1, "c": [2, {"d": "]"}]}"#), ("a[e]", #""x""#)])
        #expect(object == #"{"a": {"b": 1, "c": [2, {"d": "]"}], "e": "x"}}"#)
    }

    @Test("A name that starts with a bracket makes the body an array")
    func topLevelArrays() throws {
        #expect(try self.body([("[]", "1"), ("[]", "2"), ("[]", "3")]) == "[1, 2, 3]")
        let objects = try self.body([("[0][type]", #""platform""#), ("[0][name]", #""terminal""#), ("[1][type]", #""platform""#)])
        #expect(objects == #"[{"type": "platform", "name": "terminal"}, {"type": "platform"}]"#)
    }

    @Test(#"\[, \] and \\ are literal characters; [\1] is a key"#)
    func escapes() throws {
        #expect(try self.body([(#"foo\[bar\]"#, "1"), (#"baz[\[]"#, "2"), (#"baz[\]]"#, "3")]) == #"{"foo[bar]": 1, "baz": {"[": 2, "]": 3}}"#)
        #expect(try self.body([(#"backslash[\\]"#, "1")]) == #"{"backslash": {"\\": 1}}"#)
        #expect(try self.body([(#"object[\1]"#, #""one""#), ("array[1]", #""two""#)]) == #"{"object": {"1": "one"}, "array": [null, "two"]}"#)
    }

    @Test("A malformed path, or one into a value of another type, is a usage error")
    func errors() throws {
        #expect(throws: CLIFailure.self) { var body = NestedJSON(); try body.set("1", at: "foo[baz][quux") }
        #expect(throws: CLIFailure.self) { var body = NestedJSON(); try body.set("1", at: "a]b") }
        #expect(throws: CLIFailure.self) { var body = NestedJSON(); try body.set("1", at: "a[-1]") }
        #expect(throws: CLIFailure.self) { var body = NestedJSON(); try body.set("1", at: "[key]") }
        #expect(throws: CLIFailure.self) { var body = NestedJSON(); try body.set("1", at: "a[100000]") }
        #expect(throws: CLIFailure.self) {
            var body = NestedJSON()
            try body.set("1", at: "array[]")
            try body.set("3", at: "array[key]")
        }
        #expect(throws: CLIFailure.self) {
            var body = NestedJSON()
            try body.set(#""x""#, at: "a")
            try body.set("1", at: "a[b]")
        }
        #expect(throws: CLIFailure.self) {
            var body = NestedJSON()
            try body.set("1", at: "[]")
            try body.set("1", at: "a")
        }
    }

    @Test("The command sends nested fields nested; a malformed name exits 64")
    func command() async throws {
        let result = try await CLIRunner.run(["--offline", "example.com", "a[b]=1", "a[c][]:=2"])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.output.hasSuffix("\n\n" + #"{"a": {"b": "1", "c": [2]}}"# + "\n\n"), "\(result.output)")
        let bad = try await CLIRunner.run(["--offline", "example.com", "a[b=1"])
        #expect(bad.status == 64)
        #expect(bad.standardError.hasPrefix("courier: error: 'a[b': expected ']'"), "\(bad.standardError)")
        // A form keeps the names as they are.
        let form = try await CLIRunner.run(["--offline", "--form", "example.com", "a[b]=1"])
        #expect(form.output.hasSuffix("\n\na%5Bb%5D=1\n\n"), "\(form.output)")
    }
}
