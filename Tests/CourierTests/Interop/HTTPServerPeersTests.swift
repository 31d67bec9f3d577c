import Courier
import CourierTesting
import Crypto
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// HTTP servers nobody on the project wrote, each with an HTTP/2 implementation of its own, which
/// `.ci/http-peers.sh` starts: nghttp2's `nghttpd` (the library inside Apache's mod_http2, curl
/// and Node), h2o, lighttpd, hypercorn (Python's h11 and h2), and Apache httpd (mod_http2). The
/// other peers are Go's net/http (``GoPeer``), nginx, and Courier's own servers on
/// swift-nio-http2. Every peer serves the same routes (`/files/hello.txt`, `/files/big.bin`,
/// `/files/text.txt`, `POST /echo`), so one test body runs against each, over each of its wires,
/// directly and through the real proxies.
struct HTTPServerPeer: Sendable, CustomStringConvertible {
    /// The server's name, as `.ci/http-peers.sh` calls it.
    let name: String
    /// Where it speaks HTTP/1.1 in cleartext, if it does.
    let plainURL: URL?
    /// Where it speaks TLS, offering h2 (and http/1.1 when ``speaksHTTP1OverTLS``).
    let tlsURL: URL?
    /// Whether its TLS port takes `http/1.1` too (nghttpd's takes only `h2`).
    let speaksHTTP1OverTLS: Bool
    /// Whether it compresses `text.txt` when asked (h2o's `compress`, lighttpd's and Apache's mod_deflate).
    let compresses: Bool
    /// Whether `POST /echo` takes a body of unknown length over HTTP/2 (lighttpd answers 411 Length
    /// Required to a request stream that ends without having said its length).
    let takesUnknownLengthsOverHTTP2: Bool
    /// Whether it answers 304 to the ETag of a response it compressed (Apache answers 200: see
    /// ``HTTPServerPeersTests/storedFilesAreRevalidatedWithTheServersValidators(_:)``).
    let revalidatesCompressedVariants: Bool
    /// Whether its static files carry a validator (`ETag` or `Last-Modified`) a cache revalidates with.
    let hasValidators: Bool
    /// The path whose response ends with the trailer field `courier-trailer: yes`, over `wire`; nil
    /// when it sends none over that wire.
    let trailers: @Sendable (Transport.Wire) -> String?

    var description: String { self.name }

    private static let environment = ProcessInfo.processInfo.environment
    private static func url(_ variable: String) -> URL? { environment[variable].flatMap(URL.init(string:)) }

    /// The root `.ci/http-peers.sh` made for every peer's certificate.
    static let caFile = environment["COURIER_HTTP_PEERS_CA"]

    /// Every peer, started or not.
    static let all: [HTTPServerPeer] = [
        HTTPServerPeer(
            name: "nghttpd", plainURL: nil, tlsURL: url("COURIER_NGHTTPD_TLS_URL"), speaksHTTP1OverTLS: false,
            compresses: false, takesUnknownLengthsOverHTTP2: true, revalidatesCompressedVariants: true, hasValidators: true, trailers: { _ in "/files/hello.txt" }),
        HTTPServerPeer(
            name: "h2o", plainURL: url("COURIER_H2O_URL"), tlsURL: url("COURIER_H2O_TLS_URL"), speaksHTTP1OverTLS: true,
            compresses: true, takesUnknownLengthsOverHTTP2: true, revalidatesCompressedVariants: true, hasValidators: true, trailers: { _ in nil }),
        HTTPServerPeer(
            name: "lighttpd", plainURL: url("COURIER_LIGHTTPD_URL"), tlsURL: url("COURIER_LIGHTTPD_TLS_URL"), speaksHTTP1OverTLS: true,
            compresses: true, takesUnknownLengthsOverHTTP2: false, revalidatesCompressedVariants: true, hasValidators: true, trailers: { _ in nil }),
        HTTPServerPeer(
            name: "hypercorn", plainURL: url("COURIER_HYPERCORN_URL"), tlsURL: url("COURIER_HYPERCORN_TLS_URL"), speaksHTTP1OverTLS: true,
            compresses: false, takesUnknownLengthsOverHTTP2: true, revalidatesCompressedVariants: true, hasValidators: false, trailers: { $0 == .http2 ? "/trailers" : nil }),
        HTTPServerPeer(
            name: "apache", plainURL: url("COURIER_APACHE_URL"), tlsURL: url("COURIER_APACHE_TLS_URL"), speaksHTTP1OverTLS: true,
            compresses: true, takesUnknownLengthsOverHTTP2: true, revalidatesCompressedVariants: false, hasValidators: true, trailers: { _ in nil }),
    ]

