import NIOCore

/// The first handler of an ``HTTP1Connection``'s pipeline: notes that bytes arrived, before the
/// response decoder sees them. A connection that closes under a hop with not one byte of the
/// response read may have been closed by the server while idle (``HTTP1ResendRule``); the decoder
/// alone would not tell a close after half a status line from a close before anything.
final class HTTP1ReadWatcher: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Whether any byte arrived since ``HTTP1ConnectionHandler`` last cleared it (at each hop).
    var sawBytes = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.sawBytes = true
        context.fireChannelRead(data)
    }
}
