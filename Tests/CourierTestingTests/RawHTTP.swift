import Foundation
import NIOCore
import NIOPosix

/// A response read straight off a plain TCP socket until the server closed it, for checks that
/// an HTTP client would blur (how many bytes came before the connection dropped).
struct RawResponse {
    /// The status line, without its CRLF.
    var statusLine: String
    /// The header fields, names as sent.
    var headers: [(name: String, value: String)]
    /// Every byte after the head, as received (still chunk-encoded when the response is chunked).
    var body: [UInt8]

    func header(_ name: String) -> String? {
        self.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The body with its chunked encoding removed, and whether the last chunk arrived.
    func dechunked() -> (body: [UInt8], complete: Bool) {
        var body: [UInt8] = []
        var rest = self.body[...]
        while let lineEnd = rest.firstRange(of: [13, 10]) {
            guard let size = Int(String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self), radix: 16) else { break }
            if size == 0 { return (body, true) }
            let start = lineEnd.upperBound
            guard rest.distance(from: start, to: rest.endIndex) >= size + 2 else {
                body += rest[start...].prefix(size)
                break
            }
            body += rest[start..<rest.index(start, offsetBy: size)]
            rest = rest[rest.index(start, offsetBy: size + 2)...]
        }
        return (body, false)
    }
}

/// Sends `request` (a whole HTTP/1.1 request, CRLFs included) to `127.0.0.1:port` and reads until
/// the server closes the connection.
func rawExchange(port: Int, _ request: String) async throws -> RawResponse {
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .connect(host: "127.0.0.1", port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
    let bytes = try await channel.executeThenClose { inbound, outbound in
        try await outbound.write(ByteBuffer(string: request))
        var bytes: [UInt8] = []
        for try await chunk in inbound { bytes += chunk.readableBytesView }
        return bytes
    }
    guard let headEnd = bytes.firstRange(of: [13, 10, 13, 10]) else {
        return RawResponse(statusLine: String(decoding: bytes, as: UTF8.self), headers: [], body: [])
    }
    let lines = String(decoding: bytes[..<headEnd.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
    let headers = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
        guard let colon = line.firstIndex(of: ":") else { return nil }
        return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }
    return RawResponse(statusLine: lines[0], headers: headers, body: Array(bytes[headEnd.upperBound...]))
}
