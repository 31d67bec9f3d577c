@testable import Courier
import NIOCore
import NIOSOCKS
import Testing

/// ``SOCKS5StateMachine`` without I/O, event by event: what it writes, what each answer (cut
/// anywhere) does, and a typed failure for each way a proxy can go wrong.
@Suite("SOCKS5 handshake, without I/O")
struct SOCKS5StateMachineTests {
    typealias Action = SOCKS5StateMachine.Action

    static let name: [UInt8] = [0x03, 15] + Array("api.example.com".utf8) + [0x01, 0xBB]
    static let request: [UInt8] = [0x05, 0x01, 0x00] + Self.name
    static let credentials: [UInt8] = [0x01, 3] + Array("ann".utf8) + [6] + Array("s3cret".utf8)
    static let succeededV4: [UInt8] = [0x05, 0x00, 0x00, 0x01, 127, 0, 0, 1, 0x1F, 0x90]
    static let succeededV6: [UInt8] = [0x05, 0x00, 0x00, 0x04] + Array(repeating: 0, count: 15) + [1, 0x1F, 0x90]
    static let succeededName: [UInt8] = [0x05, 0x00, 0x00, 0x03, 9] + Array("localhost".utf8) + [0x00, 0x50]

    static func machine(_ target: SOCKSAddress = .domain("api.example.com", port: 443), user: String? = nil, password: String? = nil)
        throws -> SOCKS5StateMachine
    {
        try SOCKS5StateMachine(target: target, username: user, password: password)
    }

    static func feed(_ machine: inout SOCKS5StateMachine, _ bytes: [UInt8]) -> Action {
        machine.received(ByteBuffer(bytes: bytes))
    }

    /// Runs a handshake with the proxy's answers (each sent after Courier's message before it,
    /// as a proxy must), each cut into the pieces `pieces` makes of it, and returns every write and
    /// the last action.
    static func run(_ machine: inout SOCKS5StateMachine, answers: [[UInt8]], pieces: ([UInt8]) -> [[UInt8]])
        -> (writes: [[UInt8]], last: Action)
    {
        var writes: [[UInt8]] = []
        var last = machine.start()
        if case .write(let bytes) = last { writes.append(bytes) }
        for answer in answers {
            for piece in pieces(answer) {
                last = Self.feed(&machine, piece)
                if case .write(let bytes) = last { writes.append(bytes) }
            }
        }
        return (writes, last)
    }

    @Test func theGreetingOffersUsernamePasswordOnlyWithCredentials() throws {
        var plain = try Self.machine()
        #expect(plain.start() == .write([0x05, 0x01, 0x00]))
        #expect(plain.start() == .wait)
        var withCredentials = try Self.machine(user: "ann", password: "s3cret")
        #expect(withCredentials.start() == .write([0x05, 0x02, 0x00, 0x02]))
    }

    @Test func noAuthenticationThenTheRequestThenTheTunnel() throws {
        var machine = try Self.machine()
        _ = machine.start()
        #expect(Self.feed(&machine, [0x05, 0x00]) == .write(Self.request))
        #expect(Self.feed(&machine, Self.succeededV4) == .established)
        #expect(Self.feed(&machine, [1, 2, 3]) == .wait)
        #expect(machine.closed() == .wait)
        #expect(machine.timedOut(after: .seconds(1)) == .wait)
    }

    @Test func credentialsWhenTheProxyChoosesThem() throws {
        var machine = try Self.machine(user: "ann", password: "s3cret")
        _ = machine.start()
        #expect(Self.feed(&machine, [0x05, 0x02]) == .write(Self.credentials))
        #expect(Self.feed(&machine, [0x01, 0x00]) == .write(Self.request))
        #expect(Self.feed(&machine, Self.succeededV4) == .established)

        // A proxy with credentials at hand may still let Courier in without them.
        var unasked = try Self.machine(user: "ann", password: "s3cret")
        _ = unasked.start()
        #expect(Self.feed(&unasked, [0x05, 0x00]) == .write(Self.request))
    }

    @Test func theCredentialsVersionByteIsNotChecked() throws {
        var machine = try Self.machine(user: "ann", password: "s3cret")
        _ = machine.start()
        _ = Self.feed(&machine, [0x05, 0x02])
        #expect(Self.feed(&machine, [0x05, 0x00]) == .write(Self.request))
    }

