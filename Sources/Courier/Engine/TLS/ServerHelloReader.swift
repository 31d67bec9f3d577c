import NIOCore

/// Finds the cipher suite a TLS server chose in its `ServerHello`, from the bytes the server sends
/// before any of them is decrypted. swift-nio-ssl does not tell which suite a handshake agreed,
/// but TLS 1.2 and 1.3 both send the `ServerHello` in the clear (RFC 5246 section 7.4.1.3, RFC 8446
/// section 4.1.3), in handshake records before anything encrypted. (A TLS 1.3 `HelloRetryRequest`
/// is a `ServerHello` too, and the server keeps its suite after it.)
///
/// Pure: fed the server's bytes in order, it says when it has the suite, needs more, or has
/// given up (the bytes are no TLS handshake, or too many arrived without a `ServerHello`).
struct ServerHelloReader {
    enum Outcome: Equatable {
        case needMore
        case found(TLSCipherSuite)
        /// Not a TLS handshake, or no `ServerHello` where one must be: the reader has nothing to say.
        case gaveUp
    }

    /// How many bytes to keep looking through: a `ServerHello` is in the server's first record.
    static let limit = 4 * 1024

    private var bytes: [UInt8] = []
    private(set) var outcome = Outcome.needMore

    /// Takes the next bytes the server sent (without consuming them) and returns what is known.
    mutating func read(_ buffer: ByteBuffer) -> Outcome {
        guard self.outcome == .needMore else { return self.outcome }
        self.bytes.append(contentsOf: buffer.readableBytesView.prefix(Self.limit - self.bytes.count))
        self.outcome = Self.parse(self.bytes)
        if self.outcome == .needMore, self.bytes.count >= Self.limit { self.outcome = .gaveUp }
        return self.outcome
    }

    /// The outcome for the server's first `bytes`.
    static func parse(_ bytes: [UInt8]) -> Outcome {
        // The handshake messages' bytes, out of their records (a message may span records, and a
        // record may have arrived in part).
        var handshake: [UInt8] = []
        var index = 0
        // Whether a record other than a handshake record came (TLS 1.3 servers send a
        // ChangeCipherSpec, then encrypted records, right after the ServerHello).
        var otherRecord = false
        while index < bytes.count {
            // TLSPlaintext: type, legacy version (3, x), length.
            guard bytes[index] == 22 else {
                otherRecord = true
                break
            }
            guard bytes.count - index >= 5 else { break }
            guard bytes[index + 1] == 3 else { return .gaveUp }
            let length = Int(bytes[index + 3]) << 8 | Int(bytes[index + 4])
            let start = index + 5
            handshake += bytes[start..<min(start + length, bytes.count)]
            index = start + length
        }
        let outcome = Self.serverHello(handshake)
        return outcome == .needMore && otherRecord ? .gaveUp : outcome
    }

    /// The suite in the first handshake message, which must be a `ServerHello`: type 2, a 3-byte
    /// length, then legacy version (2), random (32), session id (1 + up to 32), cipher suite (2).
    private static func serverHello(_ message: [UInt8]) -> Outcome {
        guard let type = message.first else { return .needMore }
        guard type == 2 else { return .gaveUp }
        let sessionIDLength = 4 + 2 + 32
        guard message.count > sessionIDLength else { return .needMore }
        let idLength = Int(message[sessionIDLength])
        guard idLength <= 32 else { return .gaveUp }
        let suite = sessionIDLength + 1 + idLength
        let declared = Int(message[1]) << 16 | Int(message[2]) << 8 | Int(message[3])
        guard declared >= suite + 2 - 4 else { return .gaveUp }
        guard message.count >= suite + 2 else { return .needMore }
        return .found(TLSCipherSuite(rawValue: UInt16(message[suite]) << 8 | UInt16(message[suite + 1])))
    }
}

/// Watches the bytes a TLS server sends, on their way to swift-nio-ssl's handler (it sits before
/// it), for the `ServerHello`'s cipher suite; reports it once, then leaves the pipeline. Every
/// byte passes on unchanged.
///
/// On its channel's event loop only.
final class ServerHelloObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var reader = ServerHelloReader()
    private let report: (TLSCipherSuite) -> Void
    private var leaving = false

    /// - Parameter report: Called with the suite, on the event loop, before the bytes that name it
    ///   reach the TLS handler (and so before the handshake can complete).
    init(report: @escaping (TLSCipherSuite) -> Void) {
        self.report = report
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.leaving else {
            context.fireChannelRead(data)
            return
        }
        let outcome = self.reader.read(Self.unwrapInboundIn(data))
        // Reported before the bytes go on: the handshake cannot complete before they do.
        if case .found(let suite) = outcome { self.report(suite) }
        context.fireChannelRead(data)
        if outcome != .needMore {
            self.leaving = true
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }
}
