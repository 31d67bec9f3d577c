import NIOConcurrencyHelpers

/// Opens once; closures waiting for it run then (or at once when it is already open).
final class OneShotGate: Sendable {
    private let state = NIOLockedValueBox<(open: Bool, waiting: [@Sendable () -> Void])>((false, []))

    var isOpen: Bool { self.state.withLockedValue { $0.open } }

    func open() {
        let waiting = self.state.withLockedValue { state -> [@Sendable () -> Void] in
            guard !state.open else { return [] }
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for action in waiting { action() }
    }

    func whenOpen(_ action: @escaping @Sendable () -> Void) {
        let now = self.state.withLockedValue { state -> Bool in
            if state.open { return true }
            state.waiting.append(action)
            return false
        }
        if now { action() }
    }
}
