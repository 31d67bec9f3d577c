import NIOCore
import NIOSOCKS

/// The client's side of a SOCKS5 handshake (RFC 1928) with the username/password method (RFC
/// 1929), without I/O: the greeting to send, then what to do with each piece of the proxy's
/// answers.
///
/// The greeting offers "no authentication", and "username/password" too when the proxy has
/// credentials (as curl and Go's client do). The proxy picks one: for username/password the
/// credentials go next and must be accepted; then the `CONNECT` request for the target goes, and
/// its reply opens the tunnel or says why not. Bytes may arrive cut anywhere. Something other
/// than SOCKS5, a method that was not offered, credentials refused, an error reply, bytes beyond
/// the message the proxy was due to send (it speaks only when spoken to), a close, an error or the
/// timeout fail the handshake, each as its ``ProxyTunnelFailure``.
struct SOCKS5StateMachine: ProxyHandshake {
    typealias Action = ProxyHandshakeAction

    private enum State {
        case idle
        case awaitingMethod
        case awaitingCredentialsVerdict
        case awaitingReply
        case established
        case failed
    }

    /// Protocol numbers (RFC 1928 and 1929).
    private enum Byte {
        static let version: UInt8 = 0x05
        static let noAuthentication: UInt8 = 0x00
        static let usernamePassword: UInt8 = 0x02
        static let credentialsVersion: UInt8 = 0x01
        static let connect: UInt8 = 0x01
        static let ipv4: UInt8 = 0x01
        static let domain: UInt8 = 0x03
        static let ipv6: UInt8 = 0x04
    }

    private var state = State.idle
    /// Bytes of the answer under way.
    private var received: [UInt8] = []
    private let request: [UInt8]
    /// The username/password message, when the proxy has credentials.
    private let credentials: [UInt8]?

    /// A handshake for `target`, offering `username` and `password` when a username is given.
    /// - Throws: ``ProxyTunnelFailure/unusable(_:)`` for a name, user name or password SOCKS5
    ///   cannot carry: a user name of 1 to 255 bytes and a password of at most 255 (UTF-8).
    init(target: SOCKSAddress, username: String?, password: String?) throws(ProxyTunnelFailure) {
        self.request = try Self.connectRequest(for: target)
        guard let username else {
            self.credentials = nil
            return
        }
        if let why = Self.refusal(username: username, password: password) { throw .unusable(why) }
        let user = Array(username.utf8)
        let secret = Array((password ?? "").utf8)
        self.credentials = [Byte.credentialsVersion, UInt8(user.count)] + user + [UInt8(secret.count)] + secret
    }

    /// Why RFC 1929's message cannot carry these credentials (a user name of 1 to 255 bytes of
    /// UTF-8, a password of at most 255), or nil when it can. A proxy URL is checked with it too.
    static func refusal(username: String, password: String?) -> String? {
        guard (1...255).contains(username.utf8.count), (password?.utf8.count ?? 0) <= 255 else {
            return "SOCKS5 carries a user name of 1 to 255 bytes and a password of at most 255"
        }
        return nil
    }

    /// The `CONNECT` request: version, command, reserved, then the address and port.
    private static func connectRequest(for target: SOCKSAddress) throws(ProxyTunnelFailure) -> [UInt8] {
        var bytes: [UInt8] = [Byte.version, Byte.connect, 0x00]
        let port: Int
        switch target {
        case .domain(let name, let namePort):
            let utf8 = Array(name.utf8)
            guard (1...255).contains(utf8.count) else { throw .unusable("SOCKS5 carries host names of 1 to 255 bytes") }
            bytes += [Byte.domain, UInt8(utf8.count)] + utf8
            port = namePort
        case .address(let address):
            guard let text = address.ipAddress, let ip = IPAddress(text) else {
                throw .unusable("SOCKS5 cannot name \(address)")
            }
            bytes += [ip.isIPv6 ? Byte.ipv6 : Byte.ipv4] + ip.bytes
            port = address.port ?? 0
        }
        guard (1...65535).contains(port) else { throw .unusable("the port \(port) is not between 1 and 65535") }
        return bytes + [UInt8(port >> 8), UInt8(port & 0xFF)]
    }

    /// The handshake begins: the greeting to send.
    mutating func start() -> Action {
        guard case .idle = self.state else { return .wait }
        self.state = .awaitingMethod
        let methods = self.credentials == nil ? [Byte.noAuthentication] : [Byte.noAuthentication, Byte.usernamePassword]
        return .write([Byte.version, UInt8(methods.count)] + methods)
    }

