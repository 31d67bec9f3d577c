extension ConnectionPoolStateMachine {
    /// The actions of one event, in order. Most events have none or one (a request runs on an
    /// idle connection or a stream, a connection given back idles or takes the next waiter): the
    /// first is held inline, and an array is allocated only for an event with more than one, so
    /// that a request's events cost the pool no allocation.
    struct Actions: Sequence {
        private var first: Action?
        private var rest: [Action] = []

        /// No action.
        init() {}

        /// One action.
        init(_ action: Action) {
            self.first = action
        }

        var isEmpty: Bool { self.first == nil }

        var count: Int { self.first == nil ? 0 : 1 + self.rest.count }

        mutating func append(_ action: Action) {
            if self.first == nil {
                self.first = action
            } else {
                self.rest.append(action)
            }
        }

        mutating func append(contentsOf actions: Actions) {
            for action in actions { self.append(action) }
        }

        struct Iterator: IteratorProtocol {
            fileprivate var first: Action?
            fileprivate var rest: IndexingIterator<[Action]>

            mutating func next() -> Action? {
                if let first = self.first.take() { return first }
                return self.rest.next()
            }
        }

        /// Consumes the actions: the first moves out, not copied (a retain of each object it
        /// carries), when the caller's value is not used after.
        consuming func makeIterator() -> Iterator {
            Iterator(first: self.first, rest: self.rest.makeIterator())
        }
    }
}
