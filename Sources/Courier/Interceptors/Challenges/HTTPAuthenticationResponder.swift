import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers

/// Answers `WWW-Authenticate` challenges (Basic, Digest) for a session, and authenticates later
/// requests to a protection space it has answered (Basic preemptively, Digest with the server's
/// nonce and a growing nonce count), as URLSession does for a task's delegate.
///
/// The session owns one and consults it first among its retriers and last among its adapters;
/// see ``RequestInterceptor``.
final class HTTPAuthenticationResponder: Sendable {
    /// A task answers at most this many challenges: a hook that keeps answering with a refused
    /// credential does not loop forever.
    static let maximumRounds = 3

    /// A space that was answered, and how to authenticate requests to it.
    struct Answer {
        var space: ProtectionSpace
        var credential: HTTPCredential
        /// The store's ``CredentialStore/generation`` when the credential came from it; nil
        /// when it did not (the URL's, or the challenge hook's). A space answered from the store
        /// follows the store: a credential replaced or removed there is not sent any more.
        var storeGeneration: UInt64?
        var digest: HTTPAuthorization.DigestChallenge?
        /// Digest: how many requests used the nonce.
        var nonceCount = 0
        /// The paths (absolute) at or below which requests are in the space.
        var pathPrefixes: [String]
        /// When it was last recorded or used (``AnsweredSpaces``' clock).
        var lastUsed: UInt64 = 0

        /// The length of the longest of its paths that `path` is at or below; -1 for none.
        func longestPrefix(of path: String) -> Int {
            var longest = -1
            for prefix in self.pathPrefixes where path.hasPrefix(prefix) { longest = max(longest, prefix.count) }
            return longest
        }
    }

    /// The answered spaces, by origin, for at most ``AnsweredSpaces/limit`` spaces.
    struct AnsweredSpaces {
        /// How many spaces are kept: past it, the one used least recently is forgotten (its next
        /// request is challenged again and answered from the credentials). A manager that lives
        /// for months and meets many hosts that challenge would otherwise keep every one.
        static let limit = 1024

        private struct Origin: Hashable {
            var scheme: String
            var host: String
            var port: Int
            init(_ space: ProtectionSpace) {
                (self.scheme, self.host, self.port) = (space.urlScheme, space.host, space.port)
            }
        }

        private var byOrigin: [Origin: [Answer]] = [:]
        private(set) var count = 0
        /// Counts uses, so that the least recently used space is the one with the smallest mark.
        private var clock: UInt64 = 0

        var isEmpty: Bool { self.count == 0 }

        subscript(space: ProtectionSpace) -> Answer? {
            self.byOrigin[Origin(space)]?.first { $0.space == space }
        }

        /// Keeps `answer`, in place of the one for its space if there was one.
        mutating func record(_ answer: Answer) {
            var answer = answer
            self.clock += 1
            answer.lastUsed = self.clock
            let origin = Origin(answer.space)
            if let index = self.byOrigin[origin]?.firstIndex(where: { $0.space == answer.space }) {
                self.byOrigin[origin]![index] = answer
                return
            }
            self.byOrigin[origin, default: []].append(answer)
            self.count += 1
            if self.count > Self.limit { self.forgetLeastRecentlyUsed() }
        }

        /// Changes `space`'s answer in place, if it is still kept.
        mutating func update(_ space: ProtectionSpace, _ change: (inout Answer) -> Void) {
            let origin = Origin(space)
            guard let index = self.byOrigin[origin]?.firstIndex(where: { $0.space == space }) else { return }
            change(&self.byOrigin[origin]![index])
        }

        /// Forgets `space`'s answer.
        mutating func forget(_ space: ProtectionSpace) {
            let origin = Origin(space)
            guard let index = self.byOrigin[origin]?.firstIndex(where: { $0.space == space }) else { return }
            self.byOrigin[origin]!.remove(at: index)
            if self.byOrigin[origin]!.isEmpty { self.byOrigin[origin] = nil }
            self.count -= 1
        }

