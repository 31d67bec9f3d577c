@testable import Courier
import NIOCore
import NIOEmbedded
import Testing

/// The pool's decisions (``ConnectionPoolStateMachine``) event by event, without I/O: requests are
/// named stand-ins, connections a name and a loop, loops embedded ones; each event's actions are
/// compared as lines of text.
@Suite("Connection pool state machine")
struct ConnectionPoolStateMachineTests {
    final class Request {
        let name: String
        init(_ name: String) { self.name = name }
    }

    struct Connection: PoolConnection {
        let id: PoolConnectionID
        let eventLoop: any EventLoop
    }

    typealias Machine = ConnectionPoolStateMachine<Request, Connection>

    struct Failure: Error, CustomStringConvertible {
        var description: String { "refused" }
    }

    static let http = ConnectionPool.Key(host: "example.com", port: 80)
    static let https = ConnectionPool.Key(host: "example.com", port: 443, tls: true)

    let loops: [EmbeddedEventLoop] = [EmbeddedEventLoop(), EmbeddedEventLoop(), EmbeddedEventLoop()]
    let now = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func machine(connections: Int = 2, http2Connections: Int = 2, streams: Int = 100) -> Machine {
        Machine(
            configuration: .init(
                maximumConnectionsPerHost: connections, http2MaximumConnectionsPerHost: http2Connections,
                http2MaximumStreamsPerConnection: streams),
            loops: self.loops)
    }

    func loopName(_ loop: any EventLoop) -> String {
        "L\(self.loops.firstIndex { $0 === loop } ?? -1)"
    }

    /// One line per action.
    func lines(_ actions: Machine.Actions) -> [String] {
        actions.map { action in
            switch action {
            case .createConnection(let id, let key, let loop):
                "create \(id) to \(key.port)\(key.http1Only ? " (HTTP/1.1 only)" : "") on \(self.loopName(loop))"
            case .run(let request, let connection, _): "run \(request.name) on \(connection.id)"
            case .runStream(let request, let connection, let busy, _): "stream \(request.name) on \(connection.id)\(busy ? " (busy)" : "")"
            case .fail(let request, let error): "fail \(request.name): \(error)"
            case .close(let connection): "close \(connection.id)"
            case .startIdleClock(let connection): "idle \(connection.id)"
            case .scheduleBackoffTimer(let key, let delay): "back off \(key.port) for \(delay.nanoseconds / 1_000_000) ms"
            }
        }
    }

    /// The requests the actions hand a connection straight from opening, whose transactions may
    /// report its setup (``ConnectionPoolStateMachine/Action/run(_:on:carriesSetup:)``).
    func carryingSetup(_ actions: Machine.Actions) -> [String] {
        actions.compactMap { action -> String? in
            switch action {
            case .run(let request, _, true), .runStream(let request, _, _, true): request.name
            default: nil
            }
        }
    }

    func connection(_ id: Int, on loop: Int = 0) -> Connection {
        Connection(id: PoolConnectionID(rawValue: id), eventLoop: self.loops[loop])
    }

    func request(
        _ machine: inout Machine, _ request: Request, key: ConnectionPool.Key = Self.http, on loop: Int = 0, newConnection: Bool = false,
        at now: NIODeadline? = nil
    ) -> [String] {
        self.lines(
            machine.executeRequest(request, key: key, preferredLoop: self.loops[loop], needsNewConnection: newConnection, now: now ?? self.now))
    }

    /// Requests `names` to the TLS key on `loop`, with no HTTP/2 connection there yet: connection
    /// `id` opens, speaks HTTP/2 and sends its first SETTINGS. Returns what the SETTINGS did.
    @discardableResult
    func openHTTP2(_ machine: inout Machine, _ names: [String], id: Int, on loop: Int = 0, maximumStreams: Int? = nil) -> [String] {
        for name in names { _ = self.request(&machine, Request(name), key: Self.https, on: loop) }
        _ = machine.connectionCreated(self.connection(id, on: loop), key: Self.https, speaking: .http2)
        return self.lines(machine.http2SettingsReceived(PoolConnectionID(rawValue: id), key: Self.https, maximumStreams: maximumStreams))
    }

    // MARK: Actions

