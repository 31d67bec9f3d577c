@testable import Courier
import Foundation
import HTTPTypes
import Testing

/// WebSockets against a peer nobody on Courier wrote: Python's `websockets` server
/// (`.ci/websocket-echo.py`), which `.ci/run` starts and names in `COURIER_WEBSOCKET_ECHO_URL`.
@Suite(
    "WebSocket against Python's websockets",
    .enabled(
        if: ProcessInfo.processInfo.environment["COURIER_WEBSOCKET_ECHO_URL"] != nil,
        "COURIER_WEBSOCKET_ECHO_URL is unset: .ci/run starts Python's websockets echo server and sets it"
    )
)
struct WebSocketRealPeerTests {
    private func url(_ path: String) throws -> URL {
        let base = try #require(ProcessInfo.processInfo.environment["COURIER_WEBSOCKET_ECHO_URL"])
        return try #require(URL(string: base + path))
    }

    @Test func echoesTextBinaryAndALargeMessageAndAnswersAPing() async throws {
        let manager = SessionManager()
        let task = manager.webSocketTask(with: Request(url: try self.url("/echo")))
        var messages = task.messages.makeAsyncIterator()
        try await task.send(.text("héllo"))
        #expect(try await messages.next() == .text("héllo"))
        try await task.send(.binary(Data([0, 255, 7])))
        #expect(try await messages.next() == .binary(Data([0, 255, 7])))
        let large = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try await task.send(.binary(large))
        #expect(try await messages.next() == .binary(large))
        // websockets agrees to permessage-deflate: messages went compressed both ways.
        let extensions = task.response?.headerFields[HTTPField.Name("Sec-WebSocket-Extensions")!] ?? ""
        #expect(extensions.hasPrefix("permessage-deflate"), "\(extensions)")
        let compressible = String(repeating: "courier and websockets ", count: 10_000)
        for _ in 0..<3 {
            try await task.send(.text(compressible))
            #expect(try await messages.next() == .text(compressible))
        }
        try await task.sendPing()
        await task.close(code: .normalClosure, reason: "done")
        #expect(try await messages.next() == nil)
        #expect(task.closeCode == .normalClosure)
        #expect(task.error == nil)
        await manager.invalidate(cancelingTasks: true)
    }

    /// An empty message after others, compressed (RFC 7692 7.2.3.6: the one byte 0x00): Python's
    /// websockets closed with 1002 when Courier sent an empty payload, and the next message never
    /// came back.
    @Test func anEmptyCompressedMessageAfterOthersIsEchoed() async throws {
        let manager = SessionManager()
        let task = manager.webSocketTask(with: Request(url: try self.url("/echo")))
        var messages = task.messages.makeAsyncIterator()
        for text in ["a", "", "", "b"] {
            try await task.send(.text(text))
            #expect(try await messages.next() == .text(text))
        }
        #expect(task.error == nil)
        await task.close(code: .normalClosure, reason: "done")
        await manager.invalidate(cancelingTasks: true)
    }

    @Test func theServerClosesFirstWithoutCompression() async throws {
        let manager = SessionManager()
        var settings = WebSocketConfiguration()
        settings.permessageDeflate = false
        let task = manager.webSocketTask(with: Request(url: try self.url("/close")), configuration: settings)
        try await task.send(.text("hi"))
        var messages = task.messages.makeAsyncIterator()
        #expect(try await messages.next() == nil)
        #expect(task.closeCode == .normalClosure)
        #expect(task.closeReason == "bye")
        #expect(task.response?.headerFields[HTTPField.Name("Sec-WebSocket-Extensions")!] == nil)
        #expect(task.error == nil)
        await manager.invalidate(cancelingTasks: true)
    }
}
