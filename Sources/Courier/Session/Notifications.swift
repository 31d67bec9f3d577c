import Foundation
import NIOPosix

extension Notification.Name {
    /// A task was resumed. The object is the ``SessionTask``, or the ``WebSocketTask`` whose
    /// opening handshake started. This and the task notifications below are posted unless the
    /// session's ``SessionConfiguration/postsTaskNotifications`` is false.
    public static let taskDidResume = Notification.Name("com.courier.networking.task.resume")
    /// A task was suspended. The object is the ``SessionTask``.
    public static let taskDidSuspend = Notification.Name("com.courier.networking.task.suspend")
    /// A task completed. The object is the ``SessionTask``, or the ``WebSocketTask`` that ended;
    /// the user info holds the keys of ``TaskDidCompleteKey`` (a WebSocket task's: its metrics,
    /// and its error when it failed).
    public static let taskDidComplete = Notification.Name("com.courier.networking.task.complete")
    /// A download's file was moved to its destination. The object is the ``DownloadTask``.
    public static let downloadTaskDidMoveFile = Notification.Name("com.courier.networking.session.download.file-manager-succeed")
    /// A download's file could not be moved to its destination. The object is the
    /// ``DownloadTask``; the user info's ``TaskDidCompleteKey/error`` key holds the ``CourierError``.
    public static let downloadTaskDidFailToMoveFile = Notification.Name("com.courier.networking.session.download.file-manager-error")
    /// A session manager was invalidated and its engine shut down. The object is the ``SessionManager``.
    public static let sessionDidInvalidate = Notification.Name("com.courier.networking.session.invalidate")
}

/// The user-info keys of ``Foundation/NSNotification/Name/taskDidComplete`` (AFNetworking's
/// `AFNetworkingTaskDidComplete…Key`).
public enum TaskDidCompleteKey {
    /// The ``ResponseSerializer`` that serialized the response (absent when none ran).
    public static let responseSerializer = "com.courier.networking.task.complete.responseserializer"
    /// The response body as `Data` (absent when there was none).
    public static let responseData = "com.courier.networking.complete.finish.responsedata"
    /// The object the serializer made (absent when none).
    public static let serializedResponse = "com.courier.networking.task.complete.serializedresponse"
    /// Where a download task's file ended up, as a `URL` (absent for other tasks and on failure).
    public static let assetPath = "com.courier.networking.task.complete.assetpath"
    /// The ``CourierError`` the task failed with (absent on success).
    public static let error = "com.courier.networking.task.complete.error"
    /// Where the response came from, as a ``ResponseSource`` (absent when no response arrived).
    public static let responseSource = "com.courier.networking.task.complete.responsesource"
    /// The task's ``TaskMetrics`` (AFNetworking's `AFNetworkingTaskDidCompleteSessionTaskMetrics`).
    public static let metrics = "com.courier.networking.complete.sessiontaskmetrics"

    /// The keys boxed once, for the notification posted after every task. `AnyHashable` is not
    /// `Sendable`, but each of these holds an immutable `String` and is never changed: sharing
    /// them between threads is safe, hence `nonisolated(unsafe)`.
    enum Hashed {
        nonisolated(unsafe) static let responseSerializer = AnyHashable(TaskDidCompleteKey.responseSerializer)
        nonisolated(unsafe) static let responseData = AnyHashable(TaskDidCompleteKey.responseData)
        nonisolated(unsafe) static let serializedResponse = AnyHashable(TaskDidCompleteKey.serializedResponse)
        nonisolated(unsafe) static let assetPath = AnyHashable(TaskDidCompleteKey.assetPath)
        nonisolated(unsafe) static let error = AnyHashable(TaskDidCompleteKey.error)
        nonisolated(unsafe) static let responseSource = AnyHashable(TaskDidCompleteKey.responseSource)
        nonisolated(unsafe) static let metrics = AnyHashable(TaskDidCompleteKey.metrics)
    }

