// Ported from AsyncHTTPClient's Tests/AsyncHTTPClientTests/HTTPClientTests.swift
// (https://github.com/swift-server/async-http-client), Copyright (c) 2018-2022 Apple Inc. and
// the AsyncHTTPClient project authors, licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Twins of AsyncHTTPClient's tests of connections that do not last: every request closing its
/// own, a server that closes after every answer, and one that closes every connection it
/// accepts (the pool must not be left waiting on them).
@Suite("Conformance: AsyncHTTPClient connections that close")
struct AHCConnectionTests {
    // AHC: testStressGetClose (200 requests at once, each saying `Connection: close`: all
    // answered, each on a connection of its own, however many the pool may hold at once)
    @Test func manyConcurrentRequestsThatEachCloseTheirConnection() async throws {
        try await AHCHTTPClientTests.overHTTP1({ _, _, _ in .respond(AHCHTTPClientTests.ok) }) { server, manager async throws in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        var request = Request(url: server.baseURL.appendingPathComponent("get"))
                        request.headerFields[.connection] = "close"
                        return try await manager.responseOfAnyStatus(for: request).response.status.code
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.count == 200 && statuses.allSatisfy { $0 == 200 })
            #expect(server.connectionCount == 200)
            #expect(server.receivedHeads.count == 200)
        }
    }

    // AHC: testRepeatedRequestsWorkWhenServerAlwaysCloses (each answer says `CoNnEcTiOn: cLoSe`,
    // its empty body chunked, and the server closes: ten requests one after another, each on a
    // new connection)
    @Test func repeatedRequestsWorkWhenTheServerAlwaysCloses() async throws {
        let answer = "HTTP/1.1 200 OK\r\nCoNnEcTiOn: cLoSe\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        try await AHCHTTPClientTests.overHTTP1({ _, _, _ in .respond(answer, thenClose: true) }) { server, manager async throws in
            for index in 0..<10 {
                let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL.appendingPathComponent("foo")))
                #expect(response.response.status == .ok, "request \(index)")
                #expect(response.data?.isEmpty != false, "request \(index)")
            }
            #expect(server.connectionCount == 10)
            #expect(server.receivedHeads.allSatisfy { $0.hasPrefix("GET /foo HTTP/1.1\r\n") })
        }
    }

    // AHC: AsyncAwaitEndToEndTests.testInsanelyHighConcurrentHTTP1ConnectionLimitDoesNotCrash
    // (a per-host limit of `Int.max`, and long idle and request timeouts: a request works, over
    // HTTP/1.1 and HTTP/2)
    @Test(arguments: [false, true])
    func anInsanelyHighConnectionLimitDoesNotCrash(http2: Bool) async throws {
        try await withTestServer(http2 ? .https() : .init()) { server async throws in
            var configuration = SessionConfiguration.default
            configuration.httpMaximumConnectionsPerHost = .max
            configuration.connectionIdleTimeout = 3600
            configuration.timeoutIntervalForRequest = 100
            try await withManager(baseURL: nil, configuration: configuration, securityPolicy: try Transport.trustingTestRoot()) { manager async throws in
                let responses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<4 {
                        group.addTask { try await manager.responseOfAnyStatus(for: Request(url: server.url("/get"))).response.status.code }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                #expect(responses == [200, 200, 200, 200])
            }
        }
    }

    // AHC: testFailingConnectionIsReleased (a server that closes each connection as it accepts
    // it: the request fails, typed, and the next one fails the same way, the pool not left
    // holding a slot for either; each is sent again at most a bounded number of times)
    @Test func connectionsClosedAsTheyAreAcceptedFailEachRequest() async throws {
        // AHC's HTTPBin in `.refuse` mode: a server that closes every connection it accepts.
        let accepted = ObservedBox(0)
        let server = try await LoopbackServer.start { channel in
            accepted.withLockedValue { $0 += 1 }
            return channel.close()
        }
        try await withShutdown(of: server) { server async throws in
            var configuration = SessionConfiguration.default
            configuration.httpMaximumConnectionsPerHost = 1
            configuration.timeoutIntervalForConnect = 600
            configuration.timeoutIntervalForRequest = 600
            try await withManager(baseURL: nil, configuration: configuration) { manager async throws in
                for index in 0..<3 {
                    let error = await #expect(throws: CourierError.self, "request \(index)") {
                        _ = try await manager.responseOfAnyStatus(for: Request(url: URL(string: "http://127.0.0.1:\(server.port)/get")!))
                    }
                    #expect(error?.code == .connectionClosed || error?.code == .connectionFailed, "request \(index): \(String(describing: error))")
                }
                // Each request: its first connection and at most three more.
                let connections = accepted.read { $0 }
                #expect((3...12).contains(connections), "\(connections) connections")
            }
        }
    }
}
