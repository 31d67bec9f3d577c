import Dispatch
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Synchronization

/// Makes and runs tasks on one engine (AFNetworking's `AFURLSessionManager`).
///
/// A manager owns its engine and its connections. Make one per configuration and keep it (one
/// long-lived manager, such as ``HTTPSessionManager/shared``, is the easy path).
///
/// What keeps a manager alive: your references, and each of its tasks from the task's creation
/// until its completion has run (a task you made and never resumed, until you let go of it).
/// Nothing else: a finished task keeps nothing of Courier's alive, and its delegate has left the
/// manager's registry. So a manager you drop is freed once its last task has completed, whether or
/// not it was invalidated, and its engine goes with it, closing every connection at once.
/// AFNetworking's trap (a session that retains its delegate until invalidated, so a forgotten
/// manager leaks) does not exist here; ``invalidate(cancelingTasks:)-7w13y`` is still the way to end a
/// manager on purpose: it stops new tasks, cancels or drains the running ones, and tells you when
/// the engine is down.
///
/// ```swift
/// let manager = SessionManager()
/// let task = manager.dataTask(with: Request(url: url)) { response, object, error in
///     print(response?.status ?? "no response", object ?? "nil", error ?? "no error")
/// }
/// task.resume()
/// ```
public class SessionManager: @unchecked Sendable {
    // @unchecked: the mutable state is in `registry` and `settings`, each behind its own lock;
    // the rest is immutable.

    /// Closures AFNetworking users set with `setTaskDidCompleteBlock:` and kin. A task takes the
    /// hooks in force when it is made, and lets go of them when its ``taskDidComplete`` hook is
    /// called: a hook that keeps the tasks it sees (in a list it captures) does not keep a finished
    /// task alive through the task's own copy, only through the manager's, as AFNetworking's blocks
    /// do.
    public struct Hooks: Sendable {
        /// A task finished: called once, before its completion handler runs (before its `async`
        /// call returns), with the transfer's error (AFNetworking's `setTaskDidCompleteBlock:`):
        /// nil when the response arrived whole, also one the serializer then refuses (a 404, a
        /// body that does not parse), whose error only the completion handler gets.
        public var taskDidComplete: (@Sendable (SessionManager, SessionTask, CourierError?) -> Void)?
        /// A task's metrics are complete (AFNetworking's `setTaskDidFinishCollectingMetricsBlock:`):
        /// called once per task, just before its completion, on the thread that completes it: for a
        /// data task made by an `async` call the calling task, for one with a completion handler
        /// the processing queue (before serialization), never an event loop for either.
        public var taskDidFinishCollectingMetrics: (@Sendable (SessionManager, SessionTask, TaskMetrics) -> Void)?
        /// A data task got its response head: allow it, or cancel the task. Called on an engine thread.
        public var dataTaskDidReceiveResponse: (@Sendable (SessionManager, SessionTask, HTTPResponse) -> ResponseDisposition)?
        /// A data task got body bytes. Called on an engine thread.
        public var dataTaskDidReceiveData: (@Sendable (SessionManager, SessionTask, Data) -> Void)?
        /// A redirect is about to be followed: return the proposed request, a changed one, or nil
        /// to stop and take the redirect response. Called on an engine thread. A request's own
        /// ``Redirector`` (``Request/redirector``) takes its place for that request's task.
        public var taskWillPerformHTTPRedirection: (@Sendable (SessionManager, SessionTask, HTTPResponse, Request) -> Request?)?
        /// Body bytes went out: bytes sent now, in all, and expected in all (-1 when unknown).
        /// Called on an engine thread.
        public var taskDidSendBodyData: (@Sendable (SessionManager, SessionTask, Int64, Int64, Int64) -> Void)?
        /// A download wrote body bytes: bytes now, in all, and expected in all (-1 when unknown).
        /// For a download that continues resume data, "in all" counts the partial file's bytes
        /// from before, as ``SessionTask/downloadProgress`` does.
        /// Called on an engine thread, as the bytes are handed to the file writer.
        public var downloadTaskDidWriteData: (@Sendable (SessionManager, DownloadTask, Int64, Int64, Int64) -> Void)?
        /// A data task's response is about to be stored in the session's
        /// ``SessionConfiguration/responseCache`` (AFNetworking's
        /// `setDataTaskWillCacheResponseBlock:`): return it as it is, changed (its body, headers,
        /// or a narrower ``CachedResponse/storagePolicy``), or nil to store nothing. Called only
        /// for responses RFC 9111 allows to store, before the task's completion: on the calling task
        /// for a task made by an `async` call, on the processing queue (before serialization) for one
        /// with a completion handler, on an engine thread for a streamed or 2.x-operation task. A
        /// request's own ``ResponseCacher`` (``Request/responseCacher``) takes its place for that
        /// request's task.
        public var dataTaskWillCacheResponse: (@Sendable (SessionManager, DataTask, CachedResponse) -> CachedResponse?)?
        /// A server asked for credentials (`WWW-Authenticate` Basic or Digest): answer with a
        /// credential, the default handling, a cancellation or a rejection of the protection space
        /// (AFNetworking's `setTaskDidReceiveAuthenticationChallengeBlock:`). Called off the
        /// engine's threads, once per challenge the server offers until one is answered.
        public var taskDidReceiveAuthenticationChallenge: (@Sendable (SessionManager, SessionTask, AuthenticationChallenge) -> ChallengeDisposition)?

