@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// A server's own reason phrase reaches the response (`200 Everything Fine`), as OkHttp's
/// `message` and curl show it, though NIO's decoder makes the status from the code alone: read by
/// ``ResponseHeadMender`` from the status line as it came, alone, then over a socket.
@Suite("HTTP/1.1 reason phrase")
struct HTTP1ReasonPhraseTests {
    static func phrase(_ line: String) -> (code: Int, phrase: String)? {
        Self.phrase(Array(line.utf8))
    }

    static func phrase(_ line: [UInt8]) -> (code: Int, phrase: String)? {
        line.withUnsafeBufferPointer { line in
            ResponseHeadMender.code(in: line).flatMap { code in ResponseHeadMender.unusualReasonPhrase(in: line, code: code).map { (code, $0) } }
        }
    }

    @Test func onlyAPhraseOtherThanTheStandardOneIsKept() {
        #expect(Self.phrase("HTTP/1.1 200 OK\r\n") == nil)
        #expect(Self.phrase("HTTP/1.1 404 Not Found\n") == nil)
        #expect(Self.phrase("HTTP/1.1 200 Everything Fine\r\n")! == (200, "Everything Fine"))
        #expect(Self.phrase("HTTP/1.0 999 Weird\n")! == (999, "Weird"))
        #expect(Self.phrase("HTTP/1.1 404 not found\r\n")! == (404, "not found"), "the server's case")
        // No phrase at all, or an empty one: NIO's standard phrase stays.
        #expect(Self.phrase("HTTP/1.1 204\r\n") == nil)
        #expect(Self.phrase("HTTP/1.1 204 \r\n") == nil)
        // A line the decoder refuses is not read.
        #expect(Self.phrase("HTTP/1.1 2x0 Odd\r\n") == nil)
        #expect(Self.phrase("HTTP/1.1 200 Unfinished") == nil)
    }

    @Test func thePhraseIsISOLatin1() {
        let line: [UInt8] = Array("HTTP/1.1 200 Caf".utf8) + [0xE9] + Array("\r\n".utf8)
        #expect(Self.phrase(line)! == (200, "Café"))
    }

    @Test func aPhraseLongerThanKeptIsLeftAsTheDecoderGivesIt() {
        let longest = "HTTP/1.1 200 " + String(repeating: "a", count: 256) + "\r\n"
        #expect(Self.phrase(longest)?.phrase.count == 256)
        let longer = "HTTP/1.1 200 " + String(repeating: "a", count: 257) + "\r\n"
        #expect(Self.phrase(longer) == nil)
    }

    /// The final head's phrase, the status line split anywhere, after an interim head; a new
    /// request forgets it.
    @Test func theFinalHeadsPhraseIsKeptWhereverTheBytesAreCut() {
        let text = "HTTP/1.1 100 Carry On\r\n\r\nHTTP/1.1 201 Made It\r\nA: b\r\n\r\nbody"
        let bytes = Array(text.utf8)
        for cut in 0...bytes.count {
            var mender = ResponseHeadMender()
            mender.expectHead()
            var held: [UInt8] = []
            for piece in [bytes[..<cut], bytes[cut...]] {
                var buffer = ByteBuffer(bytes: held + piece)
                let holdBack = mender.scan(&buffer)
                held = Array(buffer.readableBytesView.suffix(holdBack))
            }
            #expect(mender.reasonPhrase.map { "\($0.code) \($0.phrase)" } == "201 Made It", "cut at \(cut)")
            mender.expectHead()
            #expect(mender.reasonPhrase == nil)
        }
    }

    @Test func overASocketTheServersPhraseIsTheResponses() async throws {
        let script: ScriptedHTTPServer.Script = { _, request, _ in
            switch request {
            case 0: .respond("HTTP/1.1 200 Everything Fine\r\nContent-Length: 2\r\n\r\nok")
            case 1: .respond("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            default: .respond("HTTP/1.1 100 Go On\r\n\r\nHTTP/1.1 299 Quite Unusual\r\nContent-Length: 2\r\n\r\nok")
            }
        }
        try await ScriptedHTTPServer.with(script) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                for expected in ["200 Everything Fine", "200 OK", "299 Quite Unusual"] {
                    let response = try await manager.response(method: .get, urlString: "a", serializer: DataResponseSerializer())
                    #expect(response.value == Data("ok".utf8))
                    #expect("\(response.response.status.code) \(response.response.status.reasonPhrase)" == expected)
                    let transaction = try #require(response.metrics?.transactions.last)
                    let head = "HTTP/1.1 \(expected)\r\nContent-Length: 2\r\n\r\n"
                    #expect(transaction.countOfResponseHeaderBytesReceived == Int64(head.utf8.count), "\(expected)")
                }
                #expect(server.connectionCount == 1, "the connection was reused")
            }
        }
    }
}
