import NIOCore

/// A limit on how fast a form's body is produced: at most `packetSize` bytes at a time, each
/// after a pause of `delay` (AFNetworking's `throttleBandwidthWithPacketSize:delay:`).
struct MultipartThrottle: Sendable, Hashable {
    var packetSize: Int
    var delay: Duration
}

/// A body's chunks cut into packets of at most the throttle's size, each handed out after its
/// delay. The packets are slices of the chunks: no byte is copied.
struct ThrottledChunks<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == ByteBuffer {
    typealias Element = ByteBuffer

    let base: Base
    let throttle: MultipartThrottle

    func makeAsyncIterator() -> Iterator { Iterator(base: self.base.makeAsyncIterator(), throttle: self.throttle) }

    struct Iterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let throttle: MultipartThrottle
        /// What is left of the chunk being cut into packets.
        var rest = ByteBuffer()

        mutating func next() async throws -> ByteBuffer? {
            while self.rest.readableBytes == 0 {
                guard let chunk = try await self.base.next() else { return nil }
                self.rest = chunk
            }
            try await Task.sleep(for: self.throttle.delay)
            let length = Swift.min(self.throttle.packetSize, self.rest.readableBytes)
            return self.rest.readSlice(length: length)
        }
    }
}

extension MultipartFormData {
    /// A packet size for uploads over a slow cellular link: 16 KiB (AFNetworking's
    /// `kAFUploadStream3GSuggestedPacketSize`), for ``throttleBandwidth(withPacketSize:delay:)``.
    public static let uploadStream3GSuggestedPacketSize = 1024 * 16

    /// A pause between packets for uploads over a slow cellular link: 0.2 seconds (AFNetworking's
    /// `kAFUploadStream3GSuggestedDelay`), for ``throttleBandwidth(withPacketSize:delay:)``.
    public static let uploadStream3GSuggestedDelay = Duration.milliseconds(200)

    /// Slows the body down: it is produced at most `packetSize` bytes at a time, each after a
    /// pause of `delay` (AFNetworking's `throttleBandwidthWithPacketSize:delay:`, which it offers
    /// for uploads over slow cellular links).
    ///
    /// By default the body is not throttled. AFNetworking's suggestion for cellular links is
    /// ``uploadStream3GSuggestedPacketSize`` and ``uploadStream3GSuggestedDelay``:
    ///
    /// ```swift
    /// form.throttleBandwidth(
    ///     withPacketSize: MultipartFormData.uploadStream3GSuggestedPacketSize,
    ///     delay: MultipartFormData.uploadStream3GSuggestedDelay)
    /// ```
    /// - Parameters:
    ///   - packetSize: The most bytes sent at once; at least 1.
    ///   - delay: The pause before each packet.
    public mutating func throttleBandwidth(withPacketSize packetSize: Int, delay: Duration) {
        self.throttle = MultipartThrottle(packetSize: Swift.max(packetSize, 1), delay: delay)
    }
}
