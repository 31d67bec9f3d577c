import Foundation

/// JSON string literals for the bodies the command composes.
enum JSONText {
    /// `string` as a JSON string literal: Foundation's escaping (quotes, backslashes, control
    /// characters), slashes and non-ASCII characters left as they are.
    static func quoted(_ string: String) -> String {
        // A string is always a valid JSON fragment: the encoding cannot fail.
        let data = (try? JSONSerialization.data(withJSONObject: string, options: [.fragmentsAllowed, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
