import Dispatch
import Foundation
import NIOConcurrencyHelpers
import HTTPTypes

extension SessionManager {
    /// Settles a finished task's end and serializes its body on the processing queue, then calls
    /// its handler on the completion queue inside the completion group, then posts the notification.
    func complete(
        _ outcome: consuming TaskOutcome,
        serializer: (any ResponseSerializer)?,
        handler: CompletionHandler?
    ) {
        let (queue, group) = self.settings.withLockedValue { ($0.completionQueue ?? Self.mainQueue, $0.completionGroup) }
        group?.enter()
        self.beginDelivery()
        Self.processingQueue.async { [outcome] in
            var outcome = outcome
            outcome.task.delegate.settle(&outcome)
            let (object, error) = self.serializeRunningHook(outcome.task, outcome: outcome, serializer: serializer)
            queue.async { [outcome] in
                handler?(outcome.task, outcome.response, object, error)
                self.postDidComplete(outcome.task, outcome: outcome, serializer: serializer, object: object, error: error)
                group?.leave()
                self.endDelivery()
            }
        }
    }

    /// Serializes a finished task's outcome, then runs the task-did-complete hook with the
    /// transfer's error. Call it off the engine's threads.
    ///
    /// As AFNetworking's `URLSession:task:didCompleteWithError:`: a transfer that failed is not
    /// serialized and comes with no object (even when a response and part of its body arrived),
    /// and the session's `taskDidComplete` block gets the transfer's error, not the serializer's.
    func serializeRunningHook(
        _ task: SessionTask,
        outcome: TaskOutcome,
        serializer: (any ResponseSerializer)?
    ) -> (object: (any Sendable)?, error: CourierError?) {
        var result: (object: (any Sendable)?, error: CourierError?) = (nil, outcome.error)
        if let serializer, outcome.error == nil {
            // The task's serializer checked the response already when its retriers wanted that.
            result = task.delegate.takeChecked() ?? Self.serialize(outcome, with: serializer)
        }
        if let serializer, let monitors = task.delegate.interception.monitors {
            let (object, error) = result
            monitors.emit { $0.task(task, didSerializeResponseWith: serializer, object: object, error: error) }
        }
        task.delegate.hookTable?.takeDidComplete()?(self, task, outcome.error)
        return result
    }

    static func serialize(_ outcome: TaskOutcome, with serializer: any ResponseSerializer) -> (object: (any Sendable)?, error: CourierError?) {
        let (object, error) = serializer.serialize(response: outcome.response, data: outcome.data)
        // Through the existential, an optional output's "no object" arrives as a value wrapping nil.
        return (OptionalFlattening.flattened(object), error?.adding(request: outcome.request, response: outcome.response, data: outcome.data))
    }

    func postDidComplete(
        _ task: SessionTask,
        outcome: TaskOutcome,
        serializer: (any ResponseSerializer)?,
        object: (any Sendable)?,
        error: CourierError?
    ) {
        guard self.configurationReference.value.postsTaskNotifications else { return }
        // The common case fills a copy of a template in place (see
        // ``TaskDidCompleteKey/SuccessTemplate``); any other, key by key.
        if let serializer, let data = outcome.data, let object, error == nil, outcome.fileURL == nil, outcome.response != nil,
            let metrics = outcome.metrics
        {
            typealias Template = TaskDidCompleteKey.SuccessTemplate
            let reused = Template.threadsCopy()
            reused.fill(serializer: serializer, data: data, object: object, source: outcome.source, metrics: metrics)
            NotificationCenter.default.post(name: .taskDidComplete, object: task, userInfo: reused.userInfo)
            reused.clear()
            return
        }
        typealias Keys = TaskDidCompleteKey.Hashed
        var userInfo = [AnyHashable: Any](minimumCapacity: 7)
        if let serializer { userInfo[Keys.responseSerializer] = serializer }
        if let data = outcome.data { userInfo[Keys.responseData] = data }
        if let object { userInfo[Keys.serializedResponse] = object }
        if let error { userInfo[Keys.error] = error }
        if let fileURL = outcome.fileURL { userInfo[Keys.assetPath] = fileURL }
        if outcome.response != nil { userInfo[Keys.responseSource] = outcome.source }
        if let metrics = outcome.metrics { userInfo[Keys.metrics] = metrics }
        NotificationCenter.default.post(name: .taskDidComplete, object: task, userInfo: userInfo)
    }
}
