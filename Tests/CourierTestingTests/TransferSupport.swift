import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// An upload body made on the fly: ``TestServer/GeneratedFile``'s bytes in 64 KiB chunks, so the
/// expected CRC-32 is `TestServer.GeneratedFile(length: total).crc32()`. `observe` sees how many
/// bytes were handed out before each chunk.
struct GeneratedUpload: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let file: TestServer.GeneratedFile
    let observe: @Sendable (Int) -> Void

    init(total: Int, observe: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.file = TestServer.GeneratedFile(length: total)
        self.observe = observe
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let file: TestServer.GeneratedFile
        let observe: @Sendable (Int) -> Void
        var offset = 0

        mutating func next() async -> ByteBuffer? {
            guard self.offset < self.file.length else { return nil }
            self.observe(self.offset)
            let end = Swift.min(self.offset + 65_536, self.file.length)
            let chunk = ByteBuffer(bytes: self.file.bytes(self.offset..<end))
            self.offset = end
            return chunk
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(file: self.file, observe: self.observe) }

    /// The body for AsyncHTTPClient: with `Content-Length`, or chunked.
    func body(knownLength: Bool) -> HTTPClientRequest.Body {
        .stream(self, length: knownLength ? .known(Int64(self.file.length)) : .unknown)
    }
}

/// The process's resident memory in bytes, from `/proc/self/status` (nil where there is none).
func residentMemory() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    else { return nil }
    return kilobytes * 1024
}

/// The largest value seen, shared with `@Sendable` closures.
final class Peak: Sendable {
    private let box = NIOLockedValueBox(0)
    func record(_ value: Int) { self.box.withLockedValue { $0 = max($0, value) } }
    var value: Int { self.box.withLockedValue { $0 } }
}

/// What a streamed response delivered before it ended or failed.
struct Received {
    var response: HTTPClientResponse
    var bytes: [UInt8]
    /// The error that ended the body, or nil when it ended normally.
    var error: (any Error)?

    var text: String { String(decoding: self.bytes, as: UTF8.self) }
    func header(_ name: String) -> String? { self.response.headers.first(name: name) }
}

extension HTTPClient {
    /// Sends a GET (or another body-less request) and reads the body until it ends or fails,
    /// keeping what arrived.
    func receive(_ url: URL, method: HTTPMethod = .GET, headers: HTTPHeaders = [:]) async throws -> Received {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = method
        request.headers = headers
        let response = try await self.execute(request, timeout: .seconds(120))
        var received = Received(response: response, bytes: [])
        do {
            for try await chunk in response.body { received.bytes += chunk.readableBytesView }
        } catch {
            received.error = error
        }
        return received
    }
}
