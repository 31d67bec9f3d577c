// What one `NotificationCenter.default.post` costs on this platform when nothing observes it:
// the floor under the price of AFNetworking's task notifications (see "What a request costs" in
// the DocC article SessionAndEngine.md, and `SessionConfiguration.postsTaskNotifications`).
//
//   swiftc -O Scripts/notification-post-cost.swift -o /tmp/notification-post-cost
//   /tmp/notification-post-cost
//
// It posts a million times with a class instance as the object (as a task is), with a long and
// a short name, with and without a user info, and prints the time a post.
import Foundation

final class Subject {}

let subject = Subject()
let userInfo: [AnyHashable: Any] = ["a": 1, "b": Data(), "c": "x", "d": 2, "e": 3]
let names = [
    ("long name", Notification.Name("com.courier.networking.task.complete")),
    ("short name", Notification.Name("c.t.complete")),
]

func nanosecondsPerPost(_ name: Notification.Name, userInfo: [AnyHashable: Any]?) -> Double {
    let posts = 1_000_000
    let start = ContinuousClock.now
    for _ in 0..<posts {
        NotificationCenter.default.post(name: name, object: subject, userInfo: userInfo)
    }
    let elapsed = ContinuousClock.now - start
    let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    return nanoseconds / Double(posts)
}

// Twice: the first round pays for the caches of the type system.
for round in 1...2 {
    for (label, name) in names {
        for (infoLabel, info) in [("no user info", nil), ("user info", userInfo)] as [(String, [AnyHashable: Any]?)] {
            print("round \(round), \(label), \(infoLabel): \(String(format: "%.0f", nanosecondsPerPost(name, userInfo: info))) ns a post")
        }
    }
}
