import CourierTesting

/// Ways the network may cut a parser's input, for tests that it reads the same bytes the same
/// however they arrive.
enum Cuts {
    /// Cuts of `count` bytes to try: one byte at a time, then `randomSets` sets of 1 to `most`
    /// random cuts (offsets in order; a repeated one is an empty read). None for a single byte.
    static func toTry(_ count: Int, randomSets: Int, most: Int, using random: inout SeededGenerator) -> [[Int]] {
        guard count > 1 else { return [] }
        return [Array(1..<count)]
            + (0..<randomSets).map { _ in
                (0..<Int.random(in: 1...most, using: &random)).map { _ in Int.random(in: 1..<count, using: &random) }.sorted()
            }
    }

    /// The pieces of `bytes` cut at `cuts` (offsets in order).
    static func pieces(of bytes: [UInt8], at cuts: [Int]) -> [ArraySlice<UInt8>] {
        zip([0] + cuts, cuts + [bytes.count]).map { bytes[$0..<$1] }
    }

    /// How `cuts` of `count` bytes are named in a failure.
    static func describe(_ cuts: [Int], of count: Int) -> String {
        cuts.count == count - 1 ? "every byte" : "\(cuts)"
    }
}
