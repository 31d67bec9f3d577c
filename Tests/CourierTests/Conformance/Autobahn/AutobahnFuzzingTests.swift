// Ported from the Autobahn testsuite's fuzzing server cases
// (autobahntestsuite/autobahntestsuite/case/*.py; https://github.com/crossbario/autobahn-testsuite),
// Copyright (c) Tavendo GmbH / Crossbar.io (typedef int GmbH), licensed under the Apache License,
// Version 2.0.

@testable import Courier
import Foundation
import Testing

/// The Autobahn cases that ``AutobahnClientTests`` (every frame written right behind the 101)
/// leaves out because they depend on how and when the server writes, over real sockets: an
/// ``AutobahnFuzzingServer`` writes each case's frames as the case does (chopped into writes of
/// `chopsize` bytes, one write a frame for `sync = True`, parts with the case's waits between
/// them), speaks `permessage-deflate` for 12.x and 13.x, and judges the events and the closing
/// handshake as the case's `onConnectionLost` does; Courier is Autobahn's echo client, a
/// ``WebSocketTask`` that sends back every message it receives (text as text, binary as binary)
/// until the connection closes. A case passes with Autobahn's `OK` or `NON-STRICT` and a close
/// judged `OK` (`INFORMATIONAL` cases with any verdict); the client must also break no rule of
/// RFC 6455 or 7692 in what it sends. With `COURIER_AUTOBAHN_REPORT` set, each case's verdict is
/// printed, a line a case.
///
/// Where a case waits (`continueLater(1, …)`), the port waits for an event instead: for the
/// client's answer to a PING (``AutobahnFuzzingServer/probe(_:)``, which proves the client read
/// everything before it and kept the connection open) where a control frame may go between two
/// frames, and for at most 100 ms where the wait is inside one frame (6.4.3, 6.4.4). A case's
/// `closeAfter` and `killAfter` timers are its events: the server closes as soon as the events
/// match, and drops the connection only if it has not ended after 10 s (a failed case).
///
/// Here: 1.1.8 and 1.2.8 (64 KiB in chops of 997), 2.6 and 2.11 (PINGs a byte a write), 3.3,
/// 3.4, 4.1.5 and 4.2.5 (synchronised or a byte a write), 5.4, 5.5, 5.7, 5.8, 5.10, 5.11, 5.13,
/// 5.14 (the synchronised and byte-wise twins of 5.3, 5.6, 5.9 and 5.12), 5.17, 5.19 and 5.20
/// (the second half only once the first PING was answered), 6.4.1-6.4.4 (fail-fast on invalid
/// UTF-8), 7.1.6 and 7.13.x (informational), 12.1.x, 12.2.x and 13.1.x-13.7.x. Not ported: 9.x
/// (performance: messages up to 16 MiB and a thousand round trips each), 12.3-12.5 (the shapes
/// of 12.1 and 12.2 on other files), and 12.x's and 13.x's sizes past 64 KiB and their counts
/// (each row runs 10 round trips of Autobahn's 1,000, on generated text and bytes in the place
/// of Autobahn's `data1.json` and `lena512.bmp`).
@Suite("Conformance: Autobahn testsuite, client cases over a fuzzing server")
struct AutobahnFuzzingTests {
    typealias Server = AutobahnFuzzingServer
    typealias Event = AutobahnFuzzingServer.Event
    typealias Expectation = AutobahnFuzzingServer.Expectation
    typealias ExpectedClose = AutobahnFuzzingServer.ExpectedClose

    /// One Autobahn case: what the server sends (and when), and what the case expects.
    struct Row: Sendable, CustomTestStringConvertible {
        /// The case's id ("5.9", "6.4.1", "7.5.1"…).
        var id: String
        var expectation: Expectation
        var compression: Server.Compression?
        /// Autobahn's `INFORMATIONAL` cases: any outcome passes, as long as the connection ends
        /// and the client breaks no rule.
        var informational = false
        /// The client's ``WebSocketConfiguration/maximumMessageSize``; nil for the default.
        var maximumMessageSize: Int?
        var script: @Sendable (Server) async -> Void