        /// The answered space of `origin` whose paths hold `path` most narrowly, counted as used
        /// (its Digest nonce count goes up by one).
        mutating func use(origin space: ProtectionSpace, path: String) -> Answer? {
            let origin = Origin(space)
            guard let answers = self.byOrigin[origin] else { return nil }
            var best: (index: Int, prefix: Int)?
            for (index, answer) in answers.enumerated() {
                let prefix = answer.longestPrefix(of: path)
                if prefix >= 0, prefix > (best?.prefix ?? -1) { best = (index, prefix) }
            }
            guard let best else { return nil }
            self.clock += 1
            self.byOrigin[origin]![best.index].nonceCount += 1
            self.byOrigin[origin]![best.index].lastUsed = self.clock
            return self.byOrigin[origin]![best.index]
        }

        private mutating func forgetLeastRecentlyUsed() {
            var oldest: (origin: Origin, space: ProtectionSpace, mark: UInt64)?
            for (origin, answers) in self.byOrigin {
                for answer in answers where answer.lastUsed < (oldest?.mark ?? .max) {
                    oldest = (origin, answer.space, answer.lastUsed)
                }
            }
            if let oldest { self.forget(oldest.space) }
        }
    }

    let credentials: CredentialStore
    private let answers = NIOLockedValueBox(AnsweredSpaces())
    private let makeClientNonce: @Sendable () -> String

    init(credentials: CredentialStore, makeClientNonce: @escaping @Sendable () -> String = HTTPAuthorization.makeClientNonce) {
        self.credentials = credentials
        self.makeClientNonce = makeClientNonce
    }

    /// Whether an `Authorization` value is a Digest answer (its scheme in any case).
    static func isDigest(_ authorization: String) -> Bool {
        authorization.utf8.count > 7 && authorization.utf8.prefix(7).elementsEqual("digest ".utf8) { $0.lowercasedASCII == $1 }
    }

    /// Whether the responder has nothing to do for `request`: no credential anywhere and no
    /// space answered (so the session can skip it on the hot path).
    func isIdle(for request: Request, hasHook: Bool) -> Bool {
        !hasHook && request.url.user == nil && self.credentials.isEmpty && self.answers.withLockedValue { $0.isEmpty }
    }

    // MARK: Adapting

    /// `request` with an `Authorization` for the answered space it falls in, if any and if it
    /// carries none of its own.
    func authenticate(_ request: Request) -> Request {
        // The common case, on every attempt of every task: no space was ever answered.
        guard !self.answers.withLockedValue({ $0.isEmpty }), !request.headerFields.contains(.authorization),
            let origin = ProtectionSpace(url: request.url)
        else { return request }
        let head = request.head
        let path = head.path ?? "/"
        let chosen = self.answers.withLockedValue { answers -> (Answer, Int)? in
            guard let best = answers.use(origin: origin, path: path) else { return nil }
            return (best, best.nonceCount)
        }
        guard let (found, nonceCount) = chosen else { return request }
        var answer = found
        if let generation = answer.storeGeneration, generation != self.credentials.generation {
            // The store changed since the space was answered from it: its credential now, or
            // none (removed: the next request is challenged again, and answered from the store).
            let now = self.credentials.generation
            guard let current = self.credentials.credential(for: answer.space) else {
                self.answers.withLockedValue { $0.forget(answer.space) }
                return request
            }
            answer.credential = current
            self.answers.withLockedValue { answers in
                answers.update(answer.space) {
                    $0.credential = current
                    $0.storeGeneration = now
                }
            }
        }
        // The URL's user and password name this request's credential: they go in the scheme the
        // space was answered with, never the credential it was answered with (another user's).
        let credential = Self.credential(in: request.url) ?? answer.credential
        var request = request
        if let digest = answer.digest {
            request.headerFields[.authorization] = HTTPAuthorization.digest(
                digest, credential: credential, method: head.method.rawValue, uri: path, nonceCount: nonceCount,
                cnonce: self.makeClientNonce())
        } else {
            request.headerFields[.authorization] = HTTPAuthorization.basic(credential)
        }
        return request
    }

    /// The user and password of `url` (percent-decoded), if it has a user.
    static func credential(in url: URL) -> HTTPCredential? {
        url.user.map { HTTPCredential(user: $0.removingPercentEncoding ?? $0, password: url.password?.removingPercentEncoding ?? "") }
    }

