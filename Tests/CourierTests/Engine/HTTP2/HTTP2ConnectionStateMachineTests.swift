@testable import Courier
import Foundation
import NIOCore
import NIOHTTP2
import Testing

/// ``HTTP2ConnectionStateMachine`` without I/O: events in, actions out, time as arguments.
@Suite("HTTP/2 connection state machine")
struct HTTP2ConnectionStateMachineTests {
    typealias Machine = HTTP2ConnectionStateMachine

    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
    static func at(_ seconds: Int64) -> NIODeadline { Self.start + .seconds(seconds) }

    /// idle 60 s, PING after 30 s of silence, answer within 10 s.
    static func machine(idle: Int64 = 60, ping: Int64 = 30, pingTimeout: Int64 = 10) -> Machine {
        Machine(configuration: .init(idleTimeout: .seconds(idle), pingInterval: .seconds(ping), pingTimeout: .seconds(pingTimeout)))
    }

    static func settings(_ maximum: Int?) -> HTTP2Frame.FramePayload {
        .settings(.settings(maximum.map { [HTTP2Setting(parameter: .maxConcurrentStreams, value: $0)] } ?? []))
    }

    static func goAway(_ lastStreamID: HTTP2StreamID) -> HTTP2Frame.FramePayload {
        .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: nil)
    }

    /// An attached machine whose connection just became idle at `start`.
    static func idleMachine(idle: Int64 = 60, ping: Int64 = 30, pingTimeout: Int64 = 10) -> Machine {
        var machine = Self.machine(idle: idle, ping: ping, pingTimeout: pingTimeout)
        _ = machine.attached()
        return machine
    }

    // MARK: Before and after the pool attaches

    @Test func settingsBeforeAttachmentAreReportedOnAttachmentWithTheLastMaximum() {
        var machine = Self.machine()
        #expect(machine.received(Self.settings(10), now: Self.start) == .none)
        // A later SETTINGS without the parameter keeps the earlier value.
        #expect(machine.received(Self.settings(nil), now: Self.start) == .none)
        #expect(machine.attached() == .reportMaximumStreams(10))
        #expect(machine.attached() == .none, "attached once")
    }

    @Test func attachmentWithNothingReceivedReportsNothing() {
        var machine = Self.machine()
        #expect(machine.attached() == .none)
        // The SETTINGS that come later are reported as they come.
        #expect(machine.received(Self.settings(nil), now: Self.start) == .reportMaximumStreams(nil))
        #expect(machine.received(Self.settings(5), now: Self.start) == .reportMaximumStreams(5))
    }

    /// A server that never sends its SETTINGS (RFC 9113 3.4: its first frame) leaves the
    /// connection counted as connecting, and the pool opens no other to the host: it is closed
    /// once the SETTINGS timeout (the connect timeout) has passed since the pool counted it. It
    /// waited for as long as the server kept the socket open.
    @Test func aServerThatSendsNoSettingsIsClosedAfterTheSettingsTimeout() {
        var silent = Machine(configuration: .init(idleTimeout: .seconds(60), pingInterval: .seconds(30), pingTimeout: .seconds(10), settingsTimeout: .seconds(5)))
        #expect(silent.attached(now: Self.start) == .scheduleIdleCheck(at: Self.at(5)))
        #expect(silent.idleCheckFired(now: Self.at(4)) == .scheduleIdleCheck(at: Self.at(5)), "early: checked again at the deadline")
        #expect(silent.idleCheckFired(now: Self.at(5)) == .close(.noSettings))
        #expect(silent.isClosed)

        var answering = Machine(configuration: .init(idleTimeout: .seconds(60), pingInterval: .seconds(30), pingTimeout: .seconds(10), settingsTimeout: .seconds(5)))
        #expect(answering.attached(now: Self.start) == .scheduleIdleCheck(at: Self.at(5)))
        #expect(answering.received(Self.settings(100), now: Self.at(1)) == .reportMaximumStreams(100))
        #expect(answering.idleCheckFired(now: Self.at(5)) == .none, "its SETTINGS came: nothing is due")
        #expect(!answering.isClosed)

        var early = Self.machine()
        _ = early.received(Self.settings(nil), now: Self.start)
        #expect(early.attached(now: Self.start) == .reportMaximumStreams(nil), "SETTINGS before the pool counted it: no deadline")
    }

    @Test func theServersHeaderListLimitIsKeptWhateverTheLifecycle() {
        var machine = Self.machine()
        #expect(machine.peerMaximumHeaderListSize == nil)
        let limit: HTTP2Frame.FramePayload = .settings(.settings([HTTP2Setting(parameter: .maxHeaderListSize, value: 8000)]))
        #expect(machine.received(limit, now: Self.start) == .none)
        #expect(machine.peerMaximumHeaderListSize == 8000)
        #expect(machine.attached() == .reportMaximumStreams(nil))
        // A later SETTINGS without it keeps it; one with it changes it, draining or not.
        _ = machine.received(Self.settings(5), now: Self.start)
        #expect(machine.peerMaximumHeaderListSize == 8000)
        _ = machine.received(Self.goAway(HTTP2StreamID(1)), now: Self.start)
        _ = machine.received(.settings(.settings([HTTP2Setting(parameter: .maxHeaderListSize, value: 300)])), now: Self.start)
        #expect(machine.peerMaximumHeaderListSize == 300)
    }

    /// The frame size a request's header block may take: 16 KiB until the server says more
    /// (RFC 9113 6.5.2), then the server's last value, draining or not.
    @Test func theServersFrameSizeIsKeptWhateverTheLifecycle() {
        var machine = Self.machine()
        #expect(machine.peerMaximumFrameSize == 16_384)
        let large: HTTP2Frame.FramePayload = .settings(.settings([HTTP2Setting(parameter: .maxFrameSize, value: 1 << 20)]))
        #expect(machine.received(large, now: Self.start) == .none)
        #expect(machine.peerMaximumFrameSize == 1 << 20)
        _ = machine.attached()
        _ = machine.received(Self.settings(5), now: Self.start)
        #expect(machine.peerMaximumFrameSize == 1 << 20, "a SETTINGS without it keeps it")
        _ = machine.received(Self.goAway(HTTP2StreamID(1)), now: Self.start)
        _ = machine.received(.settings(.settings([HTTP2Setting(parameter: .maxFrameSize, value: 20_000)])), now: Self.start)
        #expect(machine.peerMaximumFrameSize == 20_000)
    }

    /// `SETTINGS_ENABLE_PUSH` 1 from a server is a connection error (RFC 9113 6.5.2), before the
    /// pool attaches or after; 0 is allowed, and once closed nothing more happens.
    @Test func aServerThatEnablesPushIsAProtocolError() {
        let push = { (value: Int) -> HTTP2Frame.FramePayload in .settings(.settings([HTTP2Setting(parameter: .enablePush, value: value)])) }
        var machine = Self.machine()
        #expect(machine.received(push(1), now: Self.start) == .close(.serverEnabledPush))
        #expect(machine.attached() == .none)
        #expect(machine.received(push(1), now: Self.start) == .none, "closed once")

        machine = Self.machine()
        _ = machine.attached()
        #expect(machine.received(push(0), now: Self.start) == .reportMaximumStreams(nil))
        #expect(machine.received(push(1), now: Self.start) == .close(.serverEnabledPush))
        #expect(machine.errorCaught() == .none)
    }

    @Test func aSettingsAcknowledgementIsNotTheServersSettings() {
        var machine = Self.machine()
        _ = machine.attached()
        #expect(machine.received(.settings(.ack), now: Self.start) == .none)
    }

    @Test func aGoAwayBeforeAttachmentDrainsOnAttachmentWithTheLowestLastStream() {
        var machine = Self.machine()
        _ = machine.received(Self.settings(10), now: Self.start)
        _ = machine.received(Self.goAway(7), now: Self.start)
        _ = machine.received(Self.goAway(9), now: Self.start)
        _ = machine.received(Self.goAway(3), now: Self.start)
        #expect(machine.attached() == .drain(lastStreamID: 3))
        // Draining: SETTINGS no longer matter.
        #expect(machine.received(Self.settings(1), now: Self.start) == .none)
    }

    // MARK: GOAWAY

    @Test func theFirstGoAwayDrainsAndALaterOneOnlyLowersTheLastStream() {
        var machine = Self.idleMachine()
        #expect(machine.received(Self.goAway(.maxID), now: Self.start) == .drain(lastStreamID: .maxID))
        #expect(machine.received(Self.goAway(11), now: Self.start) == .lowerLastStreamID(11))
        #expect(machine.received(Self.goAway(13), now: Self.start) == .none, "the server may not raise it")
        #expect(machine.received(Self.goAway(11), now: Self.start) == .none)
    }

    @Test func aDrainingConnectionIsNeitherPingedNorClosedForIdleness() {
        var machine = Self.idleMachine()
        _ = machine.received(Self.goAway(1), now: Self.start)
        // The pool closes it once its streams end.
        #expect(machine.becameIdle(now: Self.start) == .none)
        #expect(machine.idleCheckFired(now: Self.at(100)) == .none)
    }

    // MARK: Idle and PING

    @Test func anIdleConnectionIsPingedAfterTheIntervalAndKeptWhenAnswered() {
        var machine = Self.idleMachine()
        #expect(machine.becameIdle(now: Self.start) == .scheduleIdleCheck(at: Self.at(30)))
        guard case .sendPing(let payload, let checkAt) = machine.idleCheckFired(now: Self.at(30)) else {
            Issue.record("no PING")
            return
        }
        #expect(checkAt == Self.at(40), "the answer's deadline")
        // The ACK (any frame) is liveness: the next PING is due 30 s after it, at the idle timeout,
        // which wins the tie.
        #expect(machine.received(.ping(payload, ack: true), now: Self.at(31)) == .none)
        #expect(machine.idleCheckFired(now: Self.at(40)) == .scheduleIdleCheck(at: Self.at(60)))
        #expect(machine.idleCheckFired(now: Self.at(60)) == .closeIfStillIdle)
    }

    @Test func aPingWithoutAnAnswerClosesTheConnection() {
        var machine = Self.idleMachine()
        _ = machine.becameIdle(now: Self.start)
        guard case .sendPing(_, let checkAt) = machine.idleCheckFired(now: Self.at(30)) else {
            Issue.record("no PING")
            return
        }
        #expect(machine.idleCheckFired(now: checkAt) == .close(.pingTimeout))
        #expect(machine.isClosed)
        #expect(machine.errorCaught() == .none, "closed once")
    }

    @Test func anyReadIsAnAnswer() {
        var machine = Self.idleMachine()
        _ = machine.becameIdle(now: Self.start)
        guard case .sendPing = machine.idleCheckFired(now: Self.at(30)) else {
            Issue.record("no PING")
            return
        }
        // The check scheduled at 40 is sooner than anything due now.
        #expect(machine.readCompleted(now: Self.at(35)) == .none)
        #expect(machine.idleCheckFired(now: Self.at(40)) == .scheduleIdleCheck(at: Self.at(60)))
    }

    @Test func anAnswerBringsTheNextPingForward() {
        // PING every 5 s, 10 s for the answer: the check at the answer's deadline is too late.
        var machine = Self.idleMachine(ping: 5, pingTimeout: 10)
        #expect(machine.becameIdle(now: Self.start) == .scheduleIdleCheck(at: Self.at(5)))
        guard case .sendPing(let payload, let checkAt) = machine.idleCheckFired(now: Self.at(5)) else {
            Issue.record("no PING")
            return
        }
        #expect(checkAt == Self.at(15))
        #expect(machine.received(.ping(payload, ack: true), now: Self.at(6)) == .none)
        #expect(machine.readCompleted(now: Self.at(6)) == .scheduleIdleCheck(at: Self.at(11)))
        guard case .sendPing = machine.idleCheckFired(now: Self.at(11)) else {
            Issue.record("no PING at 11")
            return
        }
    }

    @Test func theIntervalCountsFromTheLastFrameReceived() {
        var machine = Self.idleMachine()
        #expect(machine.becameIdle(now: Self.start) == .scheduleIdleCheck(at: Self.at(30)))
        _ = machine.received(.windowUpdate(windowSizeIncrement: 1), now: Self.at(20))
        // Due at 20 + 30: the check at 30 only reschedules.
        #expect(machine.idleCheckFired(now: Self.at(30)) == .scheduleIdleCheck(at: Self.at(50)))
        guard case .sendPing = machine.idleCheckFired(now: Self.at(50)) else {
            Issue.record("no PING at 50")
            return
        }
    }

    @Test func aPingIntervalAtOrAboveTheIdleTimeoutNeverFires() {
        var machine = Self.idleMachine(idle: 60, ping: 60)
        #expect(machine.becameIdle(now: Self.start) == .scheduleIdleCheck(at: Self.at(60)))
        #expect(machine.idleCheckFired(now: Self.at(60)) == .closeIfStillIdle)

        var longer = Self.idleMachine(idle: 60, ping: 90)
        #expect(longer.becameIdle(now: Self.start) == .scheduleIdleCheck(at: Self.at(60)))
        #expect(longer.idleCheckFired(now: Self.at(60)) == .closeIfStillIdle)
    }

    @Test func aBusyConnectionIsNotPingedAndGetsAFreshIdleClock() {
        var machine = Self.idleMachine()
        #expect(machine.becameIdle(now: Self.start) == .scheduleIdleCheck(at: Self.at(30)))
        machine.becameBusy()
        #expect(machine.idleCheckFired(now: Self.at(30)) == .none, "busy: nothing due, nothing scheduled")
        #expect(machine.becameIdle(now: Self.at(45)) == .scheduleIdleCheck(at: Self.at(75)))
    }

    @Test func oneCheckAtATime() {
        var machine = Self.idleMachine()
        #expect(machine.becameIdle(now: Self.start) == .scheduleIdleCheck(at: Self.at(30)))
        machine.becameBusy()
        // Idle again before the check fired: it is still scheduled, earlier than needed now.
        #expect(machine.becameIdle(now: Self.at(10)) == .none)
        #expect(machine.idleCheckFired(now: Self.at(30)) == .scheduleIdleCheck(at: Self.at(40)))
    }

    @Test func aPingAlreadySentStillTimesOutWhenAStreamOpens() {
        var machine = Self.idleMachine()
        _ = machine.becameIdle(now: Self.start)
        guard case .sendPing(_, let checkAt) = machine.idleCheckFired(now: Self.at(30)) else {
            Issue.record("no PING")
            return
        }
        machine.becameBusy()
        #expect(machine.idleCheckFired(now: checkAt) == .close(.pingTimeout))
    }

    @Test func eachPingHasItsOwnPayload() {
        var machine = Self.idleMachine(idle: 600)
        _ = machine.becameIdle(now: Self.start)
        guard case .sendPing(let first, _) = machine.idleCheckFired(now: Self.at(30)) else {
            Issue.record("no first PING")
            return
        }
        _ = machine.received(.ping(first, ack: true), now: Self.at(31))
        #expect(machine.idleCheckFired(now: Self.at(40)) == .scheduleIdleCheck(at: Self.at(61)))
        guard case .sendPing(let second, _) = machine.idleCheckFired(now: Self.at(61)) else {
            Issue.record("no second PING")
            return
        }
        #expect(first != second)
    }

    @Test func nothingIsScheduledBeforeAttachment() {
        var machine = Self.machine()
        #expect(machine.becameIdle(now: Self.start) == .none)
    }

    // MARK: The end

    @Test func aConnectionErrorClosesOnce() {
        var machine = Self.idleMachine()
        #expect(machine.errorCaught() == .close(.connectionError))
        #expect(machine.errorCaught() == .none)
    }

    @Test func nothingHappensAfterTheChannelClosed() {
        var machine = Self.idleMachine()
        _ = machine.becameIdle(now: Self.start)
        machine.channelInactive()
        #expect(machine.idleCheckFired(now: Self.at(30)) == .none)
        #expect(machine.received(Self.settings(3), now: Self.at(30)) == .none)
        #expect(machine.received(Self.goAway(1), now: Self.at(30)) == .none)
        #expect(machine.becameIdle(now: Self.at(31)) == .none)
    }

    // MARK: Configuration

    @Test func theEngineConfigurationIsClampedAndMapped() {
        var engine = NIOEngine.Configuration()
        #expect(engine.http2PingInterval == 30)
        #expect(engine.http2PingTimeout == 10)
        engine.http2PingInterval = -1
        engine.http2PingTimeout = .nan
        let clamped = Machine.Configuration(engine, idleTimeout: .seconds(60))
        #expect(clamped.pingInterval == .milliseconds(1))
        #expect(clamped.pingTimeout == .seconds(10))
        #expect(clamped.idleTimeout == .seconds(60))
        engine.http2PingInterval = .infinity
        #expect(Machine.Configuration(engine, idleTimeout: .seconds(60)).pingInterval == .seconds(1_000_000_000))

        var session = SessionConfiguration.default
        session.http2PingInterval = 2
        session.http2PingTimeout = 0.5
        let pool = ConnectionPool.Settings(NIOEngine.Configuration(session))
        #expect(pool.http2.pingInterval == .seconds(2))
        #expect(pool.http2.pingTimeout == .milliseconds(500))
    }
}
