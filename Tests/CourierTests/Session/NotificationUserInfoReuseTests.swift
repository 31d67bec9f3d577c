import Foundation
import Testing

@testable import Courier

/// `.taskDidComplete`'s common user info is filled into one dictionary per thread, reused post
/// after post: it must let go of each post's values once the post returned (they hold a task's
/// body, object and metrics), and stay one dictionary for the thread.
@Suite("Notifications: the thread's reused user info")
struct NotificationUserInfoReuseTests {
    final class Probe: Sendable {}

    @Test func theValuesOfAPostAreLetGoOfOnceItReturned() {
        typealias Template = TaskDidCompleteKey.SuccessTemplate
        weak var weakProbe: Probe?
        let copy = Template.threadsCopy()
        do {
            let probe = Probe()
            weakProbe = probe
            copy.userInfo.values[Template.indices.serializedResponse] = probe
            copy.userInfo.values[Template.indices.responseData] = Data([1, 2, 3])
            copy.clear()
        }
        #expect(weakProbe == nil)
        #expect(copy.userInfo.count == Template.userInfo.count)
        #expect(Template.threadsCopy() === copy)
    }
}
