import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Task metrics as the engine records them, per transaction (issue 16's item 5), over every transport.
@Suite("Transport: task metrics")
struct TransportMetricsTests {
    /// Expects `instants`, where present, to come in order.
    private static func expectOrdered(_ instants: [(String, ContinuousClock.Instant?)], sourceLocation: SourceLocation = #_sourceLocation) {
        let present = instants.compactMap { name, instant in instant.map { (name, $0) } }
        for (earlier, later) in zip(present, present.dropFirst()) {
            #expect(earlier.1 <= later.1, "\(earlier.0) after \(later.0)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: Transport.allCases)
    func aRedirectedRequestHasATransactionPerHop(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let response = try await manager.get("redirect/1")
            let metrics = try #require(response.metrics)
            #expect(metrics.attempts.count == 1)
            let transactions = metrics.transactions
            try #require(transactions.count == 2)
            let (redirect, final) = (transactions[0], transactions[1])
            let protocolName = transport.protocolName

            // The first hop opened the connection: every phase of the setup is there.
            #expect(redirect.request.url == server.url("/redirect/1"))
            #expect(redirect.response?.status.code == 302)
            #expect(redirect.networkProtocolName == protocolName)
            #expect(!redirect.isReusedConnection)
            #expect(redirect.isProxyConnection == transport.isProxied)
            #expect((redirect.domainLookupStart != nil) == transport.proxyHasAName, "127.0.0.1 needs no lookup; a proxy's name does")
            #expect(redirect.connectStart != nil)
            #expect(redirect.connectEnd != nil)
            #expect((redirect.secureConnectionStart != nil) == transport.isSecure)
            #expect((redirect.secureConnectionEnd != nil) == transport.isSecure)
            #expect((redirect.tlsProtocolVersion != nil) == transport.isSecure)
            #expect((redirect.tlsCipherSuite != nil) == transport.isSecure, "the suite from the ServerHello")
            #expect(redirect.remoteAddress == "127.0.0.1")
            #expect(redirect.remotePort == transport.remotePort(for: server))
            #expect(redirect.localAddress == "127.0.0.1")
            #expect(redirect.localPort != nil && redirect.localPort != server.port)
            #expect(redirect.countOfRequestHeaderBytesSent > Int64("GET /redirect/1 HTTP/1.1\r\n\r\n".utf8.count))
            #expect(redirect.countOfResponseHeaderBytesReceived > 0)
            Self.expectOrdered([
                ("fetchStart", redirect.fetchStart), ("connectStart", redirect.connectStart),
                ("secureConnectionStart", redirect.secureConnectionStart), ("secureConnectionEnd", redirect.secureConnectionEnd),
                ("connectEnd", redirect.connectEnd), ("requestStart", redirect.requestStart), ("requestEnd", redirect.requestEnd),
                ("responseStart", redirect.responseStart), ("responseEnd", redirect.responseEnd),
            ])
            #expect(redirect.requestStart != nil && redirect.responseEnd != nil)

            // The second went on the same connection: no setup of its own (unless the proxy
            // closed it: then it was sent again on a new one, and says so).
            #expect(final.request.url == server.url("/get"))
            #expect(final.response?.status == .ok)
            #expect(final.networkProtocolName == protocolName)
            if transport.proxyClosesEachConnection {
                #expect(!final.isReusedConnection)
                #expect(final.connectStart != nil)
                #expect(final.localPort != redirect.localPort, "a new connection")
            } else {
                #expect(final.isReusedConnection)
                #expect(final.connectStart == nil && final.secureConnectionStart == nil && final.domainLookupStart == nil)
                #expect(final.localPort == redirect.localPort, "the same connection")
            }
            #expect((final.tlsProtocolVersion != nil) == transport.isSecure, "the connection's TLS version stays known")
            #expect(final.tlsCipherSuite == redirect.tlsCipherSuite, "and so does its suite")
            #expect(final.countOfResponseBodyBytesReceived == Int64(response.data?.count ?? -1))
            #expect(final.countOfResponseBodyBytesAfterDecoding == final.countOfResponseBodyBytesReceived)
            Self.expectOrdered([
                ("redirect's responseEnd", redirect.responseEnd), ("fetchStart", final.fetchStart),
                ("requestStart", final.requestStart), ("requestEnd", final.requestEnd),
                ("responseStart", final.responseStart), ("responseEnd", final.responseEnd),
            ])
            #expect(metrics.offset(of: final.responseEnd).map { $0 <= metrics.duration } == true)
        }
    }

    @Test(arguments: Transport.allCases)
    func bodyCountsAreTheWiresAndTheDecodedOnes(_ transport: Transport) async throws {
        try await transport.run { _, manager in
            let upload = try await manager.data(for: Request(method: .post, url: manager.baseURL!.appending(path: "post"), body: .data(Data(count: 100_000))))
            let sent = try #require(upload.metrics?.transactions.last)
            #expect(sent.countOfRequestBodyBytesSent == 100_000)
            #expect(sent.requestEnd != nil)

            let compressed = try await manager.get("gzip")
            let received = try #require(compressed.metrics?.transactions.last)
            #expect(received.countOfResponseBodyBytesAfterDecoding == Int64(compressed.data?.count ?? -1))
            #expect(received.countOfResponseBodyBytesReceived > 0)
            #expect(received.countOfResponseBodyBytesReceived < received.countOfResponseBodyBytesAfterDecoding, "gzip made it smaller on the wire")
        }
    }

    /// A streamed upload cut short (cancelled here; timed out, answered early or failed by its
    /// stream alike) counts in its transaction the body bytes that went out, as its attempt does:
    /// the transaction counted them only once the whole stream had gone, and said 0.
    @Test(arguments: Transport.allCases)
    func anUploadCutShortCountsWhatWentOutInItsTransaction(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let changes = Changes.progressAndEnds(of: manager)
            let held = NIOLockedValueBox<AsyncThrowingStream<ByteBuffer, any Error>.Continuation?>(nil)
            let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                for _ in 0..<10 { continuation.yield(ByteBuffer(repeating: 9, count: 10_000)) }
                // Kept, unfinished: the stream never ends by itself.
                held.withLockedValue { $0 = continuation }
            }
            let task = manager.uploadTask(
                withStreamedRequest: Request(method: .post, url: server.url("/courier/upload"), body: .stream(chunks, length: .unknown)),
                completionHandler: nil)
            task.resume()
            #expect(await changes.wait { task.countOfBytesSent == 100_000 }, "the stream's 100 KB went out")
            task.cancel()
            #expect(await changes.wait { manager.tasks.isEmpty })
            #expect(task.error?.code == .cancelled)
            let attempt = try #require(task.metrics?.attempts.last)
            let transaction = try #require(attempt.transactions.last)
            #expect(attempt.bytesSent == 100_000)
            #expect(transaction.countOfRequestBodyBytesSent == attempt.bytesSent)
            #expect(transaction.requestEnd == nil, "the body never ended")
            held.withLockedValue { $0?.finish() }
        }
    }

    /// The engine asks for compressed bodies once (the hop handler adds the field to the head it
    /// builds, on either protocol), and over HTTP/1.1 the head's size in the metrics is the size
    /// of the head the server read, that field included.
    @Test(arguments: Transport.allCases)
    func theHeadAsksForCompressionOnceAndItsSizeIsTheHeadAsSent(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            server.resetRequestLog()
            let response = try await manager.get("get")
            let received = try #require(server.receivedRequests.last)
            #expect(received.headerFields[values: .acceptEncoding] == ["deflate, gzip"])
            let transaction = try #require(response.metrics?.transactions.last)
            // Over HTTP/2 the size is the head's as HTTP/1.1 text, which the server does not see;
            // through a proxy the server reads the proxy's head.
            guard !transport.isHTTP2, !transport.isProxied else { return }
            #expect(received.httpVersion == "HTTP/1.1")
            var size = "\(received.method.rawValue) \(received.target) HTTP/1.1\r\n\r\n".utf8.count
            for field in received.headerFields {
                size += field.name.rawName.utf8.count + ": ".utf8.count + field.value.utf8.count + "\r\n".utf8.count
            }
            #expect(transaction.countOfRequestHeaderBytesSent == Int64(size))
        }
    }

    @Test(arguments: Transport.allCases)
    func aNameIsLookedUpAndTheTaskSaysWhichProtocolAnswered(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let url = try #require(URL(string: "\(transport.scheme)://localhost:\(server.port)/get"))
            let finished = NIOLockedValueBox<[TaskMetrics]>([])
            var hooks = manager.hooks
            hooks.taskDidFinishCollectingMetrics = { _, _, metrics in finished.withLockedValue { $0.append(metrics) } }
            manager.hooks = hooks
            let task = await withCheckedContinuation { (done: CheckedContinuation<SessionTask, Never>) in
                let made = NIOLockedValueBox<SessionTask?>(nil)
                let task = manager.dataTask(with: Request(url: url)) { _, _, _ in
                    done.resume(returning: made.withLockedValue { $0! })
                }
                made.withLockedValue { $0 = task }
                task.resume()
            }
            #expect(finished.withLockedValue { $0.count } == 1, "the hook ran once, before the completion")
            let metrics = try #require(finished.withLockedValue { $0.first })
            let transaction = try #require(metrics.transactions.first)
            #expect(transaction.response?.status == .ok)
            // Through a proxy Courier connects to the proxy's address (127.0.0.1 under `.ci/run`,
            // but for the https:// proxy's `localhost`, which Courier looks up) and the proxy looks
            // the server's name up.
            #expect((transaction.domainLookupStart != nil) == (!transport.isProxied || transport.proxyHasAName))
            #expect((transaction.domainLookupEnd != nil) == (!transport.isProxied || transport.proxyHasAName))
            Self.expectOrdered([
                ("fetchStart", transaction.fetchStart), ("domainLookupStart", transaction.domainLookupStart),
                ("domainLookupEnd", transaction.domainLookupEnd), ("connectStart", transaction.connectStart),
                ("connectEnd", transaction.connectEnd),
            ])
            #expect(task.metrics?.transactions.count == 1, "the task keeps its metrics")
            #expect(task.networkProtocolName == transport.protocolName)
        }
    }
}
