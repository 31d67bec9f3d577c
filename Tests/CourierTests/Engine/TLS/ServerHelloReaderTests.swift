@testable import Courier
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

/// Reading the server's cipher suite from its `ServerHello`: the pure reader on bytes made here,
/// the observer in a pipeline; `TLSConnectorTests` checks it against `openssl s_server`.
@Suite struct ServerHelloReaderTests {
    /// A `ServerHello` handshake message choosing `suite`, with a session id of `idLength` bytes.
    static func serverHello(suite: UInt16, idLength: Int = 32, extensions: [UInt8] = [0x00, 0x00]) -> [UInt8] {
        var body: [UInt8] = [0x03, 0x03] + [UInt8](repeating: 0xAB, count: 32)
        body += [UInt8(idLength)] + [UInt8](repeating: 0x11, count: idLength)
        body += [UInt8(suite >> 8), UInt8(suite & 0xFF), 0x00] + extensions
        return [0x02, 0x00, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    /// `message` in handshake records of at most `fragment` bytes each.
    static func records(_ message: [UInt8], fragment: Int = 16_384, type: UInt8 = 22) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = 0
        while index < message.count {
            let part = message[index..<min(index + fragment, message.count)]
            bytes += [type, 0x03, 0x03, UInt8(part.count >> 8), UInt8(part.count & 0xFF)] + part
            index += part.count
        }
        return bytes
    }

    static func feed(_ bytes: [UInt8], inPiecesOf size: Int) -> [ServerHelloReader.Outcome] {
        var reader = ServerHelloReader()
        var outcomes: [ServerHelloReader.Outcome] = []
        var index = 0
        while index < bytes.count {
            let piece = bytes[index..<min(index + size, bytes.count)]
            outcomes.append(reader.read(ByteBuffer(bytes: piece)))
            index += piece.count
        }
        return outcomes
    }

    @Test(arguments: [1, 2, 5, 7, 40, 4096])
    func findsTheSuiteHoweverTheBytesArrive(pieceSize: Int) {
        // A TLS 1.2 ServerHello, then a certificate message: the suite is known once its two
        // bytes are in, and not before.
        let hello = Self.serverHello(suite: 0xC02F)
        let bytes = Self.records(hello) + Self.records([0x0B, 0x00, 0x00, 0x03, 1, 2, 3])
        let outcomes = Self.feed(bytes, inPiecesOf: pieceSize)
        let suiteEnd = 5 + 4 + 2 + 32 + 1 + 32 + 2
        let firstFound = outcomes.firstIndex { $0 != .needMore }
        #expect(firstFound == (suiteEnd - 1) / pieceSize)
        #expect(outcomes[firstFound!] == .found(.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256))
        #expect(outcomes.dropFirst(firstFound!).allSatisfy { $0 == .found(.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) })
    }

    @Test func aServerHelloSplitOverRecordsIsRead() {
        // TLS 1.3 with an empty session id; the message split into 10-byte records.
        let bytes = Self.records(Self.serverHello(suite: 0x1303, idLength: 0), fragment: 10)
        #expect(Self.feed(bytes, inPiecesOf: 3).last == .found(.TLS_CHACHA20_POLY1305_SHA256))
        #expect(TLSCipherSuite.TLS_CHACHA20_POLY1305_SHA256.description == "TLS_CHACHA20_POLY1305_SHA256")
        #expect(TLSCipherSuite(rawValue: 0xC0AF).description == "0xC0AF")
        #expect(TLSCipherSuite(rawValue: 0x0A).description == "0x000A")
    }

    @Test(arguments: [
        ("an alert first", Self.records([0x02, 0x28], type: 21)),
        ("HTTP instead of TLS", Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8)),
        ("a handshake message that is no ServerHello", Self.records([0x0E, 0x00, 0x00, 0x00])),
        ("a session id longer than 32 bytes", Self.records(Self.serverHello(suite: 0x1301, idLength: 33))),
        ("a ServerHello too short for its suite", Self.records([0x02, 0x00, 0x00, 0x03, 0x03, 0x03, 0x00] + [UInt8](repeating: 0, count: 40))),
        ("SSL 2", [0x80, 0x2E, 0x04, 0x00, 0x02, 0x00, 0x02]),
    ])
    func givesUpOnWhatIsNoServerHello(_ name: String, _ bytes: [UInt8]) {
        #expect(Self.feed(bytes, inPiecesOf: 1000).last == .gaveUp, "\(name)")
    }

    @Test func givesUpAfterItsLimit() {
        // Empty handshake records carry no message byte: the reader keeps looking until its limit.
        var reader = ServerHelloReader()
        let empty: [UInt8] = [22, 0x03, 0x03, 0x00, 0x00]
        var outcomes: [ServerHelloReader.Outcome] = []
        for _ in 0..<(ServerHelloReader.limit / empty.count + 1) {
            outcomes.append(reader.read(ByteBuffer(bytes: empty)))
        }
        #expect(outcomes.dropLast().allSatisfy { $0 == .needMore })
        #expect(outcomes.last == .gaveUp)
    }

    @Test func theObserverPassesEveryByteOnReportsOnceAndLeaves() throws {
        let reported = NIOLockedValueBox<[TLSCipherSuite]>([])
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ServerHelloObserver { suite in reported.withLockedValue { $0.append(suite) } })
        let bytes = Self.records(Self.serverHello(suite: 0x1302)) + [23, 3, 3, 0, 2, 0xEE, 0xFF]
        let pieces = [Array(bytes[0..<20]), Array(bytes[20..<60]), Array(bytes[60...])]
        for piece in pieces { try channel.writeInbound(ByteBuffer(bytes: piece)) }
        var received: [UInt8] = []
        while let buffer = try channel.readInbound(as: ByteBuffer.self) { received += buffer.readableBytesView }
        #expect(received == bytes)
        #expect(reported.withLockedValue { $0 } == [.TLS_AES_256_GCM_SHA384])
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: ServerHelloObserver.self) }
        _ = try channel.finish()
    }
}
