/// `count` bytes that repeat `period` (`period[i % period.count]` at `i`), made by doubling
/// rather than byte by byte: a debug build's per-element closure over megabytes took seconds of
/// a cooperative thread in the full suite (`GoPeer.pattern` alone, 6 % of the pool's time).
func periodicBytes(_ count: Int, period: [UInt8]) -> [UInt8] {
    precondition(!period.isEmpty, "a period of no bytes")
    var bytes = period
    bytes.reserveCapacity(max(count, period.count))
    // Each length stays a multiple of the period, so appending the bytes to themselves keeps the pattern.
    while bytes.count < count { bytes.append(contentsOf: bytes) }
    bytes.removeLast(bytes.count - count)
    return bytes
}
