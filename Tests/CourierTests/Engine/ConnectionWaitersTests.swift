@testable import Courier
import Testing

/// Who takes a connection (``ConnectionWaiters``): a hop sent again after its connection closed
/// under it goes only on a new connection, and gets the first one that opens.
@Suite("Connection waiters")
struct ConnectionWaitersTests {
    /// Waiters named by letters; the upper-case ones go only on a new connection.
    private static func waiters(_ names: String) -> ConnectionWaiters<Character> {
        var waiters = ConnectionWaiters<Character>()
        for name in names { waiters.append(name, needsNewConnection: name.isUppercase) }
        return waiters
    }

    @Test func withNoWaiterThatNeedsANewConnectionEveryConnectionGoesInOrder() {
        var waiters = Self.waiters("abc")
        #expect(waiters.takeForReusedConnection() == "a")
        #expect(waiters.takeForNewConnection() == "b")
        #expect(waiters.popFirst() == "c")
        #expect(waiters.takeForReusedConnection() == nil)
        #expect(waiters.takeForNewConnection() == nil)
    }

    @Test func aConnectionGivenBackNeverGoesToAWaiterThatNeedsANewOne() {
        var waiters = Self.waiters("AbCd")
        #expect(waiters.takeForReusedConnection() == "b")
        #expect(waiters.takeForReusedConnection() == "d")
        #expect(waiters.takeForReusedConnection() == nil, "only waiters for new connections are left: the connection idles")
        #expect(waiters.count == 2)
        #expect(waiters.newConnectionCount == 2)
    }

    @Test func aNewConnectionGoesFirstToTheFirstWaiterThatNeedsOne() {
        var waiters = Self.waiters("abCdE")
        #expect(waiters.takeForNewConnection() == "C")
        #expect(waiters.takeForNewConnection() == "E")
        #expect(waiters.takeForNewConnection() == "a", "then in order")
        #expect(waiters.newConnectionCount == 0)
        #expect(waiters.first == "b")
        #expect(waiters[offset: 1] == "d")
    }

    @Test func removingWaitersKeepsTheCountOfThoseThatNeedANewConnection() {
        var waiters = Self.waiters("aBcD")
        #expect(waiters.removeFirst { $0 == "B" } == "B")
        #expect(waiters.removeFirst { $0 == "x" } == nil)
        #expect(waiters.newConnectionCount == 1)
        #expect(waiters.popFirst() == "a")
        #expect(waiters.takeForReusedConnection() == "c")
        #expect(waiters.takeForReusedConnection() == nil)
        #expect(waiters.removeAll() == ["D"])
        #expect(waiters.isEmpty)
        #expect(waiters.newConnectionCount == 0)
        waiters.append("e", needsNewConnection: false)
        #expect(waiters.takeForReusedConnection() == "e")
    }
}
