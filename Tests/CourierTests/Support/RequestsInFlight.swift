/// Runs `count` attempts with at most `inFlight` at once, starting the next as each ends, and
/// returns what went wrong, in the order it was found. `attempt(index)` makes one request and
/// returns nil when it went as it should, else a line that says what happened.
func failedAttempts(of count: Int, inFlight: Int, _ attempt: @escaping @Sendable (Int) async -> String?) async -> [String] {
    await withTaskGroup(of: String?.self) { group in
        var failures: [String] = []
        var next = 0
        func add() {
            let index = next
            group.addTask { await attempt(index) }
            next += 1
        }
        while next < min(inFlight, count) { add() }
        for await failure in group {
            if let failure { failures.append(failure) }
            if next < count { add() }
        }
        return failures
    }
}
