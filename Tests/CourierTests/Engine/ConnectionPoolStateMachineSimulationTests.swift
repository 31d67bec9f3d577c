import CourierTesting
@testable import Courier
import NIOCore
import NIOEmbedded
import Testing

/// The pool's state machine in a simulated world, many seeded runs of random events: requests come
/// and are cancelled; connects succeed (HTTP/2 or HTTP/1.1), fail, or close before the server's
/// SETTINGS; servers change their stream limit, send GOAWAY, answer; streams time out (the
/// connection becomes unusable); idle clocks and back-offs run out. The world does what each
/// action asks, at a random later step. When nothing is left to happen, no request may still wait:
/// with no connect, stream, timer or close under way, nothing would ever wake it (a request
/// waiting for a connection has no timeout of its own but the resource timeout).
@Suite("Connection pool state machine, simulated")
struct ConnectionPoolStateMachineSimulationTests {
    typealias Machine = ConnectionPoolStateMachine<ConnectionPoolStateMachineTests.Request, ConnectionPoolStateMachineTests.Connection>
    typealias Request = ConnectionPoolStateMachineTests.Request
    typealias Connection = ConnectionPoolStateMachineTests.Connection
    typealias Key = ConnectionPool.Key

    /// What the world will do, at a later step.
    enum Pending: Equatable {
        case connect(Int, Key)
        case settings(Int, Key)
        case requestEnds(Int, Key)
        case streamEnds(Int, Key)
        case close(Int, Key)
        case idle(Int, Key)
        case backoff(Key)
    }

    enum Fate { case waiting, running(Int), done }

    struct World {
        var machine: Machine
        var generator: SeededGenerator
        let loops: [EmbeddedEventLoop]
        var pending: [Pending] = []
        var requests: [(request: Request, key: Key, fate: Fate)] = []
        /// Connections that opened and have not closed: whether each speaks HTTP/2.
        var open: [Int: (key: Key, http2: Bool)] = [:]
        var log: [String] = []

        mutating func apply(_ actions: Machine.Actions) {
            for action in actions {
                switch action {
                case .createConnection(let id, let key, _):
                    self.log.append("create \(id.rawValue)")
                    self.pending.append(.connect(id.rawValue, key))
                case .run(let request, let connection, _):
                    self.log.append("run \(request.name) on \(connection.id.rawValue)")
                    self.setFate(request, .running(connection.id.rawValue))
                    self.pending.append(.requestEnds(connection.id.rawValue, self.key(of: request)))
                case .runStream(let request, let connection, _, _):
                    self.log.append("stream \(request.name) on \(connection.id.rawValue)")
                    self.setFate(request, .running(connection.id.rawValue))
                    self.pending.append(.streamEnds(connection.id.rawValue, self.key(of: request)))
                case .fail(let request, _):
                    self.log.append("fail \(request.name)")
                    self.setFate(request, .done)
                case .close(let connection):
                    self.log.append("close \(connection.id.rawValue)")
                    let key = self.open[connection.id.rawValue]?.key ?? self.keyOfConnect(connection.id.rawValue)
                    if let key, !self.pending.contains(.close(connection.id.rawValue, key)) {
                        self.pending.append(.close(connection.id.rawValue, key))
                    }
                case .startIdleClock(let connection):
                    if let key = self.open[connection.id.rawValue]?.key { self.pending.append(.idle(connection.id.rawValue, key)) }
                case .scheduleBackoffTimer(let key, _):
                    self.log.append("back off")
                    self.pending.append(.backoff(key))
                }
            }
        }

        func key(of request: Request) -> Key { self.requests.first { $0.request === request }!.key }

        func keyOfConnect(_ id: Int) -> Key? {
            for case .connect(id, let key) in self.pending { return key }
            for case .settings(id, let key) in self.pending { return key }
            return nil
        }

        mutating func setFate(_ request: Request, _ fate: Fate) {
            guard let index = self.requests.firstIndex(where: { $0.request === request }) else { return }
            self.requests[index].fate = fate
        }

        /// Every request running on connection `id` ends (its connection closed).
        mutating func endRequests(on id: Int) {
            for index in self.requests.indices {
                if case .running(id) = self.requests[index].fate { self.requests[index].fate = .done }
            }
        }

