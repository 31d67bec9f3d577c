// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/CallTest.kt
// (https://github.com/square/okhttp), Copyright (C) 2013 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// `CallTest`'s case of a failing call beside a healthy one on one HTTP/2 connection: a request
/// whose body fails after its head went out ends its own stream only, and the connection goes on
/// carrying the other request's body and answer.
extension OkHttpCallTests {
    /// A request body whose chunks come from `steps`, one a pull, in order; a step may wait (or
    /// make another call) before it gives its chunk, or throw. It ends after the last step.
    struct StepwiseBody: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let steps: [@Sendable () async throws -> ByteBuffer]

        struct AsyncIterator: AsyncIteratorProtocol {
            let steps: [@Sendable () async throws -> ByteBuffer]
            var next = 0

            mutating func next() async throws -> ByteBuffer? {
                guard self.next < self.steps.count else { return nil }
                defer { self.next += 1 }
                return try await self.steps[self.next]()
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(steps: self.steps) }
    }

    struct WriteBodyFailure: Error, CustomStringConvertible {
        var description: String { "write body fail!" }
    }

    // OkHttp: failingCallsDoNotInterfereWithConnection (HTTP/2 only, as in OkHttp)
    @Test func failingCallsDoNotInterfereWithConnection() async throws {
        try await Self.withMock(http2: true) { server, manager in
            server.enqueue(Self.mock(body: "Response 1"))
            server.enqueue(Self.mock(body: "Response 2"))
            let url = server.url("/")
            // OkHttp's makeFailingCall: a body of one byte whose source fails before giving it, so
            // the head goes out (a partial request) and the body does not. OkHttp turns its
            // connection retry off for it; Courier does not resend a streamed body.
            let makeFailingCall: @Sendable () async -> Void = {
                let failing = StepwiseBody(steps: [{ throw WriteBodyFailure() }])
                let error = await Self.failure {
                    try await manager.responseOfAnyStatus(
                        for: Request(method: .post, url: url, body: .stream(failing, length: .known(1))))
                }
                #expect(error != nil)
                #expect("\(String(describing: error))".contains("write body fail!"), "\(String(describing: error))")
            }
            let body = StepwiseBody(steps: [
                { ByteBuffer(string: "abc") },
                {
                    // Pulled once "abc" went out: the request's stream is open on the connection.
                    await makeFailingCall()
                    return ByteBuffer(string: "def")
                },
            ])
            let response = try await manager.responseOfAnyStatus(
                for: Request(method: .post, url: url, body: .stream(body, length: .unknown)))
            #expect(response.response.status.code == 200)
            #expect(!Self.text(response).isEmpty)
            #expect(response.metrics?.transactions.last?.networkProtocolName == "h2")
            #expect(server.server.connectionCount == 1, "the failing call's stream took the connection down")
            // The healthy request's body arrived whole.
            #expect(server.requests.contains { $0.body == Data("abcdef".utf8) })
        }
    }
}
