import Foundation
import NIOCore

extension TimeAmount {
    /// `seconds` (a configuration's `TimeInterval`) as an amount within `range`: a value past
    /// either end (`.infinity` for "no limit", a negative one) is that end, and one that is not a
    /// number is `nan`'s. `TimeAmount` counts nanoseconds in an `Int64`, which traps when handed
    /// more than 292 years or a value that is not a number; `Swift.min` and `max` pass a NaN
    /// through when it comes first, so neither alone keeps it out.
    static func seconds(clamping seconds: TimeInterval, to range: ClosedRange<TimeInterval> = 0.001...1e9, nan: TimeInterval) -> TimeAmount {
        let value = seconds.isNaN ? nan : seconds
        return .nanoseconds(Int64(Swift.min(Swift.max(value, range.lowerBound), range.upperBound) * 1e9))
    }
}