        mutating func random(_ upperBound: Int) -> Int { Int(self.generator.next() % UInt64(upperBound)) }

        /// One step: a new request, a cancel, a server's or a timeout's event, or what the world
        /// owes (one pending event, taken at random).
        mutating func step(allowExternal: Bool) {
            let roll = self.random(100)
            if allowExternal, roll < 12 {
                let key = self.random(2) == 0 ? ConnectionPoolStateMachineTests.https : ConnectionPoolStateMachineTests.http
                let request = Request("r\(self.requests.count)")
                self.requests.append((request, key, .waiting))
                self.log.append("request \(request.name) to \(key.port)")
                self.apply(self.machine.executeRequest(
                    request, key: key, preferredLoop: self.loops[self.random(self.loops.count)], needsNewConnection: false,
                    now: .uptimeNanoseconds(1_000_000_000)))
                return
            }
            if allowExternal, roll < 16 {
                // A caller cancels a request that waits.
                let waiting = self.requests.indices.filter { if case .waiting = self.requests[$0].fate { true } else { false } }
                guard let index = waiting.randomElement(using: &self.generator) else { return }
                if self.machine.cancelWaiter(self.requests[index].request, key: self.requests[index].key) {
                    self.log.append("cancel \(self.requests[index].request.name)")
                    self.requests[index].fate = .done
                }
                return
            }
            if allowExternal, roll < 20 {
                // An HTTP/2 connection: a GOAWAY, a stream's timeout (unusable), or new SETTINGS.
                let http2 = self.open.filter(\.value.http2).keys.sorted()
                guard let id = http2.randomElement(using: &self.generator), let key = self.open[id]?.key else { return }
                let connectionID = PoolConnectionID(rawValue: id)
                switch self.random(3) {
                case 0:
                    // None processed, the first one or two, or all (the largest stream ID).
                    let last = [0, 1, 3, Int(Int32.max)][self.random(4)]
                    self.log.append("goaway \(id) last \(last)")
                    self.apply(self.machine.http2GoAwayReceived(connectionID, key: key, lastStreamID: last))
                case 1:
                    let streams = self.pending.contains(.streamEnds(id, key))
                    self.log.append("unusable \(id)")
                    self.machine.http2ConnectionUnusable(connectionID, key: key)
                    // The caller closes a connection it gave up on that carries no stream (a PING
                    // missed); one with streams closes with its last (the machine says so).
                    if !streams, !self.pending.contains(.close(id, key)) { self.pending.append(.close(id, key)) }
                default:
                    let limit = self.random(4)
                    self.log.append("settings \(id) max \(limit)")
                    self.apply(self.machine.http2SettingsReceived(connectionID, key: key, maximumStreams: limit))
                }
                return
            }
            guard !self.pending.isEmpty else { return }
            let event = self.pending.remove(at: self.random(self.pending.count))
            switch event {
            case .connect(let id, let key):
                let connection = Connection(id: PoolConnectionID(rawValue: id), eventLoop: self.loops[0])
                switch self.random(5) {
                case 0:
                    self.log.append("connect \(id) failed")
                    self.apply(self.machine.connectionFailed(connection.id, key: key, error: ConnectionPoolStateMachineTests.Failure()))
                case 1 where key.tls:
                    self.log.append("connect \(id): HTTP/1.1")
                    self.open[id] = (key, false)
                    self.apply(self.machine.connectionCreated(connection, key: key, speaking: .http1_1))
                default:
                    let http2 = key.tls
                    self.log.append("connect \(id): \(http2 ? "HTTP/2" : "HTTP/1.1")")
                    self.open[id] = (key, http2)
                    self.apply(self.machine.connectionCreated(connection, key: key, speaking: http2 ? .http2 : .http1_1))
                    if http2 { self.pending.append(.settings(id, key)) }
                }
            case .settings(let id, let key):
                guard self.open[id] != nil else { return }
                if self.random(6) == 0 {
                    // The server closes what TLS accepted, before its SETTINGS.
                    self.log.append("closed before settings \(id)")
                    self.open[id] = nil
                    self.endRequests(on: id)
                    self.pending.removeAll { $0 == .streamEnds(id, key) || $0 == .idle(id, key) || $0 == .close(id, key) }
                    self.apply(self.machine.connectionClosed(PoolConnectionID(rawValue: id), key: key))
                    return
                }
                let limit: Int? = [nil, 1, 2, 0, 100][self.random(5)]
                self.log.append("settings \(id) max \(limit.map(String.init) ?? "-")")
                self.apply(self.machine.http2SettingsReceived(PoolConnectionID(rawValue: id), key: key, maximumStreams: limit))
            case .requestEnds(let id, let key):
                guard self.open[id] != nil else { return }
                if let index = self.requests.firstIndex(where: { if case .running(id) = $0.fate { true } else { false } }) {
                    self.requests[index].fate = .done
                }
                let connection = Connection(id: PoolConnectionID(rawValue: id), eventLoop: self.loops[0])
                if self.random(4) == 0 {
                    self.log.append("request on \(id) ends, connection not reusable")
                    self.pending.append(.close(id, key))
                    self.apply(self.machine.connectionReleased(connection, key: key, reusableUntil: nil))
                } else {
                    self.log.append("request on \(id) ends")
                    self.apply(self.machine.connectionReleased(
                        connection, key: key, reusableUntil: .uptimeNanoseconds(1_000_000_000) + .hours(1)))
                }
            case .streamEnds(let id, let key):
                guard self.open[id] != nil else { return }
                if let index = self.requests.firstIndex(where: { if case .running(id) = $0.fate { true } else { false } }) {
                    self.requests[index].fate = .done
                }
                self.log.append("stream on \(id) ends")
                self.apply(self.machine.http2StreamClosed(PoolConnectionID(rawValue: id), key: key))
            case .close(let id, let key):
                self.log.append("closed \(id)")
                let wasOpen = self.open.removeValue(forKey: id) != nil
                self.endRequests(on: id)
                self.pending.removeAll { $0 == .streamEnds(id, key) || $0 == .requestEnds(id, key) || $0 == .idle(id, key) || $0 == .settings(id, key) }
                if wasOpen { self.apply(self.machine.connectionClosed(PoolConnectionID(rawValue: id), key: key)) }
            case .idle(let id, let key):
                guard let connection = self.open[id] else { return }
                let closes =
                    connection.http2
                    ? self.machine.http2IdleTimeoutReached(PoolConnectionID(rawValue: id), key: key)
                    : self.machine.idleTimeoutReached(PoolConnectionID(rawValue: id), key: key)
                if closes {
                    self.log.append("idle \(id) closes")
                    if !self.pending.contains(.close(id, key)) { self.pending.append(.close(id, key)) }
                }
            case .backoff(let key):
                self.log.append("back-off ends")
                self.apply(self.machine.backoffEnded(key: key))
            }
        }
    }