        var testDescription: String { "Autobahn \(self.id)" }
    }

    // MARK: Expectations

    static let normalClose = ExpectedClose(closedByMe: true, codes: [1000], requireClean: true)

    /// The client fails the connection with `code` (`closedByMe: False, requireClean: False`).
    static func failure(_ code: UInt16, fatal: Bool = false) -> ExpectedClose {
        ExpectedClose(closedByMe: false, codes: [code], requireClean: false, closedByWrongEndpointIsFatal: fatal)
    }

    static func ok(_ events: [Event], _ close: ExpectedClose = normalClose, suppressClose: Bool = false) -> Expectation {
        Expectation(expected: [(.ok, events)], close: close, suppressClose: suppressClose)
    }

    /// `expected[Case.OK]` and `expected[Case.NON_STRICT]`.
    static func okOrNonStrict(_ ok: [Event], _ nonStrict: [Event], _ close: ExpectedClose) -> Expectation {
        Expectation(expected: [(.ok, ok), (.nonStrict, nonStrict)], close: close)
    }

    static func text(_ string: String) -> Event { .message(Array(string.utf8), binary: false) }
    static func bytes(_ string: String) -> [UInt8] { Array(string.utf8) }

    static func frame(_ opcode: UInt8, _ payload: [UInt8] = [], fin: Bool = true, rsv: UInt8 = 0) -> [UInt8] {
        Server.frame(opcode: opcode, payload: payload, fin: fin, rsv: rsv)
    }

    /// Autobahn's `sendMessage(payload, fragmentSize = size)`: frames of `size` bytes.
    static func fragments(_ opcode: UInt8, _ payload: [UInt8], size: Int) -> [[UInt8]] {
        stride(from: 0, to: max(payload.count, 1), by: size).map { start in
            let end = min(payload.count, start + size)
            return Self.frame(start == 0 ? opcode : 0x0, Array(payload[start..<end]), fin: end == payload.count)
        }
    }

    /// The case's frames, all in one write (Autobahn's frames sent back to back).
    static func sends(_ frames: [[UInt8]]) -> @Sendable (Server) async -> Void {
        { server in await server.sendFrames(frames) }
    }

    /// The case's frames each in its own write (`sync = True`).
    static func syncSends(_ frames: [[UInt8]]) -> @Sendable (Server) async -> Void {
        { server in
            for frame in frames { await server.write(frame) }
        }
    }

    /// The case's frames each in chops of one byte (`chopsize = 1`).
    static func choppedSends(_ frames: [[UInt8]], chopsize: Int = 1) -> @Sendable (Server) async -> Void {
        { server in
            for frame in frames { await server.write(frame, chopsize: chopsize) }
        }
    }

    // MARK: Running a case

    /// Courier as Autobahn's echo client: every message goes back as it came, until the end.
    static func echo(_ task: WebSocketTask) async {
        do {
            for try await message in task.messages {
                // A send after the connection failed fails; the messages then end.
                try? await task.send(message)
            }
        } catch {
            // The task's error: judged by the server's record.
        }
    }

    static var settings: WebSocketConfiguration {
        var settings = WebSocketConfiguration()
        settings.pingInterval = nil
        return settings
    }

    /// Runs one case: the echo client against the fuzzing server, then the case's verdict.
    /// The client's settings for `row`: ``settings``, with the row's maximum message size.
    static func settings(for row: Row) -> WebSocketConfiguration {
        var settings = Self.settings
        if let maximum = row.maximumMessageSize { settings.maximumMessageSize = maximum }
        return settings
    }

