import Foundation
import Testing

/// Records an issue when `received` is not `expected`, with both sizes and the offset of the first
/// byte that differs: for bodies of megabytes. Not `#expect(received == expected)`, on whose
/// failure Swift Testing diffs the two collections, which for megabytes ran for minutes at full CPU
/// (an interop run seemed to hang).
func expectSameBytes(_ received: Data, _ expected: Data, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    guard received != expected else { return }
    let first = zip(received, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(received.count, expected.count)
    Issue.record(
        "\(what): \(received.count) bytes where \(expected.count) were expected, the first difference at byte \(first)",
        sourceLocation: sourceLocation)
}