    @Test(arguments: [UInt8(1), 0xFF])
    func refusedCredentialsFail(_ status: UInt8) throws {
        var machine = try Self.machine(user: "ann", password: "wrong")
        _ = machine.start()
        _ = Self.feed(&machine, [0x05, 0x02])
        #expect(Self.feed(&machine, [0x01, status]) == .fail(.socksCredentialsRefused(status: status)))
        #expect(Self.feed(&machine, Self.succeededV4) == .wait)
        #expect(machine.closed() == .wait)
    }

    @Test func anEmptyPasswordGoesAsAnEmptyField() throws {
        var machine = try Self.machine(user: "ann")
        _ = machine.start()
        #expect(Self.feed(&machine, [0x05, 0x02]) == .write([0x01, 3] + Array("ann".utf8) + [0]))
    }

    @Test func credentialsSOCKS5CannotCarryAreRefusedBeforeAnyByte() throws {
        let tooLong = String(repeating: "u", count: 256)
        for (user, password) in [("", "x"), (tooLong, "x"), ("ann", tooLong)] {
            #expect(throws: ProxyTunnelFailure.unusable("SOCKS5 carries a user name of 1 to 255 bytes and a password of at most 255")) {
                try Self.machine(user: user, password: password)
            }
        }
        let longest = String(repeating: "é", count: 127) + "e"  // 255 bytes of UTF-8
        var machine = try Self.machine(user: longest, password: longest)
        _ = machine.start()
        guard case .write(let bytes) = Self.feed(&machine, [0x05, 0x02]) else {
            Issue.record("no credentials written")
            return
        }
        #expect(bytes.count == 2 + 255 + 1 + 255)
        #expect(bytes[1] == 255 && bytes[2 + 255] == 255)
    }

    @Test func targetsAsNamesAndAddresses() throws {
        var v4 = try Self.machine(.address(try SocketAddress(ipAddress: "192.0.2.7", port: 80)))
        _ = v4.start()
        #expect(Self.feed(&v4, [0x05, 0x00]) == .write([0x05, 0x01, 0x00, 0x01, 192, 0, 2, 7, 0x00, 0x50]))
        var v6 = try Self.machine(.address(try SocketAddress(ipAddress: "::1", port: 8080)))
        _ = v6.start()
        #expect(Self.feed(&v6, [0x05, 0x00]) == .write([0x05, 0x01, 0x00, 0x04] + Array(repeating: 0, count: 15) + [1, 0x1F, 0x90]))
        #expect(throws: ProxyTunnelFailure.unusable("SOCKS5 carries host names of 1 to 255 bytes")) {
            try Self.machine(.domain(String(repeating: "a", count: 256), port: 443))
        }
        #expect(throws: ProxyTunnelFailure.unusable("the port 0 is not between 1 and 65535")) {
            try Self.machine(.domain("api.example.com", port: 0))
        }
    }

    /// Every bound address form, each of the proxy's answers cut at every offset in turn, then
    /// all of them a byte at a time: the same writes and the tunnel each time.
    @Test(arguments: [Self.succeededV4, Self.succeededV6, Self.succeededName])
    func answersCutAnywhereOpenTheSameTunnel(_ reply: [UInt8]) throws {
        let answers: [[UInt8]] = [[0x05, 0x02], [0x01, 0x00], reply]
        let expected = [[0x05, 0x02, 0x00, 0x02], Self.credentials, Self.request]
        for (index, cutAnswer) in answers.enumerated() {
            for cut in 0...cutAnswer.count {
                var machine = try Self.machine(user: "ann", password: "s3cret")
                let (writes, last) = Self.run(&machine, answers: answers) { answer in
                    answer == cutAnswer ? [Array(answer[..<cut]), Array(answer[cut...])].filter { !$0.isEmpty } : [answer]
                }
                #expect(writes == expected, "answer \(index) cut at \(cut)")
                #expect(last == .established, "answer \(index) cut at \(cut)")
            }
        }
        var machine = try Self.machine(user: "ann", password: "s3cret")
        let (writes, last) = Self.run(&machine, answers: answers) { answer in answer.map { [$0] } }
        #expect(writes == expected)
        #expect(last == .established)
    }

    @Test func methodsThatWereNotOfferedFail() throws {
        var none = try Self.machine()
        _ = none.start()
        #expect(Self.feed(&none, [0x05, 0xFF]) == .fail(.socksAuthentication(.noneAcceptable)))
        var password = try Self.machine()
        _ = password.start()
        #expect(Self.feed(&password, [0x05, 0x02]) == .fail(.socksAuthentication(.usernamePassword)))
        var gssapi = try Self.machine(user: "ann", password: "s3cret")
        _ = gssapi.start()
        #expect(Self.feed(&gssapi, [0x05, 0x01]) == .fail(.socksAuthentication(.gssapi)))
    }

    @Test func anErrorReplyFailsAsSoonAsItsCodeIsIn() throws {
        var machine = try Self.machine()
        _ = machine.start()
        _ = Self.feed(&machine, [0x05, 0x00])
        #expect(Self.feed(&machine, [0x05]) == .wait)
        #expect(Self.feed(&machine, [0x04]) == .fail(.socksReply(.hostUnreachable)))
    }

    @Test func somethingOtherThanSOCKS5FailsAtItsFirstByte() throws {
        var http = try Self.machine()
        _ = http.start()
        #expect(Self.feed(&http, Array("H".utf8)) == .fail(.invalidResponse("something that is not SOCKS5 (version byte 72)")))
        var socks4 = try Self.machine()
        _ = socks4.start()
        _ = Self.feed(&socks4, [0x05, 0x00])
        #expect(Self.feed(&socks4, [0x00, 0x5A]) == .fail(.invalidResponse("something that is not SOCKS5 (version byte 0)")))
    }

    @Test func malformedRepliesFail() throws {
        var reserved = try Self.machine()
        _ = reserved.start()
        _ = Self.feed(&reserved, [0x05, 0x00])
        #expect(Self.feed(&reserved, [0x05, 0x00, 0x07, 0x01, 0]) == .fail(.invalidResponse("a malformed SOCKS5 message (reserved byte 7)")))
        var type = try Self.machine()
        _ = type.start()
        _ = Self.feed(&type, [0x05, 0x00])
        #expect(Self.feed(&type, [0x05, 0x00, 0x00, 0x09, 0]) == .fail(.invalidResponse("a malformed SOCKS5 message (address type 9)")))
    }

    @Test func aProxyThatSpeaksOutOfTurnFails() throws {
        var early = try Self.machine()
        _ = early.start()
        #expect(Self.feed(&early, [0x05, 0x00] + Self.succeededV4)
            == .fail(.invalidResponse("10 bytes after its method selection, before Courier's next message")))
        var afterCredentials = try Self.machine(user: "ann", password: "s3cret")
        _ = afterCredentials.start()
        _ = Self.feed(&afterCredentials, [0x05, 0x02])
        #expect(Self.feed(&afterCredentials, [0x01, 0x00, 0x05])
            == .fail(.invalidResponse("1 byte after its answer to the credentials, before Courier's next message")))
        var afterReply = try Self.machine()
        _ = afterReply.start()
        _ = Self.feed(&afterReply, [0x05, 0x00])
        #expect(Self.feed(&afterReply, Self.succeededV4 + Array("early".utf8)) == .fail(.unsolicitedBytes(5)))
    }

    @Test func closeTimeoutAndErrorsEndAHandshakeUnderWay() throws {
        var closed = try Self.machine()
        _ = closed.start()
        _ = Self.feed(&closed, [0x05, 0x00])
        _ = Self.feed(&closed, [0x05, 0x00, 0x00])
        #expect(closed.closed() == .fail(.closed(received: 3)))
        #expect(closed.timedOut(after: .seconds(1)) == .wait)

        var silent = try Self.machine(user: "ann", password: "s3cret")
        _ = silent.start()
        _ = Self.feed(&silent, [0x05, 0x02])
        #expect(silent.timedOut(after: .milliseconds(250)) == .fail(.timedOut(.milliseconds(250))))
        #expect(silent.errorCaught("reset") == .wait)

        var reset = try Self.machine()
        _ = reset.start()
        #expect(reset.errorCaught("reset") == .fail(.connectionError("reset")))
        #expect(reset.closed() == .wait)
    }
}
