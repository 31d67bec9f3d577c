import HTTPTypes

/// How one request's redirects go (Alamofire's `Redirector`): followed as the engine proposes,
/// not followed (the 3xx is the response), or changed by a closure. Set it on the request
/// (``Request/redirector``); it then decides instead of the session's
/// ``SessionManager/Hooks/taskWillPerformHTTPRedirection`` hook, for every redirect of the
/// request's task.
///
/// ```swift
/// var request = Request(url: url)
/// request.redirector = .doNotFollow
/// request.redirector = .modify { task, proposed, response in
///     var next = proposed
///     next.headerFields[.authorization] = token   // a redirect to another origin drops it
///     return next
/// }
/// ```
///
/// It decides among the redirects the session follows: with `redirectPolicy` `.disallow`
/// (``SessionConfiguration/redirectPolicy``, ``RequestOptions/redirectPolicy``) none is
/// proposed, and the hop limit and the cycle check still end a chain that goes on too long.
public struct Redirector: Sendable {
    /// What a redirect gets.
    public enum Behavior: Sendable {
        /// The request the engine proposes is sent.
        case follow
        /// The redirect response is the task's response.
        case doNotFollow
        /// The closure's request is sent, or, when it returns `nil`, the redirect response is the
        /// task's response. It gets the task, the proposed request and the redirect response.
        case modify(@Sendable (SessionTask, Request, HTTPResponse) -> Request?)
    }

    /// What a redirect gets.
    public let behavior: Behavior

    /// A redirector with `behavior`.
    public init(behavior: Behavior) {
        self.behavior = behavior
    }

    /// Redirects are followed as proposed.
    public static let follow = Redirector(behavior: .follow)
    /// Redirects are not followed: the 3xx is the response.
    public static let doNotFollow = Redirector(behavior: .doNotFollow)

    /// Redirects go where `closure` says, or end the task with the 3xx when it returns `nil`.
    public static func modify(using closure: @escaping @Sendable (SessionTask, Request, HTTPResponse) -> Request?) -> Redirector {
        Redirector(behavior: .modify(closure))
    }

    /// The redirector as the session's redirection hook is written, to take its place for a task.
    var hook: @Sendable (SessionManager, SessionTask, HTTPResponse, Request) -> Request? {
        switch self.behavior {
        case .follow: { _, _, _, proposed in proposed }
        case .doNotFollow: { _, _, _, _ in nil }
        case .modify(let closure): { _, task, response, proposed in closure(task, proposed, response) }
        }
    }
}
