@testable import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// Values a server or a caller can hand Courier that stopped the process (a trap in SwiftNIO or
/// the standard library) before they were checked: each is now a typed error or taken as the
/// nearest value that works. Every test here crashed the test process without its fix (the
/// WebSocket one failed: its trap is SwiftNIO's, when a connection opens).
@Suite("Values that trapped: a typed error instead")
struct TrapFreeInputTests {
    // MARK: From a server

    @Test func aRedirectToAPortPast65535FailsTyped() async throws {
        // An IP literal (and a name under `localhost`) became a socket address with the port as
        // it was: SwiftNIO's `in_port_t(port)` trapped.
        for location in ["http://127.0.0.1:99999/next", "http://api.localhost:70000/next"] {
            try await ScriptedHTTPServer.with({ _, _, _ in
                .respond("HTTP/1.1 302 Found\r\nLocation: \(location)\r\nContent-Length: 0\r\n\r\n")
            }) { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let error = await #expect(throws: CourierError.self) { try await manager.data(for: Request(url: server.baseURL)) }
                    #expect(error?.code == .invalidURL)
                    #expect(error?.message.contains("is not a TCP port") == true, "\(error?.message ?? "")")
                }
            }
        }
    }

    @Test func aRequestToAPortPast65535FailsTyped() async throws {
        try await withManager(baseURL: nil) { manager in
            let error = await #expect(throws: CourierError.self) {
                try await manager.data(for: Request(url: URL(string: "http://127.0.0.1:65536/")!))
            }
            #expect(error?.code == .invalidURL)
        }
    }

    @Test func aProxyPortPast65535FailsTyped() async throws {
        var configuration = SessionConfiguration.default
        configuration.proxy = .http(host: "127.0.0.1", port: 99999)
        try await withManager(baseURL: nil, configuration: configuration) { manager in
            let error = await #expect(throws: CourierError.self) {
                try await manager.data(for: Request(url: URL(string: "http://example.invalid/")!))
            }
            #expect(error?.code == .invalidRequest)
            #expect(error?.message.contains("99999 is not a TCP port") == true, "\(error?.message ?? "")")
        }
    }

    @Test func aCookiePathWithAKelvinSignIsMatchedByBytes() async throws {
        // `"/Ka".hasPrefix("/\u{212A}")` is true (the Kelvin sign is canonically `K`), and the
        // match then read past the end of `/Ka`'s three bytes.
        #expect(!CookieMatching.pathMatches("/Ka", "/\u{212A}"))
        #expect(!CookieMatching.pathMatches("/K", "/\u{212A}"))
        #expect(CookieMatching.pathMatches("/\u{212A}/a", "/\u{212A}"))
        #expect(!CookieMatching.domainMatches("a.\u{212A}", "k"))
        // A server's own words: the cookie is stored on the redirect, and the redirect's request
        // asks the jar for `/Ka`.
        let kelvin: [UInt8] = [0xE2, 0x84, 0xAA]
        try await ScriptedHTTPServer.with({ _, _, head in
            if head.hasPrefix("GET /Ka ") { return .respond("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") }
            return .respondBytes(
                Array("HTTP/1.1 302 Found\r\nLocation: /Ka\r\nSet-Cookie: a=1; Path=/".utf8) + kelvin
                    + Array("\r\nContent-Length: 0\r\n\r\n".utf8))
        }) { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let response = try await manager.data(for: Request(url: server.baseURL.appendingPathComponent("start")))
                #expect(response.response.status == .ok)
                #expect(!server.receivedHeads.last!.contains("Cookie"), "the cookie's path is not a prefix of /Ka")
            }
        }
    }

    @Test func aResumedDownloadWithAnEndlessLengthFailsWithoutATrap() async throws {
        // `Content-Range: …/*` leaves the total to `Content-Length` plus the bytes kept, and
        // Int64.max plus them overflowed.
        try await withPartialFile { file in
            try await ScriptedHTTPServer.with({ _, _, _ in
                .respond(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-19/*\r\nContent-Length: 9223372036854775807\r\nETag: \"v\"\r\n\r\nabc",
                    thenClose: true)
            }) { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    try Data(repeating: 1, count: 10).write(to: file)
                    let resume = ResumeData(
                        request: Request(url: server.baseURL), temporaryFileURL: file, bytesReceived: 10, expectedLength: nil,
                        entityTag: "\"v\"", lastModified: nil)
                    let error = await #expect(throws: CourierError.self) { try await manager.download(resumingFrom: resume) }
                    #expect(error?.code == .connectionClosed, "\(String(describing: error))")
                }
            }
        }
    }

    @Test func aBodyAnnouncedPast4GiBIsNotReservedInOneBuffer() async throws {
        // With a maximum above 4 GiB, a `Content-Length` of 5 GB asked `ByteBuffer` for a
        // capacity it cannot count (a trap at the head, before any byte of the body).
        var configuration = SessionConfiguration.default
        configuration.maximumResponseBodySize = 6_000_000_000
        try await ScriptedHTTPServer.with({ _, _, _ in
            .respond("HTTP/1.1 200 OK\r\nContent-Length: 5000000000\r\n\r\nabc", thenClose: true)
        }) { server in
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                let error = await #expect(throws: CourierError.self) { try await manager.data(for: Request(url: server.baseURL)) }
                #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            }
        }
    }

    // MARK: From a caller

    @Test func infiniteAndNaNTimeoutsAreTakenAsTheirBounds() {
        #expect(TimeAmount.seconds(clamping: .infinity, nan: 60) == .seconds(1_000_000_000))
        #expect(TimeAmount.seconds(clamping: -.infinity, nan: 60) == .milliseconds(1))
        #expect(TimeAmount.seconds(clamping: -.infinity, to: 0...1e9, nan: 60) == .zero)
        #expect(TimeAmount.seconds(clamping: .nan, nan: 60) == .seconds(60))
        #expect(TimeAmount.seconds(clamping: 2.5, nan: 60) == .milliseconds(2500))
    }

    @Test func aSessionWithoutTimeoutsWorks() async throws {
        // `.infinity` for "no timeout", both ways: the engine's watchdog made its tick from them.
        var configuration = SessionConfiguration.default
        configuration.timeoutIntervalForRequest = .infinity
        configuration.timeoutIntervalForResource = .infinity
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL, configuration: configuration) { manager in
                var request = Request(url: server.url("/get"))
                request.options.timeoutInterval = .nan
                let response = try await manager.data(for: request)
                #expect(response.response.status == .ok)
            }
        }
    }

    @Test func httpDatesAndCookieFilesHoldAnyDate() {
        // A cookies.txt expiry of 2⁶³ seconds came back as a date `Int64` cannot hold, and
        // writing the file (or the cookie's description) trapped.
        let far = Date(timeIntervalSince1970: 0x1p63)
        #expect(HTTPDate.format(far) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: .nan)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        let file = "example.com\tFALSE\t/\tFALSE\t9223372036854775807\tname\tvalue\n"
        let cookies = NetscapeCookieFile.decode(file).cookies
        #expect(cookies.count == 1)
        #expect(NetscapeCookieFile.encode(cookies).contains("\t253402300799\tname\tvalue"))
    }

    @Test func aCacheFileThatClaimsAnEndlessBodyIsDamage() throws {
        let entry = CacheEntry(
            cached: CachedResponse(
                response: HTTPResponse(status: .ok), data: Data("body".utf8), url: URL(string: "http://example.com/")!,
                storagePolicy: .allowed, requestDate: Date(), responseDate: Date()),
            primaryKey: "http://example.com/", varying: [])
        let good = try CacheEntryFile.encode(entry)
        #expect(try CacheEntryFile.decode(good).cached.data == Data("body".utf8))
        for (field, forged) in [("bodyLength", "9223372036854775807"), ("bodyLength", "-3"), ("requestDate", "1e300")] {
            let damaged = try Self.forging(good, field, forged)
            #expect(throws: (any Error).self, "\(field) \(forged)") { try CacheEntryFile.decode(damaged) }
        }
    }

    /// `file` with its head's `field` set to `value` (the prefix's head length and the checksum
    /// made again, so that only the value is wrong).
    private static func forging(_ file: Data, _ field: String, _ value: String) throws -> Data {
        let prefix = CacheEntryFile.prefixLength
        let headLength = Int(file[file.startIndex + 8..<file.startIndex + 12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        var head = try JSONSerialization.jsonObject(with: file[(file.startIndex + prefix)..<(file.startIndex + prefix + headLength)]) as! [String: Any]
        head[field] = field == "bodyLength" ? Int(value)! as Any : Double(value)! as Any
        let newHead = try JSONSerialization.data(withJSONObject: head)
        var out = Data(file.prefix(8))
        out.append(contentsOf: withUnsafeBytes(of: UInt32(newHead.count).bigEndian, Array.init))
        out.append(file[(file.startIndex + 12)..<(file.startIndex + prefix)])
        out.append(newHead)
        out.append(file[(file.startIndex + prefix + headLength)..<(file.endIndex - 4)])
        let crc = out.withUnsafeBytes { Checksum.crc32($0) }
        out.append(contentsOf: withUnsafeBytes(of: crc.bigEndian, Array.init))
        return out
    }

    @Test func aWebSocketMessageMaximumPast4GiBIsTakenAs4GiB() {
        let machine = WebSocketConnectionStateMachine(maximumMessageSize: .max)
        #expect(machine.maximumMessageSize == Int(UInt32.max))
    }
}