    // MARK: Retrying

    /// Answers a 401's challenges: the strongest one Courier implements that the hook (or, without
    /// one, the credentials at hand) can answer.
    /// - Parameter hook: The session's challenge hook (AFNetworking's
    ///   `setTaskDidReceiveAuthenticationChallengeBlock:`), if set.
    /// - Parameter observer: Told of each challenge and the disposition it got (the session's
    ///   event monitors), if set.
    func respond(
        to attempt: FailedAttempt,
        hook: (@Sendable (AuthenticationChallenge) -> ChallengeDisposition)?,
        observer: (@Sendable (AuthenticationChallenge, ChallengeDisposition) -> Void)? = nil
    ) -> RetryDecision {
        guard attempt.error == nil, let response = attempt.response, response.status == .unauthorized else { return .doNotRetry }
        // A retry sends the attempt's first request again: one whose method is not idempotent and
        // that a redirect turned into a `GET` (a `POST` answered `303`: the server did its work)
        // would be done twice. The 401 is the answer. (A `307` or `308` keeps the method: the
        // first server did nothing, and the chain may go again.)
        if attempt.retryWouldRepeatAProcessedRequest { return .doNotRetry }
        let rounds = attempt.retryCount(for: .challenge)
        let sentAuthorization = attempt.request.headerFields.contains(.authorization)
        // An Authorization the caller set (not ours) was refused: the 401 is the caller's to see.
        if rounds == 0, sentAuthorization, !attempt.carriesSessionAuthorization { return .doNotRetry }
        // The session's own Authorization, for a space it answered before, was refused.
        let ownRefused = rounds == 0 && sentAuthorization
        let offered = HTTPChallenge.parse(response.headerFields[values: .wwwAuthenticate])
        let candidates = Self.answerable(offered)
        guard rounds < Self.maximumRounds else {
            // A server that calls every answer's nonce stale ends the task with an error that
            // names the challenge; any other refusal leaves its 401 to the caller.
            guard let (challenge, digest) = candidates.first, let digest, digest.stale else { return .doNotRetry }
            return .doNotRetry(
                failingWith: CourierError(
                    .authenticationFailed,
                    "\(attempt.request.summary): the server still called the nonce stale after \(rounds) answers to its challenge (Digest realm \"\(challenge.realm ?? "")\", algorithm \(digest.algorithm.name))",
                    request: attempt.request, response: response, data: attempt.data))
        }
        let urlCredential = Self.credential(in: attempt.request.url)
        for (challenge, digest) in candidates {
            let method: AuthenticationMethod = digest == nil ? .httpBasic : .httpDigest
            guard let space = ProtectionSpace(url: attempt.request.url, realm: challenge.realm ?? "", authenticationMethod: method) else {
                return .doNotRetry
            }
            let answered = ownRefused ? self.answers.withLockedValue { $0[space] } : nil
            let generation = self.credentials.generation
            let stored = urlCredential == nil ? self.credentials.credential(for: space) : nil
            let proposed = urlCredential ?? stored
            // RFC 7616 3.3: the session's own Digest answer came back with a stale nonce. The
            // credential stands: the request goes again, once, with the new nonce, and the hook
            // is not asked.
            if let answered, let digest, digest.stale {
                // The credential that was sent: the URL's, when it has one (``authenticate(_:)``).
                let sent = urlCredential ?? answered.credential
                observer?(
                    AuthenticationChallenge(
                        protectionSpace: space, challenge: challenge, previousFailureCount: 0, failureResponse: response,
                        request: attempt.request, proposedCredential: sent),
                    .useCredential(sent))
                self.record(
                    space: space, credential: sent, storeGeneration: urlCredential == nil ? answered.storeGeneration : nil, digest: digest,
                    url: attempt.request.url)
                attempt.logger.debug("renewing a stale Digest nonce", metadata: ["courier.realm": "\(space.realm ?? "")"])
                return .retry(reason: .challenge)
            }
            // A stale nonce refuses the nonce, not the credential; the session's own credential,
            // refused, counts as one failure, unless the credential at hand is another (the
            // store's changed since: the new one was never tried). Failures are this space's: a
            // request that carried no `Authorization` had nothing refused (the first answer of a
            // second space in one task: a redirect's target, or another realm of the origin).
            let failures: Int
            if digest?.stale == true {
                failures = 0
            } else if let answered {
                failures = proposed != nil && proposed != (urlCredential ?? answered.credential) ? 0 : max(rounds, 1)
            } else {
                failures = sentAuthorization ? rounds : 0
            }
            let question = AuthenticationChallenge(
                protectionSpace: space, challenge: challenge, previousFailureCount: failures, failureResponse: response,
                request: attempt.request, proposedCredential: proposed)
            let credential: HTTPCredential
            var fromStore: UInt64?
            let disposition = hook?(question) ?? .performDefaultHandling
            observer?(question, disposition)
            switch disposition {
            case .useCredential(let given):
                credential = given
            case .performDefaultHandling:
                guard let proposed, failures == 0 else { return .doNotRetry }
                credential = proposed
                if stored != nil { fromStore = generation }
            case .cancelAuthenticationChallenge:
                return .doNotRetry(
                    failingWith: CourierError(
                        .cancelled, "\(attempt.request.summary): the authentication challenge was cancelled", request: attempt.request,
                        response: response, data: attempt.data))
            case .rejectProtectionSpace:
                continue
            }
            self.record(space: space, credential: credential, storeGeneration: fromStore, digest: digest, url: attempt.request.url)
            attempt.logger.debug(
                "answering an authentication challenge", metadata: ["courier.realm": "\(space.realm ?? "")", "courier.scheme": "\(method.rawValue)"])
            return .retry(reason: .challenge)
        }
        return .doNotRetry
    }

