// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/internal/http2/HttpOverHttp2Test.kt
// (https://github.com/square/okhttp), Copyright (C) 2013 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP2
import Testing

/// Uploads over HTTP/2 that the server answers, refuses or stops reading before they end: not in
/// `HttpOverHttp2Test` (the brief's "a server that doesn't read the upload").
extension OkHttpHTTP2Tests {
    /// Not in `HttpOverHttp2Test`: a server that answers before reading the upload and resets the
    /// stream with NO_ERROR to stop it. RFC 9113 8.1: the client "MUST NOT discard responses as a
    /// result of receiving such a RST_STREAM".
    @Test func aResponseBeforeTheUploadEndedThenNoErrorResetIsDelivered() async throws {
        let upload = Data(repeating: 7, count: 2 * 1024 * 1024)
        try await Self.run(
            atHead: { path in path == "/upload" ? .respondThenReset("early answer", code: .noError) : nil },
            { _, _ in .respond("next") }
        ) { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(for: Request(method: .post, url: Self.url(server, "/upload"), body: .data(upload)))
            #expect(response.response.status.code == 200)
            #expect(Self.text(response) == "early answer")
            #expect(server.requestBodyBytes < upload.count, "the upload stopped")
            #expect(Self.text(try await Self.get(server, manager)) == "next")
            #expect(server.connectionCount == 1)
        }
    }

    /// A request body of `count` chunks of 64 KiB: in memory, or a stream sent chunk by chunk
    /// (each once the one before went out).
    static func upload(streamed: Bool, count: Int = 32) -> RequestBody {
        let chunk = ByteBuffer(repeating: 7, count: 64 * 1024)
        return streamed
            ? .stream(OkHttpCallTests.StepwiseBody(steps: Array(repeating: { chunk }, count: count)), length: .known(Int64(count * 64 * 1024)))
            : .data(Data(repeating: 7, count: count * 64 * 1024))
    }

    /// Not in `HttpOverHttp2Test`: a server that answers 200 (END_STREAM) as the request's
    /// HEADERS arrive, and reads the upload on. RFC 9113 8.1: without its RST_STREAM NO_ERROR,
    /// the client sends the rest; Courier's rule (HopStateMachine: "The server answered before the
    /// upload ended and may still read it: let it finish") says so too. Before, only a streamed
    /// body was let finish: a body in memory counted as sent once queued, so the hop ended with the
    /// response, reporting success, and its stream was reset (CANCEL) with the rest of the body
    /// unsent (the server had 63 KiB of 2 MiB).
    @Test(arguments: [true, false])
    func anEarlyAnswerLetsTheUploadFinish(streamed: Bool) async throws {
        let size = 32 * 64 * 1024
        try await Self.run(
            atHead: { path in path == "/upload" ? .respond("early answer") : nil },
            { _, _ in .respond("next") }
        ) { server, manager async throws in
            let response = try await manager.responseOfAnyStatus(
                for: Request(method: .post, url: Self.url(server, "/upload"), body: Self.upload(streamed: streamed)))
            #expect(Self.text(response) == "early answer")
            #expect(await server.changes.wait { !server.requests.isEmpty || !server.resetsReceived.isEmpty })
            #expect(server.resetsReceived == [])
            #expect(server.requests.first?.body.count == size, "the server got \(server.requestBodyBytes) of \(size) bytes")
            #expect(Self.text(try await Self.get(server, manager)) == "next")
        }
    }

    /// Not in `HttpOverHttp2Test`: a server that answers whole before reading the upload, then
    /// reads no more of it and resets nothing (its windows stay shut). The response is complete
    /// (END_STREAM), and the hop waits for the upload to end (anEarlyAnswerLetsTheUploadFinish),
    /// for windows that never open, until the request timeout: that timeout then ends the request
    /// with the whole 200, and the stream is reset. Before, the timeout failed the request and the
    /// 200 was lost (the exchange's timeout won over the hop's response).
    @Test(arguments: [false, true])
    func aWholeResponseBeforeAnUploadTheServerStoppedReadingIsDelivered(streamed: Bool) async throws {
        let size = 32 * 64 * 1024
        try await Self.run(
            atHead: { path in path == "/upload" ? .respondThenStopReading("early answer") : nil },
            { _, _ in .respond("next") }
        ) { server, manager async throws in
            var request = Request(method: .post, url: Self.url(server, "/upload"), body: Self.upload(streamed: streamed))
            // The answer must come within it (20 s: a full CI run held every test for about 36 s,
            // and 7 s left too little margin); the test then waits it out, which is its subject,
            // so not 60 s.
            request.options.timeoutInterval = 20
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(Self.text(response) == "early answer")
            #expect(server.requestBodyBytes < size, "the server read \(server.requestBodyBytes) bytes")
            #expect(Self.text(try await Self.get(server, manager)) == "next")
        }
    }

    /// Not in `HttpOverHttp2Test`: an upload refused (REFUSED_STREAM) as its HEADERS arrive,
    /// with part of its body already out: a body in memory goes again whole (RFC 9113 8.7: not
    /// processed); a streamed one, whose first chunks are gone, fails. Uploads after it, on the
    /// connections it used, go whole (the refused stream's unsent bytes were given back to the
    /// connection's window).
    @Test(arguments: [false, true])
    func anUploadRefusedMidwayGoesAgainWhenItCan(streamed: Bool) async throws {
        try await Self.run(
            atHead: { path in path == "/refused" ? .reset(.refusedStream) : nil },
            { _, _ in .respond("uploaded") }
        ) { server, manager async throws in
            let refused = Request(method: .put, url: Self.url(server, "/refused"), body: Self.upload(streamed: streamed))
            if streamed {
                let error = await OkHttpCallTests.failure { try await manager.responseOfAnyStatus(for: refused) }
                #expect(error != nil)
            } else {
                // Refused every time: it fails after the resend bound, each attempt refused.
                let error = await OkHttpCallTests.failure { try await manager.responseOfAnyStatus(for: refused) }
                #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            }
            for _ in 0..<3 {
                let response = try await manager.responseOfAnyStatus(
                    for: Request(method: .put, url: Self.url(server, "/accepted"), body: Self.upload(streamed: streamed, count: 8)))
                #expect(Self.text(response) == "uploaded")
            }
            #expect(server.requests.map(\.body.count) == Array(repeating: 8 * 64 * 1024, count: 3))
        }
    }
}
