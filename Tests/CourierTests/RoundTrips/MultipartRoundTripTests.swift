import Courier
import CourierTesting
import Dispatch
import Foundation
import Testing

/// Multipart forms we build, parsed back by TestServer's multipart parser and, when configured, by
/// a real httpbin (werkzeug), which echo `form` and `files`.
@Suite("Multipart round trips")
struct MultipartRoundTripTests {
    /// httpbin's echo of `form` or `files`: a string, or a list for a repeated name.
    static func echoed(_ object: Any?) -> [String: [String]] {
        guard let dictionary = object as? [String: any Sendable] else { return [:] }
        return dictionary.mapValues { value in
            if let list = value as? [any Sendable] { return list.compactMap { $0 as? String } }
            return [value as? String ?? "\(value)"]
        }
    }

    @Test(arguments: Peer.all)
    func formFieldsAndFiles(_ peer: Peer) async throws {
        try await withTemporaryFolder { folder in
            let notes = folder.appendingPathComponent("notes.txt")
            try Data("line one\r\nline two ✓\r\n--not-a-boundary".utf8).write(to: notes)
            let image = folder.appendingPathComponent("pixel.png")
            let imageBytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0xFF, 0xFE]
            try Data(imageBytes).write(to: image)
            let empty = folder.appendingPathComponent("empty.bin")
            try Data().write(to: empty)
            try await peer.run { base in
                try await withManager(baseURL: base) { manager in
                    let parameters: Parameters = ["name": "Ada Lovelace", "user": ["langs": ["swift", "c"], "id": 7] as Parameters, "on": true]
                    let response = try await manager.post("post", parameters: parameters) { form in
                        try form.appendPart(withFileURL: notes, name: "notes")
                        try form.appendPart(withFileURL: image, name: "image")
                        try form.appendPart(withFileURL: empty, name: "empty", fileName: "empty.bin", mimeType: "application/octet-stream")
                        form.appendPart(withFileData: Data("in memory".utf8), name: "memo", fileName: "memo.txt", mimeType: "text/plain")
                        try form.appendPart(
                            withStream: { Chunks(chunks: ["str", "eam"]) }, name: "streamed", fileName: "s.txt", length: 6, mimeType: "text/plain")
                        form.appendPart(withForm: Data("ünïcödé value".utf8), name: "unicode")
                    }
                    let json = try #require(response.value.json)
                    let form = Self.echoed(json["form"])
                    #expect(form["name"] == ["Ada Lovelace"])
                    #expect(form["user[langs][]"] == ["swift", "c"])
                    #expect(form["user[id]"] == ["7"])
                    #expect(form["on"] == ["1"])
                    #expect(form["unicode"] == ["ünïcödé value"])
                    let files = Self.echoed(json["files"])
                    #expect(files["notes"] == ["line one\r\nline two ✓\r\n--not-a-boundary"])
                    #expect(files["image"] == ["data:image/png;base64," + Data(imageBytes).base64EncodedString()])
                    #expect(files["empty"] == [""])
                    #expect(files["memo"] == ["in memory"])
                    #expect(files["streamed"] == ["stream"])
                    let headers = try #require(json["headers"] as? [String: any Sendable])
                    #expect((headers["Content-Type"] as? String)?.hasPrefix("multipart/form-data; boundary=Boundary+") == true)
                }
            }
        }
    }

    @Test(arguments: Peer.all)
    func largeFileIsSentWhole(_ peer: Peer) async throws {
        try await withTemporaryFolder { folder in
            // About 4 MiB of text, so the echo is the file itself, and every line is different.
            let lines = (0..<100_000).map { "line \($0) of the large file, with some padding\n" }
            let content = lines.joined()
            let url = folder.appendingPathComponent("large.txt")
            try Data(content.utf8).write(to: url)
            try await peer.run { base in
                try await withManager(baseURL: base) { manager in
                    let fractions = Recorder<Double>()
                    let response = try await manager.post("post", parameters: ["kind": "large"], progress: { fractions.append($0.fractionCompleted) }) { form in
                        try form.appendPart(withFileURL: url, name: "large")
                    }
                    let json = try #require(response.value.json)
                    let echoed = try #require(Self.echoed(json["files"])["large"]?.first)
                    #expect(echoed.utf8.count == content.utf8.count)
                    #expect(echoed == content)
                    #expect(Self.echoed(json["form"])["kind"] == ["large"])
                    #expect(fractions.all.last == 1.0)
                }
            }
        }
    }

    @Test(arguments: Peer.all)
    func writtenToAFileThenUploaded(_ peer: Peer) async throws {
        try await withTemporaryFolder { folder in
            let photo = folder.appendingPathComponent("photo.txt")
            try Data("pretend photo".utf8).write(to: photo)
            try await peer.run { base in
                try await withManager(baseURL: base) { manager in
                    let serializer = HTTPRequestSerializer()
                    let request = try serializer.multipartFormRequest(
                        method: .post, urlString: base.appendingPathComponent("post").absoluteString, parameters: ["a": "1"]
                    ) { form in
                        try form.appendPart(withFileURL: photo, name: "photo")
                    }
                    let bodyFile = folder.appendingPathComponent("body.multipart")
                    let bare = try await serializer.request(withMultipartFormRequest: request, writingStreamContentsToFile: bodyFile)
                    let outcome: ((any Sendable)?, CourierError?) = await awaitCallback { finish in
                        manager.uploadTask(with: bare, fromFile: bodyFile) { _, object, error in finish((object, error)) }.resume()
                    }
                    #expect(outcome.1 == nil)
                    let json = (outcome.0 as? [String: any Sendable]) ?? [:]
                    #expect(Self.echoed(json["form"])["a"] == ["1"])
                    #expect(Self.echoed(json["files"])["photo"] == ["pretend photo"])
                }
            }
        }
    }

    @Test func callbackPostSucceeds() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let result: (Bool, [String: [String]], String?) = await awaitCallback { finish in
                    let task = manager.post("post", parameters: ["a": "1"], constructingBodyWith: { form in
                        form.appendPart(withFileData: Data("x".utf8), name: "f", fileName: "f.txt", mimeType: "text/plain")
                    }, success: { task, object in
                        finish((task.taskIdentifier > 0, Self.echoed((object as? [String: any Sendable])?["files"]), DispatchQueue.getSpecific(key: TestQueues.key)))
                    }, failure: { _, error in
                        Issue.record("unexpected failure: \(error)")
                        finish((false, [:], nil))
                    })
                    #expect(task != nil)
                }
                #expect(result.0)
                #expect(result.1["f"] == ["x"])
                #expect(result.2 == "completion")
            }
        }
    }

    @Test func unbuildableFormCallsFailureWithNilTaskAndMakesNone() async throws {
        let manager = HTTPSessionManager(baseURL: URL(string: "http://127.0.0.1:1/"), engine: RefusingEngine())
        manager.completionQueue = TestQueues.completion
        let returnedNil = Recorder<Bool>()
        let result: (Bool, CourierError, String?) = await awaitCallback { finish in
            let task = manager.post("post", parameters: nil, constructingBodyWith: { form in
                try form.appendPart(withFileURL: URL(fileURLWithPath: "/nonexistent/courier/file.png"), name: "f")
            }, success: { _, _ in Issue.record("no success expected") }, failure: { task, error in
                finish((task == nil, error, DispatchQueue.getSpecific(key: TestQueues.key)))
            })
            returnedNil.append(task == nil)
        }
        #expect(returnedNil.all == [true])
        #expect(result.0, "failure gets a nil task")
        #expect(result.1.code == .bodyReadFailed)
        #expect(result.2 == "completion", "failure is called on the completion queue")
        #expect(manager.tasks.isEmpty)
        await #expect(throws: CourierError.self) {
            try await manager.post("post") { form in
                try form.appendPart(withFileURL: URL(fileURLWithPath: "/nonexistent/courier/file.png"), name: "f")
            }
        }
        #expect(manager.tasks.isEmpty)
        await manager.invalidate(cancelingTasks: true)
    }

    @Test func fileRemovedBeforeSendingFailsTheTask() async throws {
        try await withTemporaryFolder { folder in
            let url = folder.appendingPathComponent("vanishing.txt")
            try Data("here now".utf8).write(to: url)
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let request = try manager.requestSerializer.multipartFormRequest(
                        method: .post, urlString: server.url("/post").absoluteString, parameters: ["a": "1"]
                    ) { form in
                        try form.appendPart(withFileURL: url, name: "f")
                    }
                    try FileManager.default.removeItem(at: url)
                    let error = await #expect(throws: CourierError.self) { try await manager.data(for: request) }
                    #expect(error?.code == .bodyReadFailed)
                    #expect(error?.message.contains("vanishing.txt") == true, "\(error?.message ?? "")")
                    // The manager is still usable.
                    #expect(try await manager.post("post", parameters: ["b": "2"]).response.status == .ok)
                }
            }
        }
    }

    @Test func formIsSentAgainAfterA307() async throws {
        try await withTemporaryFolder { folder in
            let url = folder.appendingPathComponent("again.txt")
            try Data("twice".utf8).write(to: url)
            try await withTestServer { server in
                try await withManager(baseURL: server.baseURL) { manager in
                    let response = try await manager.post("redirect-to?url=/post&status_code=307", parameters: ["a": "1"]) { form in
                        try form.appendPart(withFileURL: url, name: "f")
                    }
                    let json = try #require(response.value.json)
                    #expect(Self.echoed(json["files"])["f"] == ["twice"])
                    #expect(Self.echoed(json["form"])["a"] == ["1"])
                }
            }
        }
    }
}
