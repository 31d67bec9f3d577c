import Foundation

extension Notification.Name {
    /// A task was resumed. The object is the ``SessionTask``.
    public static let taskDidResume = Notification.Name("com.courier.networking.task.resume")
    /// A task was suspended. The object is the ``SessionTask``.
    public static let taskDidSuspend = Notification.Name("com.courier.networking.task.suspend")
    /// A task completed. The object is the ``SessionTask``; the user info holds the keys of
    /// ``TaskDidCompleteKey``.
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
}
