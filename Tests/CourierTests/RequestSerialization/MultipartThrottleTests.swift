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
    }
}
