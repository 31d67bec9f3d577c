import NIOCore

/// The hops waiting for a connection to one host, in order of arrival, and which of them go only
/// on a new connection: the ``ConnectionPool``'s choice of who takes a connection, apart from the
/// connections themselves, so that it is tested without I/O.
///
/// A hop whose connection closed under it goes again only on a new connection
/// (``EngineHop/State/needsNewConnection``): a server may close any kept-alive connection, idle or
/// right after a response that said keep-alive, and a request handed such connections one after
/// another would fail once its resends ran out (``ResendRule/maximumResends``).
/// - A connection given back after a hop goes to the first waiter that may take a reused one
///   (``takeForReusedConnection()``), never to one that goes only on a new one.
/// - A new connection goes to the first waiter that goes only on a new one, else to the first
///   waiter (``takeForNewConnection()``). Such a waiter is served first because nothing else serves
///   it: the close of the connection it lost made room for a new one; if that went to a waiter
///   behind it in line, it would wait for the next connection to close, which a busy host's
///   kept-alive connections may never do.
struct ConnectionWaiters<Element> {
    private var entries = CircularBuffer<(element: Element, needsNewConnection: Bool)>()
    /// How many entries go only on a new connection (most often none: then nothing is searched).
    private(set) var newConnectionCount = 0

    var count: Int { self.entries.count }
    var isEmpty: Bool { self.entries.isEmpty }
    var first: Element? { self.entries.first?.element }

    /// The waiter `offset` places from the first.
    subscript(offset offset: Int) -> Element {
        self.entries[self.entries.index(self.entries.startIndex, offsetBy: offset)].element
    }

    mutating func append(_ element: Element, needsNewConnection: Bool) {
        self.entries.append((element, needsNewConnection))
        if needsNewConnection { self.newConnectionCount += 1 }
    }

    /// The first waiter, whatever connection it takes.
    mutating func popFirst() -> Element? {
        guard !self.entries.isEmpty else { return nil }
        return self.remove(at: self.entries.startIndex)
    }

    /// Removes the first waiter for which `predicate` holds.
    mutating func removeFirst(where predicate: (Element) -> Bool) -> Element? {
        guard let index = self.entries.firstIndex(where: { predicate($0.element) }) else { return nil }
        return self.remove(at: index)
    }

    mutating func removeAll() -> [Element] {
        let elements = self.entries.map(\.element)
        self.entries.removeAll()
        self.newConnectionCount = 0
        return elements
    }

    /// Who takes a connection that has just opened.
    mutating func takeForNewConnection() -> Element? {
        if self.newConnectionCount > 0, let index = self.entries.firstIndex(where: \.needsNewConnection) {
            return self.remove(at: index)
        }
        return self.popFirst()
    }

    /// Who takes a connection given back after a hop; nil when every waiter goes only on a new one.
    mutating func takeForReusedConnection() -> Element? {
        if self.newConnectionCount == 0 { return self.popFirst() }
        guard let index = self.entries.firstIndex(where: { !$0.needsNewConnection }) else { return nil }
        return self.remove(at: index)
    }

    private mutating func remove(at index: CircularBuffer<(element: Element, needsNewConnection: Bool)>.Index) -> Element {
        let entry = self.entries.remove(at: index)
        if entry.needsNewConnection { self.newConnectionCount -= 1 }
        return entry.element
    }
}

extension ConnectionWaiters: Sendable where Element: Sendable {}
