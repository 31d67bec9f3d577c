@testable import Courier
import Foundation
import NIOCore
import Testing

extension RequestSerializationTests {
    @Suite("MultipartFormData: throttling")
    struct MultipartThrottleTests {
        @Test("a throttled body comes in packets of at most the packet size, with the same bytes")
        func packets() async throws {
            try await withTemporaryFolder { folder in
                let url = folder.appendingPathComponent("f.bin")
                try Data((0..<1000).map { UInt8(truncatingIfNeeded: $0) }).write(to: url)
                var form = try MultipartFormData(boundary: "B")
                form.appendPart(withForm: Data("value".utf8), name: "a")
                try form.appendPart(withFileURL: url, name: "f")
                let plain = try await collectBytes(of: form.body)
                form.throttleBandwidth(withPacketSize: 64, delay: .zero)
                guard case .replayableStream(let make, let length) = form.body.storage else {
                    Issue.record("a form of files is replayable")
                    return
                }
                #expect(length == .known(Int64(plain.count)))
                var sizes: [Int] = []
                var bytes: [UInt8] = []
                for try await packet in make() {
                    sizes.append(packet.readableBytes)
                    bytes += packet.readableBytesView
                }
                #expect(bytes == plain)
                #expect(sizes.allSatisfy { $0 > 0 && $0 <= 64 })
                #expect(sizes.count >= plain.count / 64)
            }
        }

        /// AFNetworking's suggested values for 3G (`kAFUploadStream3GSuggestedPacketSize`,
        /// `kAFUploadStream3GSuggestedDelay`), and a form throttled with them: one packet of the
        /// suggested size after the suggested pause, the next after another.
        @Test func theSuggestedValuesForCellularLinksAreAFNetworkings() async throws {
            #expect(MultipartFormData.uploadStream3GSuggestedPacketSize == 16_384)
            #expect(MultipartFormData.uploadStream3GSuggestedDelay == .milliseconds(200))
            var form = try MultipartFormData(boundary: "B")
            form.appendPart(withForm: Data(repeating: 0x61, count: 20_000), name: "a")
            form.throttleBandwidth(
                withPacketSize: MultipartFormData.uploadStream3GSuggestedPacketSize, delay: MultipartFormData.uploadStream3GSuggestedDelay)
            guard case .replayableStream(let make, _) = form.body.storage else {
                Issue.record("a throttled form is a replayable stream")
                return
            }
            let clock = ContinuousClock()
            let start = clock.now
            var sizes: [Int] = []
            for try await packet in make() { sizes.append(packet.readableBytes) }
            #expect(sizes.max() == 16_384)
            #expect(sizes.reduce(0, +) == form.contentLength)
            // At least one pause a packet (a lower bound only: a pause may be longer).
            #expect(clock.now - start >= .milliseconds(200) * sizes.count)
        }
    }
}
