import Courier
import CourierTesting
import Foundation
import NIOCore
import Testing

/// Large bodies streamed both ways, checked by CRC-32, decompression, and connection reuse.
@Suite("Transport: bodies and connections")
struct TransportBodyTests {
    @Test(arguments: Transport.allCases)
    func aLargeDownloadArrivesWhole(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            let file = TestServer.GeneratedFile(length: 8 << 20)
            let download = try await manager.download(Request(url: server.url(file.path())))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            #expect(CRC32.checksum(of: try Data(contentsOf: download.fileURL)) == file.crc32())
        }
    }

    @Test(arguments: Transport.allCases)
    func largeUploadsArriveWhole(_ transport: Transport) async throws {
        try await withScratchDirectory { folder in
            try await transport.run { server, manager in
                let source = TestServer.GeneratedFile(length: 4 << 20)
                let fileURL = folder.appendingPathComponent("upload.bin")
                try Data(source.bytes()).write(to: fileURL)
                let fromFile = try await manager.response(
                    for: Request(method: .post, url: server.url("/courier/upload"), body: .file(fileURL)),
                    serializer: JSONResponseSerializer())
                let echo = fromFile.value as? [String: any Sendable]
                #expect(echo?["size"] as? Int == 4 << 20)
                #expect(echo?["crc32"] as? String == source.crc32().hex)

                let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                    for start in stride(from: 0, to: 1 << 20, by: 100_000) {
                        continuation.yield(ByteBuffer(bytes: source.bytes(start..<min(1 << 20, start + 100_000))))
                    }
                    continuation.finish()
                }
                let streamed = try await manager.response(
                    for: Request(method: .put, url: server.url("/courier/upload"), body: .stream(chunks, length: .unknown)),
                    serializer: JSONResponseSerializer())
                let streamedEcho = streamed.value as? [String: any Sendable]
                if !transport.isHTTP2 {
                    // HTTP/2 has no chunked coding: a body of unknown length is just DATA frames.
                    #expect(streamedEcho?["chunked"] as? Bool == true)
                }
                #expect(streamedEcho?["size"] as? Int == 1 << 20)
                #expect(streamedEcho?["crc32"] as? String == TestServer.GeneratedFile(length: 1 << 20).crc32().hex)
            }
        }
    }

    @Test(arguments: Transport.allCases, ["gzip", "deflate"])
    func compressedBodiesAreDecompressed(_ transport: Transport, coding: String) async throws {
        try await transport.run { server, manager in
            let response = try await manager.get(coding)
            let json = try #require(response.value.json)
            let flag = json[coding == "gzip" ? "gzipped" : "deflated"]
            #expect(flag as? Bool == true || (flag as? NSNumber)?.boolValue == true)
            let asked = server.receivedRequests.last?.value(forHTTPHeaderField: "Accept-Encoding") ?? ""
            #expect(asked.contains(coding), "the engine asks for \(coding) (it asked for \"\(asked)\")")
        }
    }

    @Test(arguments: Transport.allCases)
    func sequentialRequestsReuseOneConnection(_ transport: Transport) async throws {
        try await transport.run { server, manager in
            for _ in 0..<30 {
                _ = try await manager.get("get")
            }
            #expect(server.requestCount == 30)
            // Each request starts after the previous one completed: the kept-alive connection
            // is free again, so one connection carries all of them (tunnels included: one
            // connection to the proxy, one from it); unless the proxy opens one per request.
            #expect(server.connectionCount == (transport.proxyClosesEachConnection ? 30 : 1))
        }
    }
}
