import NIOCore

/// The first handler of an ``HTTP1Connection``'s pipeline, before the response decoder.
///
/// It notes that bytes arrived: a connection that closes under a hop with not one byte of the
/// response read may have been closed by the server while idle (``ResendRule``); the decoder
/// alone would not tell a close after half a status line from a close before anything.
///
/// It also mends response heads NIO's strict decoder would refuse but a user agent reads
/// (``ResponseHeadMender``: obs-folds, bare LFs, a repeated `Content-Length` of one number, one
/// beside `Transfer-Encoding: chunked`), and keeps a server's own reason phrase, which the
/// decoder drops; body bytes go through untouched.
final class HTTP1ReadWatcher: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Whether any byte arrived since ``HopHandler`` last cleared it (at each hop).
    var sawBytes = false
    /// The connection is idle: its last response ended and no request went out since. Set and
    /// cleared by ``HopHandler``.
    var isIdle = false
    private var mender = ResponseHeadMender()
    /// The last bytes of the previous read, held back until the next bytes say what they are (a
    /// line break that may fold, or a head from its first `Content-Length` or
    /// `Transfer-Encoding` on, until it ends).
    private var held: ByteBuffer?

    /// The next bytes from the server start a response head (a request is going out).
    func expectHead() {
        self.mender.expectHead()
    }

    /// The final head's reason phrase, when the server's is not the standard one for `code` (NIO's
    /// decoder gives the standard one); nil otherwise.
    func reasonPhrase(for code: Int) -> String? {
        guard let kept = self.mender.reasonPhrase, kept.code == code else { return nil }
        return kept.phrase
    }

    /// Whether the final head came with both `Content-Length` and `Transfer-Encoding: chunked`:
    /// the first was removed before the decoder, and the connection must not carry another
    /// request (``ResponseHeadMender/droppedContentLength``).
    var droppedContentLength: Bool { self.mender.droppedContentLength }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A server sends nothing on an idle connection (RFC 9112 9.3: no request, no answer).
        // What comes anyway, a stray answer in part (the rest of a response it sent twice, a
        // `408` it sends as it gives up on the connection) or whole, would have been read as the
        // start of the next request's answer: the connection is closed, as Go's transport closes
        // one on "an unsolicited response on an idle HTTP channel". (A whole answer alone failed
        // the decoder already; a part of one waited for the next request.)
        if self.isIdle {
            context.close(promise: nil)
            return
        }
        self.sawBytes = true
        guard self.mender.isScanning || self.held != nil else {
            context.fireChannelRead(data)
            return
        }
        var buffer = self.unwrapInboundIn(data)
        if var held = self.held {
            self.held = nil
            held.writeBuffer(&buffer)
            buffer = held
        }
        let holdBack = self.mender.scan(&buffer)
        if holdBack > 0 {
            self.held = buffer.getSlice(at: buffer.writerIndex - holdBack, length: holdBack)
            buffer.moveWriterIndex(to: buffer.writerIndex - holdBack)
        }
        if buffer.readableBytes > 0 { context.fireChannelRead(self.wrapInboundOut(buffer)) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // The decoder sees every byte that came before the close.
        if let held = self.held {
            self.held = nil
            context.fireChannelRead(self.wrapInboundOut(held))
        }
        context.fireChannelInactive()
    }
}