        /// No hooks.
        public init() {}

        /// These hooks with a request's own redirect and cache handlers in place of the session's.
        func taking(_ redirector: Redirector?, _ cacher: ResponseCacher?) -> Hooks {
            guard redirector != nil || cacher != nil else { return self }
            var hooks = self
            if let redirector { hooks.taskWillPerformHTTPRedirection = redirector.hook }
            if let cacher { hooks.dataTaskWillCacheResponse = cacher.hook }
            return hooks
        }
    }

    struct Registry {
        var delegates: [Int: TaskDelegate] = [:]
        var isInvalidated = false
        /// A process-wide manager (``HTTPSessionManager/shared``) ignores invalidation.
        var isProcessWide = false
        /// The engine's shutdown has begun.
        var engineShutDown = false
        /// The engine's shutdown has finished.
        var engineIsDown = false
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
        /// The WebSocket tasks made by the manager (weakly), for ``invalidate(cancelingTasks:)``.
        var webSocketTasks: [ObjectIdentifier: WeakTask] = [:]
        /// Waits that invalidation ends (an event stream's before it reconnects,
        /// ``untilInvalidated()``), by a number each.
        var invalidationWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextInvalidationWaiter = 0
    }

    struct Settings: @unchecked Sendable {
        // @unchecked: DispatchQueue and DispatchGroup are thread safe; `any ResponseSerializer` is Sendable.
        var responseSerializer: any ResponseSerializer = JSONResponseSerializer()
        var completionQueue: DispatchQueue?
        var completionGroup: DispatchGroup?
        var hooks = Hooks()
        var reachabilityManager: NetworkReachabilityManager = .shared { didSet { self.interceptionChanged() } }
        var connectivityRetry: ConnectivityRetryPolicy? { didSet { self.interceptionChanged() } }
        /// Interceptors/ and Monitoring/ settings (SessionManager+Interception, +Monitoring).
        var interception = InterceptionSettings() { didSet { self.interceptionChanged() } }
        /// What the tasks that bring nothing of their own consult (``TaskInterception/make(manager:request:identifier:)``),
        /// made for the first of them; dropped whenever a setting it was made of changes.
        var plainInterception: TaskInterception?
        /// Counts the changes of what a ``TaskInterception`` is made of: one made from settings
        /// read before a change is not kept as ``plainInterception`` (it is made outside the lock).
        var interceptionVersion = 0

        private mutating func interceptionChanged() {
            self.plainInterception = nil
            self.interceptionVersion &+= 1
        }
    }

    /// The configuration the manager was made with.
    public var configuration: SessionConfiguration { self.configurationReference.value }
    /// The one copy of the configuration, which each task keeps a reference to.
    let configurationReference: SessionConfigurationReference
    /// The security policy the manager's engine enforces: the one it was made with, a
    /// ``NIOEngine``'s default policy (``ServerTrustPolicies/defaultPolicy``) for a manager made on
    /// one, else ``SecurityPolicy/default``.
    public let securityPolicy: SecurityPolicy
    /// The transport.
    public let engine: any Engine
    /// The session's redirect policy (``SessionConfiguration/redirectPolicy``) for an engine that
    /// is not a ``NIOEngine``, which gets it in each request that sets none of its own
    /// (``RequestOptions/redirectPolicy``, set by ``execute(_:for:attempt:)``); nil on a
    /// ``NIOEngine``, which holds it in its configuration.
    let redirectPolicyForEngine: NIOEngine.RedirectPolicy?
    let registry = NIOLockedValueBox(Registry())
    /// The identifier the next task gets (AFNetworking's `taskIdentifier`, from 1): counted
    /// without the registry's lock, which every task of the manager takes.
    let lastTaskIdentifier = Atomic<Int>(0)
    /// Whether ``invalidate(cancelingTasks:)-7w13y`` ran: set under the registry's lock with
    /// ``Registry/isInvalidated``, read without it when a task starts.
    let invalidated = Atomic<Bool>(false)
    /// Completion handlers handed to their queue and not yet run (with their notification): an
    /// invalidated manager's engine stops, and `invalidate`'s waiters return, only after them,
    /// as URLSession ends a session after its last task's delegate call.
    let deliveriesInFlight = Atomic<Int>(0)
    let settings = NIOLockedValueBox(Settings())
    /// Serialization for completion handlers runs here, never on an engine thread.
    static let processingQueue = DispatchQueue(label: "courier.session-manager.processing", attributes: .concurrent)
    /// The default completion queue. Kept: on Linux, each read of `DispatchQueue.main` makes a
    /// new object for it.
    static let mainQueue = DispatchQueue.main