    static func run(_ row: Row, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await Server.with(compression: row.compression, expectation: row.expectation) { server in
            let manager = SessionManager(configuration: .default)
            let task = manager.webSocketTask(with: Request(url: server.url), configuration: Self.settings(for: row))
            task.resume()
            async let echo: Void = Self.echo(task)
            #expect(await server.waitUntilOpen(), sourceLocation: sourceLocation)
            await row.script(server)
            await server.waitForEnd()
            await task.waitUntilFinished()
            await echo
            await manager.invalidate(cancelingTasks: true)

            let verdict = server.verdict(row.expectation)
            // Autobahn's report, a line a case, with `COURIER_AUTOBAHN_REPORT` set.
            if ProcessInfo.processInfo.environment["COURIER_AUTOBAHN_REPORT"] != nil { print("Autobahn \(row.id): \(verdict)") }
            #expect(server.violations.isEmpty, "\(server.violations)", sourceLocation: sourceLocation)
            if row.compression != nil {
                // Courier compresses every message once `permessage-deflate` is agreed: RSV1 on
                // each message's first frame. (A case where Courier fails the connection may
                // leave it nothing to echo.)
                let firstFrames = server.frames.filter { $0.opcode == 0x1 || $0.opcode == 0x2 }
                let echoedSome = !firstFrames.isEmpty || !row.expectation.close.closedByMe
                let allCompressed = firstFrames.allSatisfy { $0.rsv == 0b100 }
                #expect(echoedSome && allCompressed, "\(row.id)", sourceLocation: sourceLocation)
            }
            guard !row.informational else { return }
            #expect([.ok, .nonStrict].contains(verdict.behavior), "\(row.id): \(verdict)", sourceLocation: sourceLocation)
            #expect(verdict.behaviorClose == .ok, "\(row.id): \(verdict)", sourceLocation: sourceLocation)
            // Courier's side of it: a closing handshake the server began ends the task without
            // an error; a connection Courier failed ends it with one, and the code it sent.
            let close = row.expectation.close
            if close.closedByMe && close.requireClean {
                #expect(task.error == nil, "\(row.id): \(String(describing: task.error))", sourceLocation: sourceLocation)
            } else if !close.closedByMe {
                #expect(task.error != nil, "\(row.id)", sourceLocation: sourceLocation)
                #expect(
                    task.closeCode.map { close.codes.contains($0.rawValue) } == true, "\(row.id): \(String(describing: task.closeCode))",
                    sourceLocation: sourceLocation)
            }
        }
    }

    // MARK: Chopped, synchronised and paced variants

    static let hello = bytes("Hello, world!")
    static func f(_ n: Int) -> [UInt8] { bytes("fragment\(n)") }

    typealias How = @Sendable ([[UInt8]]) -> @Sendable (Server) async -> Void

    /// A message echoed, then a frame that fails the connection, then a PING that must not be
    /// answered. NON-STRICT (no echo) is what Courier mostly earns, and Autobahn accepts it: the
    /// echo is the application's, and the bad frame behind the message fails the connection
    /// before the consumer's task has sent it back.
    static func echoThenFail(_ id: String, _ bad: [UInt8], how: How) -> Row {
        Row(id: id, expectation: okOrNonStrict([text("Hello, world!")], [], failure(1002)), script: how([frame(0x1, hello), bad, frame(0x9)]))
    }

    /// The cases whose frames `AutobahnClientTests` sends in one write right behind the 101 (or
    /// not at all), here written as Autobahn writes them: in chops (`chopsize`), one write a
    /// frame (`sync = True`), or in two parts with the wait between (5.19, 5.20).
    static let variantRows: [Row] = {
        let ways: [How] = [{ sends($0) }, { syncSends($0) }, { choppedSends($0) }]
        var rows: [Row] = [(1, UInt8(0x1), UInt8(ascii: "*")), (2, UInt8(0x2), UInt8(0xFE))].map { group, opcode, byte in
            let payload = [UInt8](repeating: byte, count: 65536)
            return Row(
                id: "1.\(group).8", expectation: ok([.message(payload, binary: opcode == 0x2)]),
                script: { await $0.sendFrame(opcode: opcode, payload: payload, chopsize: 997) })
        }
        rows += [
            Row(id: "2.6", expectation: ok([.pong(.init(repeating: 0xFE, count: 125))]),
                script: choppedSends([frame(0x9, .init(repeating: 0xFE, count: 125))])),
            Row(id: "2.11", expectation: ok((0..<10).map { .pong(bytes("payload-\($0)")) }),
                script: choppedSends((0..<10).map { frame(0x9, bytes("payload-\($0)")) })),
            echoThenFail("3.3", frame(0x1, hello, rsv: 3), how: ways[1]),
            echoThenFail("3.4", frame(0x1, hello, rsv: 4), how: ways[2]),
            echoThenFail("4.1.5", frame(0x7, hello), how: ways[2]),
            echoThenFail("4.2.5", frame(0xF, hello), how: ways[2]),
        ]
        for (index, how) in ways.enumerated().dropFirst() {
            rows.append(Row(id: "5.\(3 + index)", expectation: ok([text("fragment1fragment2")]), script: how([frame(0x1, f(1), fin: false), frame(0x0, f(2))])))
            rows.append(
                Row(
                    id: "5.\(6 + index)", expectation: ok([.pong(bytes("ping payload")), text("fragment1fragment2")]),
                    script: how([frame(0x1, f(1), fin: false), frame(0x9, bytes("ping payload")), frame(0x0, f(2))])))
            rows.append(
                Row(
                    id: "5.\(9 + index)", expectation: ok([], failure(1002)),
                    script: how([frame(0x0, bytes("non-continuation payload")), frame(0x1, hello)])))
            rows.append(
                Row(
                    id: "5.\(12 + index)", expectation: ok([], failure(1002)),
                    script: how([frame(0x0, bytes("non-continuation payload"), fin: false), frame(0x1, hello)])))
        }
        rows.append(
            Row(
                id: "5.17", expectation: ok([], failure(1002)),
                script: sends(Array(repeating: [frame(0x0, f(1)), frame(0x1, f(2), fin: false), frame(0x0, f(3))], count: 2).flatMap { $0 })))
        // 5.19, 5.20: the first PING must be answered before the message's last fragment comes
        // (Autobahn waits 1 s; here the second part goes once the PONG came).
        for (index, how) in ways.prefix(2).enumerated() {
            let ping1 = bytes("pongme 1!")
            let ping2 = bytes("pongme 2!")
            rows.append(
                Row(
                    id: "5.\(19 + index)", expectation: ok([.pong(ping1), .pong(ping2), text("fragment1fragment2fragment3fragment4fragment5")]),
                    script: { server in
                        await how([frame(0x1, f(1), fin: false), frame(0x0, f(2), fin: false), frame(0x9, ping1)])(server)
                        let answered = await server.wait { $0.events.contains(.pong(ping1)) || $0.isConnectionClosed }
                        guard answered, !server.isConnectionClosed else { return }
                        await how([frame(0x0, f(3), fin: false), frame(0x0, f(4), fin: false), frame(0x9, ping2), frame(0x0, f(5))])(server)
                    }))
        }
        return rows
    }()

    @Test(arguments: Self.variantRows)
    func variants(_ row: Row) async throws { try await Self.run(row) }

    // MARK: 6.4 Fail-fast on invalid UTF-8

    /// κόσμε
    static let kosme: [UInt8] = [0xCE, 0xBA, 0xE1, 0xBD, 0xB9, 0xCF, 0x83, 0xCE, 0xBC, 0xCE, 0xB5]
    /// 6.4.1's parts: κόσμε, 0x110000 in UTF-8's scheme (invalid exactly on its second byte), "edited".
    static let part641: [[UInt8]] = [kosme, [0xF4, 0x90, 0x80, 0x80], bytes("edited")]
    /// 6.4.2's parts: the same message cut after the byte that breaks it (its 13th).
    static let part642: [[UInt8]] = [kosme + [0xF4], [0x90], [0x80, 0x80] + bytes("edited")]

    /// 6.4.x: the first part, a wait, the part that breaks UTF-8, a wait, the rest. OK: the
    /// client fails the connection at the second part (fail fast); NON-STRICT: only once the
    /// message is whole.
    static func failFast(_ id: String, _ parts: [[UInt8]], inOneFrame: Bool) -> Row {
        let expectation = Expectation(expected: [(.ok, [.timeout("A")]), (.nonStrict, [.timeout("A"), .timeout("B")])], close: failure(1007, fatal: true))
        if !inOneFrame {
            return Row(id: id, expectation: expectation) { server in
                await server.sendFrame(opcode: 0x1, payload: parts[0], fin: false)
                guard await server.probe("A") else { return }
                await server.sendFrame(opcode: 0x0, payload: parts[1], fin: false)
                guard await server.probe("B") else { return }
                await server.sendFrame(opcode: 0x0, payload: parts[2])
            }
        }
        // One frame, written in three chops: no PING fits between them, so the waits are pauses.
        let whole = frame(0x1, parts.flatMap { $0 })
        let headerSize = whole.count - parts.flatMap { $0 }.count
        let first = headerSize + parts[0].count
        let second = first + parts[1].count
        return Row(id: id, expectation: expectation) { server in
            await server.write(Array(whole[..<first]))
            guard await server.pause(.milliseconds(100), "A") else { return }
            await server.write(Array(whole[first..<second]))
            guard await server.pause(.milliseconds(100), "B") else { return }
            await server.write(Array(whole[second...]))
        }
    }

    static let failFastRows: [Row] = [
        failFast("6.4.1", part641, inOneFrame: false),
        failFast("6.4.2", part642, inOneFrame: false),
        // NON-STRICT: swift-nio's frame decoder hands Courier a frame once it is whole, so the
        // bad text inside a frame is seen at the frame's end, not at the byte that breaks it.
        failFast("6.4.3", part641, inOneFrame: true),
        failFast("6.4.4", part642, inOneFrame: true),
    ]

    @Test(arguments: Self.failFastRows)
    func failFast(_ row: Row) async throws { try await Self.run(row) }

    // MARK: 7 Close handling, informational

    static func closeRow(_ id: String, code: UInt16?, reason: [UInt8] = [], expected: ExpectedClose) -> Row {
        Row(id: id, expectation: ok([], expected, suppressClose: true)) { await $0.sendClose(code, reason: reason) }
    }

    static let informationalRows: [Row] = {
        var rows = [
            // A 256 KiB message, a small one, the close and a PING back to back; Courier echoes
            // what it read before the close if its consumer ran before the close came.
            Row(
                id: "7.1.6", expectation: okOrNonStrict([text("Hello World!")], [], normalClose), informational: true,
                script: { server in
                    let pattern = bytes("BAsd7&jh23")
                    let large = (0..<(256 << 10)).map { pattern[$0 % pattern.count] }
                    await server.sendClose(1000, before: [frame(0x1, large), frame(0x1, bytes("Hello World!"))], after: [frame(0x9)])
                })
        ]
        // Codes past 4999; Courier fails the connection with 1002.
        for (index, code) in [5000, 65535].enumerated() {
            let expected = ExpectedClose(closedByMe: true, codes: [1000, UInt16(code), 1002], requireClean: false)
            var row = closeRow("7.13.\(index + 1)", code: UInt16(code), expected: expected)
            row.informational = true
            rows.append(row)
        }
        return rows
    }()

    @Test(arguments: Self.informationalRows)
    func informational(_ row: Row) async throws { try await Self.run(row) }
}