    /// The peers `.ci/http-peers.sh` started (with the root to trust them by).
    static let started: [HTTPServerPeer] = caFile == nil ? [] : all.filter { $0.plainURL != nil || $0.tlsURL != nil }

    static var skipReason: Comment {
        "no HTTP server peer is set (COURIER_HTTP_PEERS_CA, COURIER_NGHTTPD_TLS_URL, COURIER_H2O_URL, …): .ci/run starts them (.ci/http-peers.sh)"
    }

    /// Whether the peer can be reached over `wire`.
    func speaks(_ wire: Transport.Wire) -> Bool {
        switch wire {
        case .http1: self.plainURL != nil
        case .http1TLS: self.tlsURL != nil && self.speaksHTTP1OverTLS
        case .http2: self.tlsURL != nil
        }
    }

    /// The peer's URL for `path` over `transport`'s wire.
    func url(_ path: String, over transport: Transport) -> URL {
        let base = transport.isSecure ? self.tlsURL! : self.plainURL!
        return URL(string: base.absoluteString + path)!
    }
}

/// One peer over one transport: a test's argument.
struct PeerTransport: Sendable, CustomTestStringConvertible {
    let peer: HTTPServerPeer
    let transport: Transport

    var testDescription: String { "\(self.peer.name), \(self.transport.testDescription)" }

    /// Every started peer over each transport it speaks: every wire directly and through the real
    /// proxies, but tinyproxy's absolute form (it closes each connection after the answer, as the
    /// Go peer's tests say).
    static let all: [PeerTransport] = HTTPServerPeer.started.flatMap { peer in
        Transport.allCases(except: [.http1ViaHTTPProxy]).filter { peer.speaks($0.wire) }.map { PeerTransport(peer: peer, transport: $0) }
    }

    /// The same, directly only.
    static let direct: [PeerTransport] = Self.all.filter { !$0.transport.isProxied }

    /// The peer's URL for `path` over this transport.
    func url(_ path: String) -> URL { self.peer.url(path, over: self.transport) }

    /// Runs `body` with a manager for the transport (its HTTP versions and proxy, no cache unless
    /// `cache` is given) trusting the peers' root and the `https://` proxy's, invalidated
    /// afterwards; then neither the manager nor its engine is alive.
    func run(cache: ResponseCache? = nil, _ body: (SessionManager) async throws -> Void) async throws {
        var policy = SecurityPolicy.default
        let pem = try String(contentsOfFile: HTTPServerPeer.caFile!, encoding: .utf8)
        policy.additionalTrustedCertificates = try Certificate.certificates(pemEncoded: pem) + Transport.proxyRoots()
        var configuration = self.transport.sessionConfiguration()
        configuration.responseCache = cache
        // A stall fails the request instead of hanging the suite (after 60 s: a full CI run held
        // every test for about 36 s, and 20 s left too little margin).
        configuration.timeoutIntervalForRequest = 60
        try await withManagerThatEnds({ SessionManager(configuration: configuration, securityPolicy: policy) }, body)
    }
}

/// One test at a time, each running its cases in parallel: five servers' 4 MiB downloads and
/// uploads at once over every transport starve the rest of the suite on two cores.
@Suite("Interop: HTTP servers with HTTP/2 implementations of their own", .serialized, .enabled(if: !PeerTransport.all.isEmpty, HTTPServerPeer.skipReason))
struct HTTPServerPeersTests {
    /// What `.ci/http-peers.sh` writes into `hello.txt`, `big.bin` and `text.txt`: made once for
    /// the suite (the two large ones take a debug build a while to make, and every case reads them).
    static let hello = Data("hello from a static file\n".utf8)
    static let big = GoPeer.pattern((4 << 20) + 1)
    static let text = GoPeer.lines(50_000)

