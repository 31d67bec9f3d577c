@testable import Courier
import Foundation
import NIOCore
import Testing

extension RequestSerializationTests {
    @Suite("MultipartFormData: bad input and faults")
    struct MultipartBadInputTests {
        @Test("a missing file is refused when it is appended")
        func missingFile() async throws {
            try await withTemporaryFolder { folder in
                var form = MultipartFormData()
                let error = #expect(throws: CourierError.self) {
                    try form.appendPart(withFileURL: folder.appendingPathComponent("nope.txt"), name: "f")
                }
                #expect(error?.code == .bodyReadFailed)
                #expect(error?.message.contains("nope.txt") == true)
                #expect(error?.message.contains("'f'") == true)
                #expect(form.isEmpty)
            }
        }

        @Test("a directory is refused when it is appended")
        func directory() async throws {
            try await withTemporaryFolder { folder in
                var form = MultipartFormData()
                let error = #expect(throws: CourierError.self) {
                    try form.appendPart(withFileURL: folder, name: "f", fileName: "f", mimeType: "text/plain")
                }
                #expect(error?.code == .bodyReadFailed)
                #expect(error?.message.contains("is a directory") == true)
            }
        }

        @Test("a URL that is not a file URL is refused")
        func notAFileURL() {
            var form = MultipartFormData()
            let error = #expect(throws: CourierError.self) {
                try form.appendPart(withFileURL: URL(string: "https://example.com/a.png")!, name: "f")
            }
            #expect(error?.code == .bodyReadFailed)
            #expect(error?.message.contains("not a file URL") == true)
        }

        @Test("something other than a regular file is refused")
        func notARegularFile() throws {
            var form = MultipartFormData()
            let error = #expect(throws: CourierError.self) {
                try form.appendPart(withFileURL: URL(fileURLWithPath: "/dev/null"), name: "f")
            }
            #expect(error?.code == .bodyReadFailed)
            #expect(error?.message.contains("not a regular file") == true)
        }

        @Test("an unreadable file is refused when it is appended", .enabled(if: getuid() != 0, "root can read any file"))
        func unreadableFile() async throws {
            try await withTemporaryFolder { folder in
                let url = folder.appendingPathComponent("secret.txt")
                try Data("x".utf8).write(to: url)
                try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: url.path)
                var form = MultipartFormData()
                let error = #expect(throws: CourierError.self) { try form.appendPart(withFileURL: url, name: "f") }
                #expect(error?.code == .bodyReadFailed)
                #expect(error?.message.contains("cannot be read") == true)
            }
        }

        @Test("a file removed after it was appended fails the body when its turn comes")
        func removedAfterAppend() async throws {
            try await withTemporaryFolder { folder in
                let url = folder.appendingPathComponent("gone.txt")
                try Data("soon gone".utf8).write(to: url)
                var form = MultipartFormData()
                form.appendPart(withForm: Data("1".utf8), name: "first")
                try form.appendPart(withFileURL: url, name: "f")
                try FileManager.default.removeItem(at: url)
                let error = await #expect(throws: CourierError.self) { _ = try await collectBytes(of: form.body) }
                #expect(error?.code == .bodyReadFailed)
                #expect(error?.message.contains("gone.txt") == true)
            }
        }

        @Test("a file that grew or shrank after it was appended fails the body", arguments: [3, 20])
        func resizedAfterAppend(_ newSize: Int) async throws {
            try await withTemporaryFolder { folder in
                let url = folder.appendingPathComponent("changing.txt")
                try Data(repeating: UInt8(ascii: "a"), count: 10).write(to: url)
                var form = MultipartFormData()
                try form.appendPart(withFileURL: url, name: "f")
                let declared = form.contentLength
                try Data(repeating: UInt8(ascii: "b"), count: newSize).write(to: url)
                #expect(form.contentLength == declared, "the length stays what was declared")
                let error = await #expect(throws: CourierError.self) { _ = try await collectBytes(of: form.body) }
                #expect(error?.code == .bodyReadFailed)
                #expect(error?.message.contains("was 10 bytes when it was appended to the form and is \(newSize) bytes now") == true)
            }
        }

        @Test("a file that grows while it is read fails the body rather than sending a wrong length")
        func grewWhileRead() async throws {
            try await withTemporaryFolder { folder in
                let url = folder.appendingPathComponent("growing.txt")
                try Data(repeating: UInt8(ascii: "a"), count: 100).write(to: url)
                var form = MultipartFormData()
                form.chunkLength = 10
                try form.appendPart(withFileURL: url, name: "f")
                guard case .replayableStream(let make, _) = form.body.storage else {
                    Issue.record("a form of files is replayable")
                    return
                }
                var iterator = make().makeAsyncIterator()
                _ = try await iterator.next()  // the head
                _ = try await iterator.next()  // the first ten bytes
                let handle = try FileHandle(forWritingTo: url)
                try handle.seekToEnd()
                try handle.write(contentsOf: Data("more".utf8))
                try handle.close()
                let error = await #expect(throws: CourierError.self) {
                    while try await iterator.next() != nil {}
                }
                #expect(error?.code == .bodyReadFailed)
                #expect(error?.message.contains("is 104 bytes now") == true)
            }
        }

        @Test("a stream shorter or longer than its declared length fails the body", arguments: [(["ab"], "ended after 2 of its declared 3 bytes"), (["ab", "cd"], "gave more than its declared 3 bytes")])
        func streamLengthMismatch(_ chunks: [String], _ message: String) async throws {
            var form = MultipartFormData()
            try form.appendPart(withStream: { Chunks(chunks: chunks) }, name: "s", fileName: "s", length: 3, mimeType: "text/plain")
            let error = await #expect(throws: CourierError.self) { _ = try await collectBytes(of: form.body) }
            #expect(error?.code == .bodyReadFailed)
            #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
            #expect(error?.message.contains("name=\"s\"") == true)
        }

        @Test("a stream's own failure is a bodyReadFailed that keeps it")
        func failingStream() async throws {
            struct Broken: Error {}
            var form = MultipartFormData()
            try form.appendPart(
                withStream: { AsyncThrowingStream<ByteBuffer, any Error> { $0.finish(throwing: Broken()) } },
                name: "s", fileName: "s", length: 3, mimeType: "text/plain")
            let error = await #expect(throws: CourierError.self) { _ = try await collectBytes(of: form.body) }
            #expect(error?.code == .bodyReadFailed)
            #expect(error?.underlyingError is Broken)
        }

        @Test("a negative stream length is refused")
        func negativeLength() {
            var form = MultipartFormData()
            let error = #expect(throws: CourierError.self) {
                try form.appendPart(withStream: { Chunks(chunks: []) }, name: "s", fileName: "s", length: -1, mimeType: "text/plain")
            }
            #expect(error?.code == .invalidRequest)
        }

        /// A length that would make the form's longer than an `Int64` is refused when appended;
        /// `contentLength` (read when the form becomes a request) trapped on the overflow.
        @Test("a stream length that would overflow the form's length is refused")
        func overflowingLength() throws {
            var form = MultipartFormData()
            let error = #expect(throws: CourierError.self) {
                try form.appendPart(withStream: { Chunks(chunks: []) }, name: "s", fileName: "s", length: .max, mimeType: "text/plain")
            }
            #expect(error?.code == .invalidRequest)
            try form.appendPart(withStream: { Chunks(chunks: []) }, name: "a", fileName: "a", length: .max / 2, mimeType: "text/plain")
            #expect(throws: CourierError.self) {
                try form.appendPart(withStream: { Chunks(chunks: []) }, name: "b", fileName: "b", length: .max / 2, mimeType: "text/plain")
            }
            #expect(form.contentLength > .max / 2, "the form keeps its first part and its length")
        }

        /// A stream declared near `Int64.max` left no room for a field appended from memory after
        /// it (those appends cannot fail): `contentLength` trapped on the overflow when the form
        /// became a request. It is refused; one that leaves room is taken, and a field after it is.
        @Test("a stream length that leaves no room for fields in memory is refused")
        func aLengthThatLeavesNoRoomForFieldsInMemory() throws {
            var form = MultipartFormData()
            let error = #expect(throws: CourierError.self) {
                try form.appendPart(withStream: { Chunks(chunks: []) }, name: "a", fileName: "a", length: .max - 200, mimeType: "text/plain")
            }
            #expect(error?.code == .invalidRequest)
            try form.appendPart(withStream: { Chunks(chunks: []) }, name: "a", fileName: "a", length: 1 << 62, mimeType: "text/plain")
            form.appendPart(withForm: Data(count: 300), name: "b")
            #expect(form.contentLength > 1 << 62)
        }

        @Test("a one-shot stream makes the form one-shot")
        func oneShotStream() throws {
            var form = MultipartFormData()
            form.appendPart(withForm: Data("1".utf8), name: "a")
            #expect(form.isReplayable)
            try form.appendPart(withInputStream: Chunks(chunks: ["x"]), name: "s", fileName: "s", length: 1, mimeType: "text/plain")
            #expect(!form.isReplayable)
            #expect(!form.body.isReplayable)
            #expect(form.body.knownLength == form.contentLength)
        }

        @Test("a body abandoned in the middle of a file closes the file")
        func abandonedMidFile() async throws {
            try await withTemporaryFolder { folder in
                let url = folder.appendingPathComponent("big.bin")
                try Data(repeating: 1, count: 100).write(to: url)
                var form = MultipartFormData()
                form.chunkLength = 10
                try form.appendPart(withFileURL: url, name: "f")
                for _ in 0..<50 {
                    guard case .replayableStream(let make, _) = form.body.storage else { return }
                    var iterator = make().makeAsyncIterator()
                    _ = try await iterator.next()
                    _ = try await iterator.next()
                    // Dropped here with the file open: NIOFileSystem would trap on an unclosed handle.
                }
                #expect(try await collectBytes(of: form.body).count == Int(form.contentLength))
            }
        }
    }
}
