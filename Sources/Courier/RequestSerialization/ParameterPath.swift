/// Where a value sits inside the parameters: `user[tags][2]`, for error messages.
///
/// The root is written `parameters`; dictionary keys and array indexes follow in brackets, the
/// way the query string itself nests them.
struct ParameterPath: Sendable, CustomStringConvertible {
    private var components: [String] = []

    static let root = ParameterPath()

    /// The path of the value under `key` in the dictionary at this path.
    func appending(key: String) -> ParameterPath {
        var copy = self
        copy.components.append(key)
        return copy
    }

    /// The path of the element at `index` in the array at this path.
    func appending(index: Int) -> ParameterPath {
        self.appending(key: String(index))
    }

    /// `other` taken as relative to this path.
    func appending(_ other: ParameterPath) -> ParameterPath {
        var copy = self
        copy.components += other.components
        return copy
    }

    var isRoot: Bool { self.components.isEmpty }

    /// How many keys and indexes lead here.
    var depth: Int { self.components.count }

    var description: String {
        guard let first = self.components.first else { return "parameters" }
        return self.components.dropFirst().reduce(first) { $0 + "[" + $1 + "]" }
    }
}
