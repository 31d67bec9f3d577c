import Foundation
import HTTPTypes

/// A server's demand for credentials, as the session's challenge hook sees it (URLSession's
/// `URLAuthenticationChallenge`).
public struct AuthenticationChallenge: Sendable {
    /// Where the credential would apply.
    public var protectionSpace: ProtectionSpace
    /// The challenge as the server sent it.
    public var challenge: HTTPChallenge
    /// How many times this task already answered a challenge and was refused.
    public var previousFailureCount: Int
    /// The 401 response that carried the challenge.
    public var failureResponse: HTTPResponse
    /// The request that was refused.
    public var request: Request
    /// The credential the session would use if the hook answers ``ChallengeDisposition/performDefaultHandling``
    /// (from the URL's user information or the ``CredentialStore``), if any.
    public var proposedCredential: HTTPCredential?

    /// A challenge.
    public init(
        protectionSpace: ProtectionSpace, challenge: HTTPChallenge, previousFailureCount: Int, failureResponse: HTTPResponse,
        request: Request, proposedCredential: HTTPCredential?
    ) {
        self.protectionSpace = protectionSpace
        self.challenge = challenge
        self.previousFailureCount = previousFailureCount
        self.failureResponse = failureResponse
        self.request = request
        self.proposedCredential = proposedCredential
    }
}

/// How to answer an ``AuthenticationChallenge`` (URLSession's `AuthChallengeDisposition`).
public enum ChallengeDisposition: Sendable, Hashable {
    /// Answer with this credential.
    case useCredential(HTTPCredential)
    /// Do what the session does without a hook: the proposed credential, when there is one and
    /// the task was not refused with it already; else take the 401 as the response.
    case performDefaultHandling
    /// Fail the task with ``CourierError/Code/cancelled``.
    case cancelAuthenticationChallenge
    /// Skip this challenge; the next one the server offered, if any, is tried.
    case rejectProtectionSpace
}
