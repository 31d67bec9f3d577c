@testable import Courier
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

/// ``WebSocketHandshakeHandler`` on an `EmbeddedChannel`: the server's answer in, as the reads
/// bring it, and the handshake's outcome.
@Suite("WebSocket handshake handler")
struct WebSocketHandshakeHandlerTests {
    /// RFC 6455's example key, and a 101 with its accept value.
    private static let key = "dGhlIHNhbXBsZSBub25jZQ=="
    private static let switching =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"

    /// The handshake's outcome once the answer came in `reads`, one inbound buffer each: the
    /// head taken, or the error (nil if it is still waiting).
    private func outcome(_ reads: [String]) throws -> Result<HTTPResponseHead, any Error>? {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let completion = channel.eventLoop.makePromise(of: HTTPResponseHead.self)
        let settled = NIOLockedValueBox<Result<HTTPResponseHead, any Error>?>(nil)
        completion.futureResult.whenComplete { result in settled.withLockedValue { $0 = result } }
        let handler = WebSocketHandshakeHandler(
            head: HTTPRequestHead(version: .http1_1, method: .GET, uri: "/"), handshake: WebSocketHandshake(key: Self.key),
            completion: completion, makeError: { message, _, _ in CourierError(.invalidResponse, message) })
        try channel.pipeline.syncOperations.addHandler(handler)
        for read in reads {
            // A failure closes the channel: the reads after it are not taken.
            guard channel.isActive else { break }
            _ = try? channel.writeInbound(ByteBuffer(string: read))
        }
        let result = settled.withLockedValue { $0 }
        _ = try? channel.finish()
        return result
    }

    /// Interim (1xx) heads before the 101 are skipped, up to five (Go's net/http's bound), whether
    /// they come in one read or one a read.
    @Test func upToFiveInterimHeadsAreSkipped() throws {
        let interim = ["HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 102 Processing\r\n\r\n", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"]
        let five = Array((interim + interim).prefix(5))
        for reads in [[five.joined() + Self.switching], five + [Self.switching]] {
            let result = try self.outcome(reads)
            guard case .success(let head) = result else {
                Issue.record("\(reads.count) reads: \(String(describing: result))")
                continue
            }
            #expect(head.status == .switchingProtocols)
        }
    }

    /// A server that sends interim heads without end fails the handshake, clearly, past five: a
    /// read of 64 KiB of `100 Continue` heads then a 101 is refused, not taken. (Each interim head
    /// was read by a call nested in the last, 2,600 deep for such a read, and its bytes were kept
    /// until the handshake ended; the heads were taken however many came.)
    @Test func moreThanFiveInterimHeadsFailTheHandshake() throws {
        let continued = "HTTP/1.1 100 Continue\r\n\r\n"
        let cases: [[String]] = [
            [String(repeating: continued, count: 6) + Self.switching],
            Array(repeating: continued, count: 6) + [Self.switching],
            [String(repeating: continued, count: 64 * 1024 / continued.utf8.count) + Self.switching],
        ]
        for reads in cases {
            let result = try self.outcome(reads)
            guard case .failure(let error as CourierError) = result else {
                Issue.record("\(reads.count) reads: \(String(describing: result))")
                continue
            }
            #expect(error.code == .invalidResponse)
            #expect(error.message.contains("more than 5 interim (1xx) answers"), "\(error.message)")
        }
    }
}