    @Test(arguments: PeerTransport.all)
    func filesAndEchoedBodiesArriveWhole(_ peer: PeerTransport) async throws {
        try await peer.run { manager in
            let hello = try await manager.data(for: Request(url: peer.url("/files/hello.txt")))
            expectSameBytes(hello.value, Self.hello, "hello.txt")
            #expect(hello.metrics?.transactions.last?.networkProtocolName == peer.transport.protocolName)

            let big = try await manager.data(for: Request(url: peer.url("/files/big.bin")))
            expectSameBytes(big.value, Self.big, "big.bin")

            let text = try await manager.data(for: Request(url: peer.url("/files/text.txt")))
            expectSameBytes(text.value, Self.text, "text.txt")
            if peer.peer.compresses {
                #expect(text.response.headerFields[.contentEncoding] == "gzip", "asked for gzip by default, and this server compresses")
            }

            let head = try await manager.data(for: Request(method: .head, url: peer.url("/files/big.bin")))
            #expect(head.response.status == .ok)
            #expect(head.value.isEmpty)
            if let length = head.response.headerFields[.contentLength] { #expect(length == "\((4 << 20) + 1)") }

            var anyStatus = DataResponseSerializer()
            anyStatus.http.acceptableStatusCodes = IndexSet(integersIn: 100..<600)
            let missing = try await manager.response(for: Request(url: peer.url("/files/missing.txt")), serializer: anyStatus)
            #expect(missing.response.status == .notFound)

            // A body of known length, then one of unknown length (chunked over HTTP/1.1): past any
            // server's first flow-control window many times over.
            let bytes = GoPeer.pattern(1_000_001)
            let echoed = try await manager.data(for: Request(method: .post, url: peer.url("/echo"), body: .data(bytes)))
            expectSameBytes(echoed.value, bytes, "the echo of a body of known length")
            let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                for offset in stride(from: 0, to: bytes.count, by: 256 << 10) {
                    continuation.yield(ByteBuffer(bytes: bytes[offset..<min(offset + (256 << 10), bytes.count)]))
                }
                continuation.finish()
            }
            let unknown = Request(method: .post, url: peer.url("/echo"), body: .stream(chunks, length: .unknown))
            if peer.transport.isHTTP2 && !peer.peer.takesUnknownLengthsOverHTTP2 {
                let refused = try await manager.response(for: unknown, serializer: anyStatus)
                #expect(refused.response.status.code == 411)
            } else {
                let streamed = try await manager.data(for: unknown)
                expectSameBytes(streamed.value, bytes, "the echo of a body of unknown length")
            }
        }
    }

    /// 300 requests with 100 in flight, more than any of these servers takes streams on one HTTP/2
    /// connection (lighttpd takes 8; over HTTP/1.1 it closes each connection after seven): every one
    /// is answered, whole. Directly only: through a proxy the proxy is what is loaded.
    @Test(arguments: PeerTransport.direct)
    func aHundredRequestsInFlightAreAllAnswered(_ peer: PeerTransport) async throws {
        try await peer.run { manager in
            let failures = await failedAttempts(of: 300, inFlight: 100) { index in
                let path = index % 10 == 0 ? "/files/text.txt" : "/files/hello.txt"
                do {
                    let response = try await manager.data(for: Request(url: peer.url(path)))
                    let expected = path.hasSuffix("hello.txt") ? Self.hello : Self.text
                    return response.value == expected ? nil : "\(path): \(response.value.count) bytes"
                } catch {
                    return "\(path): \(error)"
                }
            }
            #expect(failures.isEmpty, "\(failures.count) of 300 failed, first: \(failures.first ?? "")")
        }
    }

    /// Sixteen uploads at once, which over HTTP/2 share one connection's flow-control window with
    /// each other (and with their echoes coming back): each body comes back whole. Directly only,
    /// as above.
    @Test(arguments: PeerTransport.direct)
    func uploadsAtOnceShareTheWindowAndArriveWhole(_ peer: PeerTransport) async throws {
        try await peer.run { manager in
            let failures = await failedAttempts(of: 16, inFlight: 16) { index in
                let bytes = GoPeer.pattern(200_000 + index * 7_919)
                do {
                    let echoed = try await manager.data(for: Request(method: .post, url: peer.url("/echo"), body: .data(bytes)))
                    return echoed.value == bytes ? nil : "upload \(index): \(echoed.value.count) of \(bytes.count) bytes"
                } catch {
                    return "upload \(index): \(error)"
                }
            }
            #expect(failures.isEmpty, "\(failures.count) of 16 failed, first: \(failures.first ?? "")")
        }
    }