    /// Whether the handshake is under way (or not yet started): neither open nor failed.
    private var isOpen: Bool {
        switch self.state {
        case .idle, .awaitingMethod, .awaitingCredentialsVerdict, .awaitingReply: true
        case .established, .failed: false
        }
    }

    /// Bytes from the proxy.
    mutating func received(_ buffer: ByteBuffer) -> Action {
        guard self.isOpen, self.state != .idle else { return .wait }
        self.received += buffer.readableBytesView
        switch self.state {
        case .awaitingMethod: return self.methodChosen()
        case .awaitingCredentialsVerdict: return self.credentialsJudged()
        default: return self.replied()
        }
    }

    /// Version and method: send the credentials or the request.
    private mutating func methodChosen() -> Action {
        guard self.received.count >= 2 else { return self.checkVersion() }
        guard self.received[0] == Byte.version else { return self.notSOCKS5(self.received[0]) }
        let method = self.received[1]
        if let extra = self.overrun(2, "its method selection") { return extra }
        self.received = []
        if method == Byte.noAuthentication {
            self.state = .awaitingReply
            return .write(self.request)
        }
        if method == Byte.usernamePassword, let credentials = self.credentials {
            self.state = .awaitingCredentialsVerdict
            return .write(credentials)
        }
        return self.fail(.socksAuthentication(NIOSOCKS.AuthenticationMethod(value: method)))
    }

    /// RFC 1929's version and status: 0 accepts. The version byte is not checked (some proxies
    /// answer 5 rather than 1), as curl does not.
    private mutating func credentialsJudged() -> Action {
        guard self.received.count >= 2 else { return .wait }
        let status = self.received[1]
        if let extra = self.overrun(2, "its answer to the credentials") { return extra }
        self.received = []
        guard status == 0 else { return self.fail(.socksCredentialsRefused(status: status)) }
        self.state = .awaitingReply
        return .write(self.request)
    }

    /// The reply to `CONNECT`: an error as soon as its code is in; success once the bound
    /// address is complete (its type says how long it is).
    private mutating func replied() -> Action {
        guard self.received.count >= 2 else { return self.checkVersion() }
        guard self.received[0] == Byte.version else { return self.notSOCKS5(self.received[0]) }
        let reply = self.received[1]
        guard reply == 0 else { return self.fail(.socksReply(SOCKSServerReply(value: reply))) }
        guard self.received.count >= 5 else { return .wait }
        guard self.received[2] == 0 else {
            return self.fail(.invalidResponse("a malformed SOCKS5 message (reserved byte \(self.received[2]))"))
        }
        let length: Int
        switch self.received[3] {
        case Byte.ipv4: length = 4 + 4 + 2
        case Byte.ipv6: length = 4 + 16 + 2
        case Byte.domain: length = 4 + 1 + Int(self.received[4]) + 2
        case let type: return self.fail(.invalidResponse("a malformed SOCKS5 message (address type \(type))"))
        }
        guard self.received.count >= length else { return .wait }
        guard self.received.count == length else { return self.fail(.unsolicitedBytes(self.received.count - length)) }
        self.received = []
        self.state = .established
        return .established
    }

    /// With the first byte in, fails at once when it is not SOCKS5's version.
    private mutating func checkVersion() -> Action {
        guard let version = self.received.first, version != Byte.version else { return .wait }
        return self.notSOCKS5(version)
    }

    private mutating func notSOCKS5(_ version: UInt8) -> Action {
        self.fail(.invalidResponse("something that is not SOCKS5 (version byte \(version))"))
    }

    /// A failure when more than `length` bytes came: the proxy spoke before Courier's next message.
    private mutating func overrun(_ length: Int, _ what: String) -> Action? {
        let extra = self.received.count - length
        guard extra > 0 else { return nil }
        return self.fail(.invalidResponse("\(extra) byte\(extra == 1 ? "" : "s") after \(what), before Courier's next message"))
    }

    /// The connection closed.
    mutating func closed() -> Action {
        guard self.isOpen else { return .wait }
        return self.fail(.closed(received: self.received.count))
    }

    /// The timeout fired.
    mutating func timedOut(after timeout: TimeAmount) -> Action {
        guard self.isOpen else { return .wait }
        return self.fail(.timedOut(timeout))
    }

    /// The channel reported an error (its text).
    mutating func errorCaught(_ text: String) -> Action {
        guard self.isOpen else { return .wait }
        return self.fail(.connectionError(text))
    }

    private mutating func fail(_ failure: ProxyTunnelFailure) -> Action {
        self.state = .failed
        self.received = []
        return .fail(failure)
    }
}
