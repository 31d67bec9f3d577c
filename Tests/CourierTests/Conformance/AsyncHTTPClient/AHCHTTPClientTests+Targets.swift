// Ported from AsyncHTTPClient's Tests/AsyncHTTPClientTests/HTTPClientInternalTests.swift and
// HTTPClientTests.swift (https://github.com/swift-server/async-http-client), Copyright (c)
// 2018-2022 Apple Inc. and the AsyncHTTPClient project authors, licensed under the Apache
// License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import Testing

/// Twins of AsyncHTTPClient's tests of the request target its URL gives (`url.uri`), checked
/// here on the wire, as the server received the request line: an empty path is `/` (RFC 9112
/// 3.2.1), a trailing slash stays, the query goes, the fragment never does (RFC 9110 4.2.4), and
/// escapes go as written.
@Suite("Conformance: AsyncHTTPClient request targets")
struct AHCRequestTargetTests {
    /// A URL's text after the server's `scheme://host:port`, and the target the server must see.
    static let targets: [(suffix: String, target: String)] = [
        ("/some/path?foo=bar#ref", "/some/path?foo=bar"),
        ("/some/path/?foo=bar#ref", "/some/path/?foo=bar"),
        ("?foo=bar#ref", "/?foo=bar"),
        ("/?foo=bar#ref", "/?foo=bar"),
        ("/some/path", "/some/path"),
        ("/some/path/", "/some/path/"),
        ("", "/"),
        ("/", "/"),
        ("#ref", "/"),
        ("/#ref", "/"),
        ("/some%20path", "/some%20path"),
        ("/some%2Fpathsegment1/pathsegment2", "/some%2Fpathsegment1/pathsegment2"),
        // testPercentEncoded
        ("/percent%20encoded", "/percent%20encoded"),
    ]

    // AHC: HTTPClientInternalTests.testRequestURITrailingSlash, HTTPClientTests.testPercentEncoded
    @Test func theTargetIsThePathAndQueryAsWritten() async throws {
        try await AHCHTTPClientTests.overHTTP1({ _, _, _ in .respond(AHCHTTPClientTests.ok) }) { server, manager async throws in
            let origin = "http://127.0.0.1:\(server.port)"
            for (suffix, _) in Self.targets {
                let url = try #require(URL(string: origin + suffix), "\(suffix)")
                #expect(try await manager.responseOfAnyStatus(for: Request(url: url)).response.status == .ok, "\(suffix)")
            }
            let lines = server.receivedHeads.map { $0.split(separator: "\r\n").first.map(String.init) ?? "" }
            #expect(lines == Self.targets.map { "GET \($0.target) HTTP/1.1" })
        }
    }

    // AHC: HTTPClientInternalTests.testURIOfRelativeURLRequest, HTTPClientTests.testLeadingSlashRelativeURL
    // (a URL relative to a base, with and without a leading slash)
    @Test func aRelativeURLsTargetIsResolvedAgainstItsBase() async throws {
        try await AHCHTTPClientTests.overHTTP1({ _, _, _ in .respond(AHCHTTPClientTests.ok) }) { server, manager async throws in
            let base = try #require(URL(string: "http://127.0.0.1:\(server.port)"))
            for relative in ["percent%2Fencoded/hello", "/percent%2Fencoded/hello"] {
                let url = try #require(URL(string: relative, relativeTo: base))
                #expect(try await manager.responseOfAnyStatus(for: Request(url: url)).response.status == .ok, "\(relative)")
            }
            #expect(server.receivedHeads.map { $0.hasPrefix("GET /percent%2Fencoded/hello HTTP/1.1\r\n") } == [true, true], "\(server.receivedHeads)")
        }
    }
}