    /// Downloads cancelled after their first bytes, while the server still sends. Over HTTP/2 the
    /// server's DATA for a reset stream still counts against the connection's window: 24 streams,
    /// each with up to its window (256 KiB) in flight when it is reset, are more than Courier's
    /// connection window (4 MiB), so a client that did not give those bytes back would stall. Over
    /// HTTP/1.1 each cancel closes its connection, and through a proxy the point is only that the
    /// tunnel survives the resets: four cancels each. The next download on the same manager
    /// arrives whole.
    @Test(arguments: PeerTransport.all)
    func cancelledDownloadsLeaveTheConnectionUsable(_ peer: PeerTransport) async throws {
        try await peer.run { manager in
            for _ in 0..<(peer.transport.isHTTP2 && !peer.transport.isProxied ? 24 : 4) {
                let stream = try await manager.stream(Request(url: peer.url("/files/big.bin")))
                var iterator = stream.body.makeAsyncIterator()
                let first = try await iterator.next()
                #expect(first.map { $0.readableBytes > 0 } == true)
                stream.task.cancel()
            }
            let big = try await manager.data(for: Request(url: peer.url("/files/big.bin")))
            expectSameBytes(big.value, Self.big, "big.bin")
            if peer.transport.isHTTP2 {
                #expect(big.metrics?.transactions.last?.isReusedConnection == true, "one HTTP/2 connection carried every stream")
            }
        }
    }

    /// A stored response is revalidated with the server's own validators when the request asks
    /// (`max-age=0`): the server's 304 confirms it, gzip-coded variants (`Vary: Accept-Encoding`)
    /// included, but Apache's: mod_deflate gives a compressed response the ETag `"…-gzip"` and
    /// then does not match that ETag in `If-None-Match` (its bug 45023, `DeflateAlterETag
    /// AddSuffix`, the default), so it answers 200 again, and the whole new response is what the
    /// request gets.
    @Test(arguments: PeerTransport.direct.filter(\.peer.hasValidators))
    func storedFilesAreRevalidatedWithTheServersValidators(_ peer: PeerTransport) async throws {
        // Room for text.txt (282 KiB): a cache stores nothing larger than a twentieth of its capacity.
        let cache = ResponseCache(memoryCapacity: 16 << 20)
        try await peer.run(cache: cache) { manager in
            for path in ["/files/hello.txt", "/files/text.txt"] {
                let first = try await manager.data(for: Request(url: peer.url(path)))
                #expect(first.source == .network)
                #expect(cache.cachedResponse(for: Request(url: peer.url(path))) != nil, "\(path) was stored")
                var revalidate = Request(url: peer.url(path))
                revalidate.headerFields[.cacheControl] = "max-age=0"
                let second = try await manager.data(for: revalidate)
                let compressed = first.response.headerFields[.contentEncoding] != nil
                let answers304 = !compressed || peer.peer.revalidatesCompressedVariants
                #expect(second.source == (answers304 ? .revalidatedCache : .network), "\(path): answered 304, or 200 again")
                #expect(second.response.status == .ok)
                expectSameBytes(second.value, first.value, path)
            }
        }
    }

    /// Trailer fields after the body (nghttpd sends them after every response; hypercorn over
    /// HTTP/2 after `/trailers`, to a request with `TE: trailers`) are the task's
    /// ``SessionTask/responseTrailers``.
    @Test(arguments: PeerTransport.all.filter { $0.peer.trailers($0.transport.wire) != nil })
    func trailerFieldsArrive(_ peer: PeerTransport) async throws {
        try await peer.run { manager in
            let path = try #require(peer.peer.trailers(peer.transport.wire))
            // hypercorn sends trailer fields only to a client that says it takes them.
            var request = Request(url: peer.url(path))
            request.headerFields[.te] = "trailers"
            let streamed = try await manager.stream(request)
            var body = Data()
            for try await part in streamed.body { body.append(contentsOf: part.readableBytesView) }
            #expect(!body.isEmpty)
            #expect(streamed.task.responseTrailers?[HTTPField.Name("Courier-Trailer")!] == "yes")
        }
    }
}
