// Ported from AsyncHTTPClient's Tests/AsyncHTTPClientTests/HTTPClientTests.swift
// (https://github.com/swift-server/async-http-client), Copyright (c) 2018-2022 Apple Inc. and
// the AsyncHTTPClient project authors, licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import NIOCore
import Testing

/// Twins of AsyncHTTPClient's tests of a server that closes while the client holds the body back
/// (its delegate's back-pressure future, Courier's stream whose consumer has not started): a whole
/// answer and then the close is delivered whole when the body is read late, not failed by the
/// close that came meanwhile.
@Suite("Conformance: AsyncHTTPClient streaming under back-pressure")
struct AHCStreamingTests {
    /// 384 KiB: three times what a stream buffers before it stops reading, less than loopback's
    /// socket buffers (the server's write completes, and then its close, while nothing is read).
    static let body = String(repeating: "some body content ", count: 384 * 1024 / 18)

    // AHC: testCloseWhileBackpressureIsExertedIsFine (`/close-on-response`: the answer, then the
    // connection's close, while the client waits to read the body; there a short body, here one
    // that also fills the stream's buffer)
    @Test(arguments: ["some body content", Self.body])
    func aWholeAnswerClosedWhileTheBodyIsUnreadIsDeliveredWhole(_ content: String) async throws {
        let answer = "HTTP/1.1 200 OK\r\nContent-Length: \(content.utf8.count)\r\n\r\n\(content)"
        try await AHCHTTPClientTests.overHTTP1({ _, _, _ in .respond(answer, thenClose: true) }) { server, manager async throws in
            let stream = try await manager.stream(Request(url: server.baseURL.appendingPathComponent("close-on-response")))
            #expect(await server.changes.wait { server.closedConnectionCount == 1 }, "the server never closed")
            var received = Data()
            for try await chunk in stream.body { received.append(contentsOf: chunk.readableBytesView) }
            #expect(received.count == content.utf8.count)
            #expect(received == Data(content.utf8))
            #expect(stream.task.error == nil, "\(String(describing: stream.task.error))")
        }
    }
}