    /// The user info of a task that succeeded with a serializer, a body, an object, a response
    /// and its metrics (the common case), made once with placeholder values, with the index of
    /// each key. A notification copies it and sets the values at those indices: no key is hashed
    /// or compared again, which made building the dictionary key by key about three times as
    /// costly (measured outside Courier: 0.5 against 0.15 µs). A dictionary's indices stay valid in
    /// a copy whose values alone change. The template and its indices are immutable (an index of
    /// a native dictionary is two integers), hence `nonisolated(unsafe)` as above.
    enum SuccessTemplate {
        typealias Index = Dictionary<AnyHashable, Any>.Index
        nonisolated(unsafe) static let userInfo: [AnyHashable: Any] = [
            Hashed.responseSerializer: 0, Hashed.responseData: 0, Hashed.serializedResponse: 0, Hashed.responseSource: 0,
            Hashed.metrics: 0,
        ]

        /// The index of each key in ``userInfo``, in one global: every post reads all five, and
        /// one lazily made global is one initialization check instead of five.
        struct Indices {
            let responseSerializer = SuccessTemplate.index(of: Hashed.responseSerializer)
            let responseData = SuccessTemplate.index(of: Hashed.responseData)
            let serializedResponse = SuccessTemplate.index(of: Hashed.serializedResponse)
            let responseSource = SuccessTemplate.index(of: Hashed.responseSource)
            let metrics = SuccessTemplate.index(of: Hashed.metrics)
        }
        nonisolated(unsafe) static let indices = Indices()

        /// This thread's copy of the template, filled for one post and cleared after it. Posting
        /// is synchronous, so nothing else uses it meanwhile; an observer that keeps the user
        /// info keeps its own copy (the next fill then copies the storage, as a dictionary does
        /// when it is shared). Otherwise the same storage serves every post on the thread:
        /// copying the template for each post allocated a dictionary and retained its five keys.
        /// `@unchecked Sendable`: each one is only ever used by the thread it belongs to.
        final class ThreadsCopy: @unchecked Sendable {
            // Not checked for exclusive access at run time: only this object's thread uses it,
            // one post at a time.
            @exclusivity(unchecked) var userInfo = SuccessTemplate.userInfo

            /// Sets the five values. Each is assigned in place, as in ``clear()``, not through one
            /// setter both share: passing them as `Any` arguments cost two retains a request.
            func fill(serializer: any ResponseSerializer, data: Data, object: any Sendable, source: ResponseSource, metrics: TaskMetrics) {
                let at = SuccessTemplate.indices
                self.userInfo.values[at.responseSerializer] = serializer
                self.userInfo.values[at.responseData] = data
                self.userInfo.values[at.serializedResponse] = object
                self.userInfo.values[at.responseSource] = source
                self.userInfo.values[at.metrics] = metrics
            }

            /// Lets go of the values of the last post (they hold the task's body, object and
            /// metrics), keeping the storage.
            func clear() {
                let at = SuccessTemplate.indices
                self.userInfo.values[at.responseSerializer] = 0
                self.userInfo.values[at.responseData] = 0
                self.userInfo.values[at.serializedResponse] = 0
                self.userInfo.values[at.responseSource] = 0
                self.userInfo.values[at.metrics] = 0
            }
        }

        private static let threadsCopies = ThreadSpecificVariable<ThreadsCopy>()

        /// This thread's ``ThreadsCopy``, made on first use.
        static func threadsCopy() -> ThreadsCopy {
            if let copy = Self.threadsCopies.currentValue { return copy }
            let copy = ThreadsCopy()
            Self.threadsCopies.currentValue = copy
            return copy
        }

        fileprivate static func index(of key: AnyHashable) -> Index {
            guard let index = Self.userInfo.index(forKey: key) else { preconditionFailure("the template holds every key") }
            return index
        }
    }
}
