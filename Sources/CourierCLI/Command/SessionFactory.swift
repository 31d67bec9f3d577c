import Courier
import Foundation

/// The session the command sends with: configuration and security policy from the flags.
struct SessionFactory {
    let command: RequestCommand
    let url: URL

    /// The policy from the flags, checked against AFNetworking's rules and the URL's scheme.
    func checkedSecurityPolicy() throws(CLIFailure) -> SecurityPolicy {
        let policy = try self.securityPolicy()
        do {
            try policy.validate()
            try policy.validate(baseURL: self.url)
        } catch {
            throw CLIFailure.usage(error.message)
        }
        return policy
    }

    /// The proxies from `--proxy` and the environment (checked before anything is sent).
    func proxyConfiguration(environment: [String: String] = ProcessInfo.processInfo.environment) throws(CLIFailure) -> ProxyConfiguration? {
        try ProxyFlags.configuration(flags: self.command.proxy, environment: environment)
    }

    /// - Parameters:
    ///   - announcesContinue: false when an `Expect:` item drops the field: the engine then adds no
    ///     `Expect: 100-continue` of its own (``SessionConfiguration/expectContinueThreshold``).
    ///   - sendsUserAgent: false when a `User-Agent:` item drops the field: the engine then adds no
    ///     `User-Agent` of its own (``SessionConfiguration/userAgent``), to a request or a proxy's
    ///     `CONNECT`.
    ///   - asksForEncodings: false when an `Accept-Encoding:` item drops the field: the engine then
    ///     adds no `Accept-Encoding: deflate, gzip`, which only a session that does not decompress
    ///     leaves out (``NIOEngine/Decompression/disabled``); a body comes as the server sent it.
    func makeManager(
        securityPolicy policy: SecurityPolicy, cookieJar: CookieJarFile? = nil, proxy: ProxyConfiguration? = nil, announcesContinue: Bool = true,
        sendsUserAgent: Bool = true, asksForEncodings: Bool = true
    ) -> SessionManager {
        var configuration = SessionConfiguration.default
        // Every request carries the command's own (``RequestBuilder``); the session's goes out with
        // a proxy's CONNECT: the command's too, not the library's default, which names the OS.
        configuration.userAgent = sendsUserAgent ? CourierVersion.userAgent : nil
        configuration.proxy = proxy
        // As curl: every connection, a redirect's to another host too.
        if let path = self.command.unixSocket { configuration.unixSocketPaths = ["*": path] }
        // Checked by the command's validation already.
        configuration.hostAddresses = (try? self.command.hostAddresses()) ?? [:]
        // As curl and HTTPie: a body decodes whatever its ratio (an 11 MB log file gzipped 343 to
        // 1 by Apache failed at the library's default of 100). The command streams what it
        // decodes to its output or a file; nothing of it is held in memory.
        configuration.decompression = asksForEncodings ? .enabled(ratio: .max) : .disabled
        if !announcesContinue { configuration.expectContinueThreshold = nil }
        if let cookieJar { configuration.httpCookieStorage = cookieJar.storage }
        Self.apply(timeout: self.command.timeout, to: &configuration)
        configuration.redirectPolicy = self.command.followsRedirects ? .follow(max: self.command.maxRedirects, allowCycles: true) : .disallow
        let manager = SessionManager(configuration: configuration, securityPolicy: policy)
        manager.completionQueue = .global()
        return manager
    }

    /// `--verify`, `--cacert`, `--pin-cert`, `--pin-key`, `--cert`/`--key` as a ``SecurityPolicy``.
    func securityPolicy() throws(CLIFailure) -> SecurityPolicy {
        var policy = SecurityPolicy.default
        if !self.command.pinCertificates.isEmpty && !self.command.pinKeys.isEmpty {
            throw CLIFailure.usage("choose one of --pin-cert and --pin-key")
        }
        if !self.command.pinCertificates.isEmpty {
            policy = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: try Self.certificates(self.command.pinCertificates, flag: "--pin-cert"))
        } else if !self.command.pinKeys.isEmpty {
            policy = SecurityPolicy(pinningMode: .publicKey, pinnedCertificates: try Self.certificates(self.command.pinKeys, flag: "--pin-key"))
        }
        switch self.command.verify.lowercased() {
        case "yes", "true":
            break
        case "no", "false":
            policy.allowInvalidCertificates = true
            policy.validatesDomainName = false
        default:
            policy.additionalTrustedCertificates += Array(try Self.certificates([self.command.verify], flag: "--verify"))
        }
        if let cacert = self.command.cacert {
            policy.additionalTrustedCertificates += Array(try Self.certificates([cacert], flag: "--cacert"))
        }
        if let cert = self.command.cert, let key = self.command.key {
            try InputFile.checkReadable(cert)
            try InputFile.checkReadable(key)
            do {
                policy.clientIdentity = try ClientIdentity(
                    certificateFile: URL(fileURLWithPath: cert), privateKeyFile: URL(fileURLWithPath: key), passphrase: self.command.pass)
            } catch {
                throw CLIFailure(.unreadableInput, "--cert/--key: " + error.message)
            }
        }
        return policy
    }

    /// `--timeout`: the idle wait for the server's next bytes, and no longer a wait to connect.
    static func apply(timeout: Double?, to configuration: inout SessionConfiguration) {
        guard let timeout else { return }
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForConnect = min(configuration.timeoutIntervalForConnect, timeout)
    }

    /// The certificates in the PEM or DER files at `paths`; an unreadable one is named with `flag`.
    static func certificates(_ paths: [String], flag: String) throws(CLIFailure) -> Set<Certificate> {
        var certificates = Set<Certificate>()
        for path in paths {
            try InputFile.checkReadable(path)
            do {
                certificates.formUnion(try Certificate.certificates(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                throw CLIFailure(.unreadableInput, "\(flag) '\(path)': \(error.message)")
            }
        }
        return certificates
    }
}