    /// A manager on a new ``NIOEngine``.
    /// - Parameters:
    ///   - configuration: Timeouts, limits, redirects, proxy.
    ///   - securityPolicy: Which servers to trust.
    public init(configuration: SessionConfiguration = .default, securityPolicy: SecurityPolicy = .default) {
        self.configurationReference = SessionConfigurationReference(configuration)
        self.securityPolicy = securityPolicy
        self.engine = NIOEngine(configuration: configuration, securityPolicy: securityPolicy)
        self.redirectPolicyForEngine = nil
        #if DEBUG
        LiveObjectCensus.born(self, .manager, "\(type(of: self))")
        #endif
    }

    /// A manager on the given engine (a `StubEngine` in tests, another transport).
    ///
    /// An engine other than a ``NIOEngine`` gets the configuration's redirect policy in each
    /// request that sets none (``RequestOptions/redirectPolicy``); a ``NIOEngine`` keeps its own
    /// configuration's.
    public init(engine: any Engine, configuration: SessionConfiguration = .default) {
        self.configurationReference = SessionConfigurationReference(configuration)
        self.securityPolicy = (engine as? NIOEngine)?.serverTrust.defaultPolicy ?? .default
        self.engine = engine
        self.redirectPolicyForEngine = engine is NIOEngine ? nil : configuration.redirectPolicy
        #if DEBUG
        LiveObjectCensus.born(self, .manager, "\(type(of: self)) on \(type(of: engine))")
        #endif
    }

    #if DEBUG
    deinit {
        LiveObjectCensus.died(self)
    }
    #endif

    // MARK: Settings

    /// Turns responses into objects for completion handlers. ``JSONResponseSerializer`` by default.
    public var responseSerializer: any ResponseSerializer {
        get { self.settings.withLockedValue { $0.responseSerializer } }
        set { self.settings.withLockedValue { $0.responseSerializer = newValue } }
    }

    /// Where completion handlers run; `nil` (the default) means the main queue. Servers and
    /// command-line tools that never run the main queue should set one.
    public var completionQueue: DispatchQueue? {
        get { self.settings.withLockedValue { $0.completionQueue } }
        set { self.settings.withLockedValue { $0.completionQueue = newValue } }
    }

    /// A group every completion handler runs in, to wait for a batch of tasks.
    public var completionGroup: DispatchGroup? {
        get { self.settings.withLockedValue { $0.completionGroup } }
        set { self.settings.withLockedValue { $0.completionGroup = newValue } }
    }

    /// The hooks new tasks take.
    public var hooks: Hooks {
        get { self.settings.withLockedValue { $0.hooks } }
        set { self.settings.withLockedValue { $0.hooks = newValue } }
    }

    // MARK: Listing

    /// Every task made and not yet completed.
    public var tasks: [SessionTask] {
        let delegates = self.registry.withLockedValue { Array($0.delegates.values) }
        return delegates.compactMap { delegate in delegate.state.withLockedValue { $0.task } }
            .sorted { $0.taskIdentifier < $1.taskIdentifier }
    }

    /// The data tasks among ``tasks`` (upload tasks excepted, as URLSession lists them).
    public var dataTasks: [DataTask] { self.tasks.compactMap { $0 as? DataTask }.filter { !($0 is UploadTask) } }
    /// The upload tasks among ``tasks``.
    public var uploadTasks: [UploadTask] { self.tasks.compactMap { $0 as? UploadTask } }
    /// The download tasks among ``tasks``.
    public var downloadTasks: [DownloadTask] { self.tasks.compactMap { $0 as? DownloadTask } }

    /// The upload progress of a task this manager made, or nil.
    public func uploadProgress(for task: SessionTask) -> Progress? {
        self.delegate(for: task)?.progress(.upload)
    }

    /// The download progress of a task this manager made, or nil.
    public func downloadProgress(for task: SessionTask) -> Progress? {
        self.delegate(for: task)?.progress(.download)
    }

    func delegate(for task: SessionTask) -> TaskDelegate? {
        guard task.delegate.manager === self else { return nil }
        return task.delegate
    }
}