    /// Seeds taken in turn: each run is the same every time.
    @Test(arguments: 0..<40)
    func noRequestIsLeftWaitingWhenNothingIsLeftToHappen(batch: Int) {
        let loops = [EmbeddedEventLoop(), EmbeddedEventLoop()]
        for seed in (batch * 50)..<(batch * 50 + 50) {
            var world = World(
                machine: Machine(
                    configuration: .init(maximumConnectionsPerHost: 2, http2MaximumConnectionsPerHost: 2, http2MaximumStreamsPerConnection: 3),
                    loops: loops),
                generator: SeededGenerator(seed: UInt64(seed)), loops: loops)
            for _ in 0..<60 { world.step(allowExternal: true) }
            // Then only what the world owes, until nothing is left (bounded: each event makes few).
            var steps = 0
            while !world.pending.isEmpty, steps < 10_000 {
                world.step(allowExternal: false)
                steps += 1
            }
            let stranded = world.requests.filter { if case .waiting = $0.fate { true } else { false } }.map(\.request.name)
            #expect(world.pending.isEmpty, "seed \(seed): the world never settled")
            #expect(stranded.isEmpty, "seed \(seed): \(stranded) wait with nothing under way; the run:\n\(world.log.joined(separator: "\n"))")
            #expect(world.machine.waitingCount == stranded.count, "seed \(seed)")
            if !stranded.isEmpty { return }
        }
    }
}