    /// The challenges Courier can answer, strongest first: Digest SHA-256, Digest MD5, Basic.
    static func answerable(_ challenges: [HTTPChallenge]) -> [(HTTPChallenge, HTTPAuthorization.DigestChallenge?)] {
        var ranked: [(challenge: HTTPChallenge, digest: HTTPAuthorization.DigestChallenge?, rank: Int, order: Int)] = []
        for (order, challenge) in challenges.enumerated() {
            if let digest = HTTPAuthorization.DigestChallenge(challenge) {
                ranked.append((challenge, digest, 1 + digest.algorithm.strength, order))
            } else if challenge.hasScheme("Basic") {
                ranked.append((challenge, nil, 0, order))
            }
        }
        return ranked.sorted { ($0.rank, -$0.order) > ($1.rank, -$1.order) }.map { ($0.challenge, $0.digest) }
    }

    private func record(
        space: ProtectionSpace, credential: HTTPCredential, storeGeneration: UInt64?, digest: HTTPAuthorization.DigestChallenge?, url: URL
    ) {
        var prefixes: [String]
        // Paths as they go out (``Request``'s target is percent-encoded), trailing slash kept:
        // `URL.path` decodes and drops it, which made `/~alice/`'s space the whole origin and
        // `/my%20docs/`'s match nothing.
        if let digest, !digest.domain.isEmpty {
            // RFC 7616 3.3: URIs, absolute or not; another origin's are not this space's.
            prefixes = digest.domain.compactMap { entry -> String? in
                guard let uri = URL(string: entry, relativeTo: url)?.absoluteURL, uri.isSameOrigin(as: url) else { return nil }
                let path = uri.path(percentEncoded: true)
                return path.isEmpty ? "/" : path
            }
            if prefixes.isEmpty { prefixes = ["/"] }
        } else if digest != nil {
            prefixes = ["/"]
        } else {
            // RFC 7617 §2.2: the challenged URI's directory and everything below it.
            let encoded = url.path(percentEncoded: true)
            let path = encoded.isEmpty ? "/" : encoded
            prefixes = [String(path[...(path.lastIndex(of: "/") ?? path.startIndex)])]
        }
        self.answers.withLockedValue { answers in
            answers.record(Answer(space: space, credential: credential, storeGeneration: storeGeneration, digest: digest, pathPrefixes: prefixes))
        }
    }
}