    /// SETTINGS_MAX_CONCURRENT_STREAMS 0 on a connection with no stream open: it closes, and with
    /// no other connection that could serve, the waiting requests fail at once (nghttpd and Node
    /// with a limit of 0 made Courier open four connections at a time for ever). With another
    /// connection opening, they wait for it.
    @Test func aServerThatAllowsNoStreamFailsTheWaitingRequestsAndOpensNothingMore() {
        var machine = self.machine(connections: 4)
        let lines = self.openHTTP2(&machine, ["a", "b"], id: 0, maximumStreams: 0)
        #expect(lines == [
            "close #0",
            "fail a: the server allows no HTTP/2 streams (its SETTINGS_MAX_CONCURRENT_STREAMS is 0), so the request was not sent",
            "fail b: the server allows no HTTP/2 streams (its SETTINGS_MAX_CONCURRENT_STREAMS is 0), so the request was not sent",
        ])
        #expect(machine.waitingCount == 0)
        #expect(self.lines(machine.connectionClosed(PoolConnectionID(rawValue: 0), key: Self.https)) == [], "nothing opens in its place")

        // Another connection that takes streams: the waiter waits for it.
        var other = self.machine(connections: 4, streams: 1)
        #expect(self.openHTTP2(&other, ["c", "d"], id: 0) == ["stream c on #0 (busy)", "create #1 to 443 on L1"])
        _ = other.connectionCreated(self.connection(1, on: 1), key: Self.https, speaking: .http2)
        #expect(self.lines(other.http2SettingsReceived(PoolConnectionID(rawValue: 1), key: Self.https, maximumStreams: 0)) == ["close #1"])
        #expect(other.waitingCount == 1)
        #expect(self.lines(other.http2StreamClosed(PoolConnectionID(rawValue: 0), key: Self.https)) == ["stream d on #0 (busy)"])
    }

    @Test func anEventsActionsKeepTheirOrderWhateverTheirNumber() {
        var actions = Machine.Actions()
        #expect(actions.isEmpty)
        #expect(actions.count == 0)
        #expect(self.lines(actions) == [])
        actions.append(.close(self.connection(0)))
        #expect(self.lines(actions) == ["close #0"])
        actions.append(.close(self.connection(1)))
        var more = Machine.Actions(.startIdleClock(self.connection(2)))
        more.append(.close(self.connection(3)))
        actions.append(contentsOf: more)
        #expect(!actions.isEmpty)
        #expect(actions.count == 4)
        #expect(self.lines(actions) == ["close #0", "close #1", "idle #2", "close #3"])
    }

    // MARK: HTTP/1.1

    @Test func aRequestOpensAConnectionOnItsLoopAndTheConnectionIsReusedThere() {
        var machine = self.machine()
        let a = Request("a")
        let b = Request("b")
        #expect(self.request(&machine, a, on: 1) == ["create #0 to 80 on L1"])
        #expect(machine.waitingCount == 1)
        #expect(self.lines(machine.connectionCreated(self.connection(0, on: 1), key: Self.http, speaking: .http1_1)) == ["idle #0", "run a on #0"])
        #expect(machine.waitingCount == 0)
        #expect(self.lines(machine.connectionReleased(self.connection(0, on: 1), key: Self.http, reusableUntil: nil)) == [])
        #expect(self.request(&machine, b, on: 1) == ["run b on #0"])
    }

    /// A connection's setup goes to the request it opened for, handed over as it opens: not to
    /// one that takes it after it idled (its requester was cancelled meanwhile), however soon,
    /// nor to one that takes it once it carried another. The pool's idle count tells when one idles.
    @Test func onlyARequestHandedANewConnectionAsItOpensCarriesItsSetup() {
        var machine = self.machine()
        let (a, b, c) = (Request("a"), Request("b"), Request("c"))
        #expect(self.request(&machine, a) == ["create #0 to 80 on L0"])
        #expect(self.carryingSetup(machine.connectionCreated(self.connection(0), key: Self.http, speaking: .http1_1)) == ["a"])
        #expect(machine.idleCount == 0)
        #expect(self.carryingSetup(machine.connectionReleased(self.connection(0), key: Self.http, reusableUntil: nil)) == [])
        #expect(machine.idleCount == 1)
        let reused = machine.executeRequest(b, key: Self.http, preferredLoop: self.loops[0], needsNewConnection: false, now: self.now)
        #expect(self.lines(reused) == ["run b on #0"])
        #expect(self.carryingSetup(reused) == [])

        // Its requester cancelled while it opened: it idles, and the next request reuses it.
        var cancelled = self.machine()
        #expect(self.request(&cancelled, a) == ["create #0 to 80 on L0"])
        let left = cancelled.cancelWaiter(a, key: Self.http)
        #expect(left)
        #expect(self.lines(cancelled.connectionCreated(self.connection(0), key: Self.http, speaking: .http1_1)) == ["idle #0"])
        #expect(cancelled.idleCount == 1)
        let later = cancelled.executeRequest(c, key: Self.http, preferredLoop: self.loops[0], needsNewConnection: false, now: self.now)
        #expect(self.lines(later) == ["run c on #0"])
        #expect(self.carryingSetup(later) == [], "the connection idled first")
        #expect(cancelled.idleCount == 0)

        // HTTP/2: the first stream the first SETTINGS opens, no other.
        var http2 = self.machine()
        _ = self.request(&http2, a, key: Self.https)
        _ = self.request(&http2, b, key: Self.https)
        _ = http2.connectionCreated(self.connection(0), key: Self.https, speaking: .http2)
        let settings = http2.http2SettingsReceived(PoolConnectionID(rawValue: 0), key: Self.https, maximumStreams: nil)
        #expect(self.lines(settings) == ["stream a on #0 (busy)", "stream b on #0"])
        #expect(self.carryingSetup(settings) == ["a"])
        let third = http2.executeRequest(c, key: Self.https, preferredLoop: self.loops[0], needsNewConnection: false, now: self.now)
        #expect(self.lines(third) == ["stream c on #0"])
        #expect(self.carryingSetup(third) == [])

        // HTTP/2, its requester cancelled while it opened: it idles ready, and the next stream
        // reuses it.
        var idleHTTP2 = self.machine()
        _ = self.request(&idleHTTP2, a, key: Self.https)
        let leftHTTP2 = idleHTTP2.cancelWaiter(a, key: Self.https)
        #expect(leftHTTP2)
        _ = idleHTTP2.connectionCreated(self.connection(0), key: Self.https, speaking: .http2)
        #expect(idleHTTP2.idleCount == 0, "not ready before its SETTINGS")
        #expect(self.lines(idleHTTP2.http2SettingsReceived(PoolConnectionID(rawValue: 0), key: Self.https, maximumStreams: nil)) == ["idle #0"])
        #expect(idleHTTP2.idleCount == 1)
        let afterIdle = idleHTTP2.executeRequest(b, key: Self.https, preferredLoop: self.loops[0], needsNewConnection: false, now: self.now)
        #expect(self.lines(afterIdle) == ["stream b on #0 (busy)"])
        #expect(self.carryingSetup(afterIdle) == [])
    }

    @Test func anIdleConnectionOnTheRequestsLoopGoesFirstThenTheMostRecentlyReleased() {
        var machine = self.machine(connections: 3)
        for (index, loop) in [0, 1, 2].enumerated() {
            _ = self.request(&machine, Request("r\(index)"), on: loop)
        }
        for id in 0..<3 {
            _ = machine.connectionCreated(self.connection(id, on: id), key: Self.http, speaking: .http1_1)
        }
        for id in [1, 0, 2] {
            _ = machine.connectionReleased(self.connection(id, on: id), key: Self.http, reusableUntil: nil)
        }
        #expect(self.request(&machine, Request("x"), on: 0) == ["run x on #0"])
        #expect(self.request(&machine, Request("y"), on: 0) == ["run y on #2"], "none left on L0: the most recently released")
    }

    @Test func requestsBeyondTheCapWaitInOrderForAReleasedConnection() {
        var machine = self.machine(connections: 1)
        let (a, b, c) = (Request("a"), Request("b"), Request("c"))
        #expect(self.request(&machine, a) == ["create #0 to 80 on L0"])
        #expect(self.request(&machine, b) == [])
        #expect(self.request(&machine, c) == [])
        _ = machine.connectionCreated(self.connection(0), key: Self.http, speaking: .http1_1)
        #expect(self.lines(machine.connectionReleased(self.connection(0), key: Self.http, reusableUntil: nil)) == ["run b on #0"])
        let answer1 = machine.cancelWaiter(c, key: Self.http)
        #expect(answer1)
        let answer2 = machine.cancelWaiter(c, key: Self.http)
        #expect(!answer2, "gone already")
        #expect(self.lines(machine.connectionReleased(self.connection(0), key: Self.http, reusableUntil: nil)) == [])
        let answer3 = machine.idleTimeoutReached(PoolConnectionID(rawValue: 0), key: Self.http)
        #expect(answer3)
    }

    @Test func anIdleConnectionPastTheServersPromiseClosesAndAnotherOpens() {
        var machine = self.machine()
        _ = self.request(&machine, Request("a"))
        _ = machine.connectionCreated(self.connection(0), key: Self.http, speaking: .http1_1)
        _ = machine.connectionReleased(self.connection(0), key: Self.http, reusableUntil: self.now + .seconds(5))
        #expect(self.request(&machine, Request("b"), at: self.now + .seconds(4)) == ["run b on #0"])
        _ = machine.connectionReleased(self.connection(0), key: Self.http, reusableUntil: self.now + .seconds(5))
        #expect(self.request(&machine, Request("c"), at: self.now + .seconds(5)) == ["close #0", "create #1 to 80 on L0"])
    }

    @Test func aLeasedConnectionDoesNotCloseForIdlenessAndAClosedOneMakesRoom() {
        var machine = self.machine(connections: 1)
        _ = self.request(&machine, Request("a"))
        _ = machine.connectionCreated(self.connection(0), key: Self.http, speaking: .http1_1)
        let answer4 = machine.idleTimeoutReached(PoolConnectionID(rawValue: 0), key: Self.http)
        #expect(!answer4)
        #expect(self.request(&machine, Request("b")) == [])
        #expect(self.lines(machine.connectionClosed(PoolConnectionID(rawValue: 0), key: Self.http)) == ["create #1 to 80 on L0"])
        #expect(self.lines(machine.connectionCreated(self.connection(1), key: Self.http, speaking: .http1_1)) == ["idle #1", "run b on #1"])
    }

    @Test func aRequestSentAgainGoesOnlyOnANewConnectionAndFirst() {
        var machine = self.machine(connections: 2)
        _ = self.request(&machine, Request("a"))
        _ = self.request(&machine, Request("b"))
        _ = machine.connectionCreated(self.connection(0), key: Self.http, speaking: .http1_1)
        _ = machine.connectionCreated(self.connection(1), key: Self.http, speaking: .http1_1)
        _ = machine.connectionReleased(self.connection(1), key: Self.http, reusableUntil: nil)
        // `a`'s connection closed under it: it goes again, never on the idle #1; at the cap, the
        // longest idle closes to make room.
        #expect(self.lines(machine.connectionClosed(PoolConnectionID(rawValue: 0), key: Self.http)) == [])
        let again = Request("a again")
        #expect(self.request(&machine, Request("c")) == ["run c on #1"])
        #expect(self.request(&machine, again, newConnection: true) == ["create #2 to 80 on L0"])
        #expect(self.request(&machine, Request("d")) == [])
        #expect(self.lines(machine.connectionReleased(self.connection(1), key: Self.http, reusableUntil: nil)) == ["run d on #1"])
        #expect(self.lines(machine.connectionCreated(self.connection(2), key: Self.http, speaking: .http1_1)) == ["idle #2", "run a again on #2"])
    }

    @Test func atTheCapAnIdleConnectionClosesForARequestThatNeedsANewOne() {
        var machine = self.machine(connections: 1)
        _ = self.request(&machine, Request("a"))
        _ = machine.connectionCreated(self.connection(0), key: Self.http, speaking: .http1_1)
        _ = machine.connectionReleased(self.connection(0), key: Self.http, reusableUntil: nil)
        #expect(self.request(&machine, Request("b"), newConnection: true) == ["close #0"])
        #expect(self.lines(machine.connectionClosed(PoolConnectionID(rawValue: 0), key: Self.http)) == ["create #1 to 80 on L0"])
    }

    // MARK: Failed connects

    /// One failed connect fails the first waiter and opens another at once; a second in a row with
    /// no connection of the host left is a host that is down: every waiter fails now. Before, one
    /// waiter failed a back-off (up to 200 ms), and the last of 200 requests to a refused port
    /// learned it after 39 s (probe against h2o). A later request makes its own connect.
    @Test func connectsFailingTwiceWithNoConnectionLeftFailEveryWaiter() {
        var machine = self.machine(connections: 1)
        for name in ["a", "b", "c", "d"] { _ = self.request(&machine, Request(name)) }
        let id = { PoolConnectionID(rawValue: $0) }
        #expect(self.lines(machine.connectionFailed(id(0), key: Self.http, error: Failure())) == ["fail a: refused", "create #1 to 80 on L0"])
        #expect(self.lines(machine.connectionFailed(id(1), key: Self.http, error: Failure())) == ["fail b: refused", "fail c: refused", "fail d: refused"])
        #expect(machine.waitingCount == 0)
        #expect(self.request(&machine, Request("e")) == ["create #2 to 80 on L0"])
        #expect(self.lines(machine.connectionFailed(id(2), key: Self.http, error: Failure())) == ["fail e: refused"])
        // A connect that succeeds ends the run of failures.
        _ = self.request(&machine, Request("f"))
        #expect(self.lines(machine.connectionCreated(self.connection(3), key: Self.http, speaking: .http1_1)) == ["idle #3", "run f on #3"])
    }

    /// With a connection of the host still open, failed connects back off, doubled for each
    /// further failure, and fail one waiter each: the open connection may serve the others.
    @Test func aFailedConnectBesideAnOpenConnectionBacksOff() {
        var machine = self.machine(connections: 2)
        _ = self.request(&machine, Request("a"))
        _ = machine.connectionCreated(self.connection(0), key: Self.http, speaking: .http1_1)
        let id = { PoolConnectionID(rawValue: $0) }
        #expect(self.request(&machine, Request("b")) == ["create #1 to 80 on L0"])
        for name in ["c", "d", "e"] { _ = self.request(&machine, Request(name)) }
        #expect(self.lines(machine.connectionFailed(id(1), key: Self.http, error: Failure())) == ["fail b: refused", "create #2 to 80 on L0"])
        #expect(self.lines(machine.connectionFailed(id(2), key: Self.http, error: Failure())) == ["fail c: refused", "back off 80 for 10 ms"])
        #expect(self.request(&machine, Request("f")) == [], "no connect while backing off")
        #expect(self.lines(machine.backoffEnded(key: Self.http)) == ["create #3 to 80 on L0"])
        #expect(self.lines(machine.connectionFailed(id(3), key: Self.http, error: Failure())) == ["fail d: refused", "back off 80 for 20 ms"])
        // The open connection, given back, takes the next waiter.
        #expect(self.lines(machine.connectionReleased(self.connection(0), key: Self.http, reusableUntil: nil)) == ["run e on #0"])
    }

    @Test func theBackOffIsCapped() {
        let configuration = self.machine().configuration
        #expect(configuration.backoff(afterFailures: 1) == nil)
        #expect(configuration.backoff(afterFailures: 2) == .milliseconds(10))
        #expect(configuration.backoff(afterFailures: 4) == .milliseconds(40))
        #expect(configuration.backoff(afterFailures: 60) == .milliseconds(200))
    }

    // MARK: TLS and HTTP/2

    @Test func overTLSOneConnectionOpensUntilTheHostSpeaksHTTP1() {
        var machine = self.machine(connections: 3)
        #expect(self.request(&machine, Request("a"), key: Self.https) == ["create #0 to 443 on L0"])
        #expect(self.request(&machine, Request("b"), key: Self.https, on: 1) == [])
        #expect(self.request(&machine, Request("c"), key: Self.https, on: 2) == [])
        #expect(
            self.lines(machine.connectionCreated(self.connection(0), key: Self.https, speaking: .http1_1)) == [
                "idle #0", "run a on #0", "create #1 to 443 on L1", "create #2 to 443 on L2",
            ])
    }

    @Test func http2StreamsShareAConnectionUpToTheServersLimitThenASecondOpensOnAnotherLoop() {
        var machine = self.machine(connections: 4)
        #expect(self.request(&machine, Request("a"), key: Self.https) == ["create #0 to 443 on L0"])
        #expect(self.request(&machine, Request("b"), key: Self.https) == [])
        #expect(self.request(&machine, Request("c"), key: Self.https) == [])
        #expect(self.lines(machine.connectionCreated(self.connection(0), key: Self.https, speaking: .http2)) == [])
        #expect(
            self.lines(machine.http2SettingsReceived(PoolConnectionID(rawValue: 0), key: Self.https, maximumStreams: 2)) == [
                "stream a on #0 (busy)", "stream b on #0", "create #1 to 443 on L1",
            ])
        #expect(self.request(&machine, Request("d"), key: Self.https) == [], "one connection opens at a time")
        _ = machine.connectionCreated(self.connection(1, on: 1), key: Self.https, speaking: .http2)
        #expect(
            self.lines(machine.http2SettingsReceived(PoolConnectionID(rawValue: 1), key: Self.https, maximumStreams: nil)) == [
                "stream c on #1 (busy)", "stream d on #1",
            ])
        // A stream closes: the next request takes its place; with none left the connection idles.
        #expect(self.request(&machine, Request("e"), key: Self.https) == ["stream e on #1"])
        #expect(self.lines(machine.http2StreamClosed(PoolConnectionID(rawValue: 0), key: Self.https)) == [])
        #expect(self.lines(machine.http2StreamClosed(PoolConnectionID(rawValue: 0), key: Self.https)) == ["idle #0"])
        let answer5 = machine.http2IdleTimeoutReached(PoolConnectionID(rawValue: 0), key: Self.https)
        #expect(answer5)
        let answer6 = machine.http2IdleTimeoutReached(PoolConnectionID(rawValue: 1), key: Self.https)
        #expect(!answer6, "streams are open")
    }

    @Test func theStreamsPerConnectionAndHTTP2ConnectionsPerHostAreCapped() {
        var machine = self.machine(connections: 8, http2Connections: 2, streams: 1)
        #expect(self.openHTTP2(&machine, ["a"], id: 0, maximumStreams: 100) == ["stream a on #0 (busy)"])
        #expect(self.request(&machine, Request("b"), key: Self.https) == ["create #1 to 443 on L1"])
        _ = machine.connectionCreated(self.connection(1, on: 1), key: Self.https, speaking: .http2)
        #expect(self.lines(machine.http2SettingsReceived(PoolConnectionID(rawValue: 1), key: Self.https, maximumStreams: 100)) == ["stream b on #1 (busy)"])
        #expect(self.request(&machine, Request("c"), key: Self.https) == [], "two HTTP/2 connections at most")
        #expect(self.lines(machine.http2StreamClosed(PoolConnectionID(rawValue: 0), key: Self.https)) == ["stream c on #0 (busy)"])
    }

    @Test func aNewHTTP2ConnectionGoesToTheRequestsLoopWhenNoneOfTheHostsUsesIt() {
        var machine = self.machine(connections: 8, http2Connections: 3, streams: 1)
        self.openHTTP2(&machine, ["a"], id: 0, on: 1)
        #expect(self.request(&machine, Request("b"), key: Self.https, on: 1) == ["create #1 to 443 on L2"], "L1 has one: the next loop")
        _ = machine.connectionCreated(self.connection(1, on: 2), key: Self.https, speaking: .http2)
        _ = machine.http2SettingsReceived(PoolConnectionID(rawValue: 1), key: Self.https, maximumStreams: nil)
        #expect(self.request(&machine, Request("c"), key: Self.https, on: 0) == ["create #2 to 443 on L0"])
    }

    @Test func aGoAwayDrainsItsConnectionAndAWaiterGetsAnother() {
        var machine = self.machine(connections: 4)
        #expect(self.openHTTP2(&machine, ["a"], id: 0, maximumStreams: 1) == ["stream a on #0 (busy)"])
        #expect(self.request(&machine, Request("b"), key: Self.https) == ["create #1 to 443 on L1"])
        // The server processes a's stream (1): nothing learned; b has its connection coming.
        #expect(self.lines(machine.http2GoAwayReceived(PoolConnectionID(rawValue: 0), key: Self.https, lastStreamID: 1)) == [])
        #expect(self.request(&machine, Request("c"), key: Self.https) == [], "not on the draining connection")
        #expect(self.lines(machine.http2StreamClosed(PoolConnectionID(rawValue: 0), key: Self.https)) == ["close #0"])
        #expect(self.lines(machine.connectionClosed(PoolConnectionID(rawValue: 0), key: Self.https)) == [])
        _ = machine.connectionCreated(self.connection(1, on: 1), key: Self.https, speaking: .http2)
        #expect(
            self.lines(machine.http2SettingsReceived(PoolConnectionID(rawValue: 1), key: Self.https, maximumStreams: nil)) == [
                "stream b on #1 (busy)", "stream c on #1",
            ])
    }

    @Test func aGoAwayWithNoStreamOpenClosesAtOnce() {
        var machine = self.machine()
        self.openHTTP2(&machine, ["a"], id: 0)
        _ = machine.http2StreamClosed(PoolConnectionID(rawValue: 0), key: Self.https)
        #expect(self.lines(machine.http2GoAwayReceived(PoolConnectionID(rawValue: 0), key: Self.https, lastStreamID: 1)) == ["close #0"])
    }

    @Test func theStreamsAHostProcessesAConnectionAreLearnedFromAGoAwayAndDoubledWhenTooFew() {
        var machine = self.machine(connections: 4)
        let id = { PoolConnectionID(rawValue: $0) }
        self.openHTTP2(&machine, ["a", "b", "c"], id: 0)
        // Streams 1, 3, 5 open; the server processed 1 and 3 only: the host takes two a connection.
        #expect(self.lines(machine.http2GoAwayReceived(id(0), key: Self.https, lastStreamID: 3)) == [])
        #expect(machine.hosts[Self.https]?.learned.streamsPerConnection == 2)
        for _ in 0..<3 { _ = machine.http2StreamClosed(id(0), key: Self.https) }
        // The dropped stream goes again (on a new connection), and two more with it.
        for name in ["c again", "d", "e"] { _ = self.request(&machine, Request(name), key: Self.https) }
        _ = machine.connectionCreated(self.connection(1, on: 1), key: Self.https, speaking: .http2)
        // Two streams and it is spent: the third request gets a connection of its own.
        #expect(
            self.lines(machine.http2SettingsReceived(id(1), key: Self.https, maximumStreams: nil)) == [
                "stream c again on #1 (busy)", "stream d on #1", "create #2 to 443 on L0",
            ])
        // Its two streams end without a GOAWAY: it closes, and the host may take four.
        #expect(self.lines(machine.http2StreamClosed(id(1), key: Self.https)) == [])
        #expect(self.lines(machine.http2StreamClosed(id(1), key: Self.https)) == ["close #1"])
        #expect(machine.hosts[Self.https]?.learned.streamsPerConnection == 4)
        #expect(self.lines(machine.connectionClosed(id(1), key: Self.https)) == [], "e's connection is coming")
        _ = machine.connectionCreated(self.connection(2), key: Self.https, speaking: .http2)
        #expect(machine.hosts[Self.https]?.http2.last?.lifetimeLimit == 4)
    }

    /// A connection that opened every stream the host processes on one (spent, its streams still
    /// running) takes no new stream, so it does not count under `http2MaximumConnectionsPerHost`:
    /// with a cap of one, a request waited for the spent connection's streams to end (with a
    /// learned limit of one and a long download, for the whole download). It still counts under
    /// `maximumConnectionsPerHost`, which bounds the sockets.
    @Test func aSpentConnectionDoesNotCountUnderTheHTTP2Cap() {
        var machine = self.machine(connections: 4, http2Connections: 1)
        let id = { PoolConnectionID(rawValue: $0) }
        self.openHTTP2(&machine, ["a", "b", "c"], id: 0)
        _ = machine.http2GoAwayReceived(id(0), key: Self.https, lastStreamID: 3)
        for _ in 0..<3 { _ = machine.http2StreamClosed(id(0), key: Self.https) }
        for name in ["c again", "d", "e"] { _ = self.request(&machine, Request(name), key: Self.https) }
        _ = machine.connectionCreated(self.connection(1, on: 1), key: Self.https, speaking: .http2)
        #expect(
            self.lines(machine.http2SettingsReceived(id(1), key: Self.https, maximumStreams: nil)) == [
                "stream c again on #1 (busy)", "stream d on #1", "create #2 to 443 on L0",
            ])
        _ = machine.connectionCreated(self.connection(2), key: Self.https, speaking: .http2)
        #expect(self.lines(machine.http2SettingsReceived(id(2), key: Self.https, maximumStreams: nil)) == ["stream e on #2 (busy)"])
        // #2 takes its second stream; then it is spent too, and the next request opens a connection
        // while the three earlier ones (#0 draining) still count under the cap of four sockets.
        #expect(self.request(&machine, Request("f"), key: Self.https) == ["stream f on #2"])
        #expect(self.request(&machine, Request("g"), key: Self.https).first?.hasPrefix("create #3 to 443") == true)
        #expect(self.request(&machine, Request("h"), key: Self.https) == [], "four sockets: h waits")
    }

    /// A GOAWAY that names an error (ENHANCE_YOUR_CALM, PROTOCOL_ERROR with a last stream of 0)
    /// is a connection error, not the host's count of requests a connection: nothing is learned.
    /// The host's limit became one stream a connection, for all its connections.
    @Test func aGoAwayThatNamesAnErrorTeachesNoLimit() {
        var machine = self.machine(connections: 4)
        let id = { PoolConnectionID(rawValue: $0) }
        self.openHTTP2(&machine, ["a", "b", "c"], id: 0)
        _ = machine.http2GoAwayReceived(id(0), key: Self.https, lastStreamID: 0, namedAnError: true)
        #expect(machine.hosts[Self.https]?.learned.streamsPerConnection == nil)
        _ = machine.http2LastStreamIDLowered(id(0), key: Self.https, to: 0, namedAnError: true)
        #expect(machine.hosts[Self.https]?.learned.streamsPerConnection == nil)
        // One without an error still teaches it.
        var graceful = self.machine(connections: 4)
        self.openHTTP2(&graceful, ["a", "b", "c"], id: 0)
        _ = graceful.http2GoAwayReceived(id(0), key: Self.https, lastStreamID: 0)
        #expect(graceful.hosts[Self.https]?.learned.streamsPerConnection == 1)
    }

    @Test func anHTTP2ConnectionClosedBeforeItsSettingsFailsTheFirstWaiter() {
        var machine = self.machine()
        _ = self.request(&machine, Request("a"), key: Self.https)
        _ = self.request(&machine, Request("b"), key: Self.https)
        _ = machine.connectionCreated(self.connection(0), key: Self.https, speaking: .http2)
        #expect(
            self.lines(machine.connectionClosed(PoolConnectionID(rawValue: 0), key: Self.https)) == [
                "fail a: \(ConnectionPoolError.closedBeforeAnswering(attempts: 1))", "create #1 to 443 on L0",
            ])
    }

    /// What closed it, when something failed (the TLS alert of a server that refused the
    /// client's certificate), is the waiter's failure: not "closed before answering".
    @Test func anHTTP2ConnectionClosedBeforeItsSettingsByAnErrorFailsTheFirstWaiterWithIt() {
        struct Alert: Error, CustomStringConvertible { var description: String { "certificate required" } }
        var machine = self.machine()
        _ = self.request(&machine, Request("a"), key: Self.https)
        _ = machine.connectionCreated(self.connection(0), key: Self.https, speaking: .http2)
        #expect(
            self.lines(machine.connectionClosed(PoolConnectionID(rawValue: 0), key: Self.https, error: Alert())) == [
                "fail a: certificate required"
            ])
    }

    @Test func anHTTP2ConnectionThatGoesUnusableAndClosesBeforeItsSettingsIsAFailedConnect() {
        // A TLS 1.3 server that refuses the client's certificate: the handshake ends on the
        // client's side, ALPN says h2, and the server closes the connection at once.
        var machine = self.machine()
        let id = { PoolConnectionID(rawValue: $0) }
        for name in ["a", "b", "c"] { _ = self.request(&machine, Request(name), key: Self.https) }
        _ = machine.connectionCreated(self.connection(0), key: Self.https, speaking: .http2)
        // Told twice: as the handler closes it, and as it goes inactive.
        machine.http2ConnectionUnusable(id(0), key: Self.https)
        machine.http2ConnectionUnusable(id(0), key: Self.https)
        #expect(self.request(&machine, Request("d"), key: Self.https) == [], "still opening: nothing else opens")
        #expect(self.lines(machine.http2SettingsReceived(id(0), key: Self.https, maximumStreams: nil)) == [])
        let refused = "\(ConnectionPoolError.closedBeforeAnswering(attempts: 1))"
        #expect(self.lines(machine.connectionClosed(id(0), key: Self.https)) == ["fail a: \(refused)", "create #1 to 443 on L0"])
        _ = machine.connectionCreated(self.connection(1), key: Self.https, speaking: .http2)
        machine.http2ConnectionUnusable(id(1), key: Self.https)
        // Twice in a row with no connection left: every waiter fails.
        #expect(self.lines(machine.connectionClosed(id(1), key: Self.https)) == ["fail b: \(refused)", "fail c: \(refused)", "fail d: \(refused)"])
    }

    @Test func anUnusableHTTP2ConnectionIsNotHandedOut() {
        var machine = self.machine()
        self.openHTTP2(&machine, ["a"], id: 0)
        machine.http2ConnectionUnusable(PoolConnectionID(rawValue: 0), key: Self.https)
        // A draining connection's loop is free for the next.
        #expect(self.request(&machine, Request("b"), key: Self.https) == ["create #1 to 443 on L0"])
        #expect(self.lines(machine.http2StreamClosed(PoolConnectionID(rawValue: 0), key: Self.https)) == ["close #0"])
    }

    // MARK: HTTP/1.1 only

    /// An origin whose server answered HTTP_1_1_REQUIRED sends its later requests to connections
    /// whose ALPN offers only HTTP/1.1, a key of their own beside its HTTP/2 connection; one
    /// request alone (a header block too large for HTTP/2) goes there without teaching the origin
    /// anything; a cleartext key is left as it is.
    @Test func anOriginThatWantsHTTP11SendsItsRequestsToConnectionsOfferingOnlyHTTP11() {
        var machine = self.machine(connections: 4)
        let http1 = Self.https.overHTTP1Only
        #expect(machine.destination(of: Self.https, http1Only: false) == Self.https)
        #expect(machine.destination(of: Self.https, http1Only: true) == http1)
        #expect(machine.destination(of: Self.http, http1Only: true) == Self.http, "cleartext speaks HTTP/1.1 anyway")
        #expect(self.openHTTP2(&machine, ["a"], id: 0) == ["stream a on #0 (busy)"])
        #expect(machine.destination(of: Self.https, http1Only: false) == Self.https, "one request alone teaches nothing")

        // The server refuses stream a with HTTP_1_1_REQUIRED.
        machine.originRequiresHTTP1(Self.https)
        machine.originRequiresHTTP1(Self.http)
        machine.originRequiresHTTP1(http1)
        #expect(machine.http1Required == [Self.https])
        #expect(machine.destination(of: Self.https, http1Only: false) == http1)
        #expect(machine.destination(of: Self.http, http1Only: false) == Self.http)
        // Connections open at once for each waiter (ALPN cannot choose HTTP/2 there), apart from
        // the HTTP/2 one, which keeps its stream.
        #expect(self.request(&machine, Request("a"), key: http1) == ["create #1 to 443 (HTTP/1.1 only) on L0"])
        #expect(self.request(&machine, Request("b"), key: http1) == ["create #2 to 443 (HTTP/1.1 only) on L0"])
        #expect(self.lines(machine.connectionCreated(self.connection(1), key: http1, speaking: .http1_1)) == ["idle #1", "run a on #1"])
        #expect(machine.hosts[Self.https]?.http2.count == 1)
        #expect(machine.hosts[http1]?.http1.count == 1)

        // Where ALPN offers HTTP/2, a new origin opens one connection at a time until it knows.
        var fresh = self.machine(connections: 4)
        #expect(self.request(&fresh, Request("c"), key: Self.https) == ["create #0 to 443 on L0"])
        #expect(self.request(&fresh, Request("d"), key: Self.https) == [])
    }

    @Test func theOriginsThatWantHTTP11AreBounded() {
        var machine = Machine(
            configuration: .init(
                maximumConnectionsPerHost: 2, http2MaximumConnectionsPerHost: 1, http2MaximumStreamsPerConnection: 100,
                rememberedHostsLimit: 3),
            loops: self.loops)
        for port in 1...10 { machine.originRequiresHTTP1(ConnectionPool.Key(host: "host\(port).example", port: 443, tls: true)) }
        #expect(machine.http1Required.count == 3)
        #expect(machine.http1Required.contains(ConnectionPool.Key(host: "host10.example", port: 443, tls: true)))
    }

    // MARK: Hosts at rest

    @Test func aHostWithNoConnectionAndNoWaiterLeavesThePool() {
        var machine = self.machine()
        let id = PoolConnectionID(rawValue: 0)
        _ = self.request(&machine, Request("a"))
        _ = machine.connectionCreated(self.connection(0), key: Self.http, speaking: .http1_1)
        _ = machine.connectionReleased(self.connection(0), key: Self.http, reusableUntil: nil)
        let closes = machine.idleTimeoutReached(id, key: Self.http)
        #expect(closes)
        #expect(machine.hosts.count == 1, "the connection is closing, not closed")
        #expect(self.lines(machine.connectionClosed(id, key: Self.http)) == [])
        #expect(machine.hosts.isEmpty)
        #expect(machine.remembered.isEmpty, "a cleartext host that always connected taught the pool nothing")
        // It comes back as new.
        #expect(self.request(&machine, Request("b")) == ["create #1 to 80 on L0"])
        #expect(machine.hosts.count == 1)
    }

    @Test func aHostComesBackWithWhatItTaughtThePool() {
        var machine = self.machine(connections: 4)
        let id = { PoolConnectionID(rawValue: $0) }
        self.openHTTP2(&machine, ["a", "b", "c"], id: 0)
        // The server processed two of the three streams, then every stream ends and it closes.
        _ = machine.http2GoAwayReceived(id(0), key: Self.https, lastStreamID: 3)
        for _ in 0..<3 { _ = machine.http2StreamClosed(id(0), key: Self.https) }
        // Sent again, the third went on a connection of its own, which the server also closes.
        _ = self.request(&machine, Request("c again"), key: Self.https)
        _ = machine.connectionClosed(id(0), key: Self.https)
        _ = machine.connectionCreated(self.connection(1), key: Self.https, speaking: .http2)
        _ = machine.http2SettingsReceived(id(1), key: Self.https, maximumStreams: nil)
        _ = machine.http2GoAwayReceived(id(1), key: Self.https, lastStreamID: 1)
        #expect(self.lines(machine.http2StreamClosed(id(1), key: Self.https)) == ["close #1"])
        #expect(self.lines(machine.connectionClosed(id(1), key: Self.https)) == [])
        #expect(machine.hosts.isEmpty)
        let learned = machine.remembered[Self.https]
        #expect(learned?.applicationProtocol == .http2)
        #expect(learned?.streamsPerConnection == 2)

        // Back: its new connection opens no more streams than the host processes.
        _ = self.openHTTP2(&machine, ["d", "e", "f"], id: 2)
        #expect(machine.remembered.isEmpty, "what it learned is the host's again")
        #expect(machine.hosts[Self.https]?.http2.first?.lifetimeLimit == 2)
        #expect(machine.hosts[Self.https]?.http2.first?.openStreams == 2)
    }

    @Test func aHostWhoseConnectsFailedFailsItsWaitersAtOnceWhenItFailsAgain() {
        var machine = self.machine(connections: 1)
        let id = { PoolConnectionID(rawValue: $0) }
        _ = self.request(&machine, Request("a"))
        #expect(self.lines(machine.connectionFailed(id(0), key: Self.http, error: Failure())) == ["fail a: refused"])
        #expect(machine.hosts.isEmpty)
        #expect(machine.remembered[Self.http]?.failedConnects == 1)
        // Its next connect is its second failure in a row, with no connection left: the waiter
        // behind it fails too, and the host rests again, remembering.
        _ = self.request(&machine, Request("b"))
        _ = self.request(&machine, Request("c"))
        #expect(self.lines(machine.connectionFailed(id(1), key: Self.http, error: Failure())) == ["fail b: refused", "fail c: refused"])
        #expect(machine.hosts.isEmpty)
        #expect(machine.remembered[Self.http]?.failedConnects == 2)
    }

    @Test func theHostsRememberedAreBounded() throws {
        var machine = Machine(
            configuration: .init(
                maximumConnectionsPerHost: 2, http2MaximumConnectionsPerHost: 1, http2MaximumStreamsPerConnection: 100,
                rememberedHostsLimit: 3),
            loops: self.loops)
        // Ten TLS hosts that speak HTTP/1.1, each one request on one connection, which then closes.
        for port in 1...10 {
            let key = ConnectionPool.Key(host: "host\(port).example", port: 443, tls: true)
            let id = PoolConnectionID(rawValue: port - 1)
            _ = machine.executeRequest(Request("r"), key: key, preferredLoop: self.loops[0], needsNewConnection: false, now: self.now)
            _ = machine.connectionCreated(self.connection(port - 1), key: key, speaking: .http1_1)
            _ = machine.connectionClosed(id, key: key)
        }
        #expect(machine.hosts.isEmpty)
        #expect(machine.remembered.count == 3)
        #expect(machine.remembered.values.allSatisfy { $0.applicationProtocol == .http1_1 })
        // A host remembered again takes no one's place.
        let kept = try #require(machine.remembered.keys.first)
        _ = machine.executeRequest(Request("again"), key: kept, preferredLoop: self.loops[0], needsNewConnection: false, now: self.now)
        #expect(machine.remembered.count == 2)
        _ = machine.connectionCreated(self.connection(10), key: kept, speaking: .http1_1)
        _ = machine.connectionClosed(PoolConnectionID(rawValue: 10), key: kept)
        #expect(machine.remembered.count == 3)
        #expect(machine.remembered[kept] != nil)
    }

    // MARK: Shutdown and strangers

    @Test func shutdownFailsTheWaitersAndClosesEveryConnection() {
        var machine = self.machine(connections: 1)
        _ = self.request(&machine, Request("a"))
        _ = self.request(&machine, Request("b"))
        _ = self.request(&machine, Request("c"), key: Self.https)
        _ = machine.connectionCreated(self.connection(0), key: Self.http, speaking: .http1_1)
        let actions = Set(self.lines(machine.shutdown()))
        #expect(actions == ["fail b: \(ConnectionPoolError.shutDown)", "fail c: \(ConnectionPoolError.shutDown)", "close #0"])
        #expect(self.request(&machine, Request("d")) == ["fail d: \(ConnectionPoolError.shutDown)"])
        #expect(self.lines(machine.connectionCreated(self.connection(1), key: Self.https, speaking: .http2)) == ["close #1"])
        #expect(self.lines(machine.connectionReleased(self.connection(0), key: Self.http, reusableUntil: nil)) == ["close #0"])
        #expect(self.lines(machine.connectionClosed(PoolConnectionID(rawValue: 0), key: Self.http)) == [])
    }

    @Test func aConnectionThePoolDidNotOpenIsLeftToItself() {
        var machine = self.machine()
        let stranger = Connection(id: .unpooled, eventLoop: self.loops[0])
        #expect(self.lines(machine.connectionReleased(stranger, key: Self.http, reusableUntil: nil)) == [])
        let answer7 = machine.idleTimeoutReached(.unpooled, key: Self.http)
        #expect(answer7)
        #expect(self.lines(machine.connectionClosed(.unpooled, key: Self.http)) == [])
        #expect(self.lines(machine.http2StreamClosed(.unpooled, key: Self.https)) == [])
    }
}
