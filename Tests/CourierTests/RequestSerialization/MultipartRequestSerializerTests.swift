@testable import Courier
import Foundation
import HTTPTypes
import NIOCore
import Testing

extension RequestSerializationTests {
    @Suite("multipartFormRequest and writing a body to a file")
    struct MultipartRequestSerializerTests {
        /// The form fields of a body as (name, value) pairs, in order, by splitting on the boundary.
        static func fields(of request: Request) async throws -> [(name: String, value: String)] {
            let contentType = try #require(request.headerFields[.contentType])
            let boundary = try #require(contentType.components(separatedBy: "boundary=").last)
            let text = String(decoding: try await collectBytes(of: request.body), as: UTF8.self)
            return text.components(separatedBy: "--" + boundary).dropFirst().dropLast().map { piece in
                let head = piece.components(separatedBy: "\r\n\r\n")[0]
                let name = head.components(separatedBy: "name=\"")[1].components(separatedBy: "\"")[0]
                let value = piece.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
                // The line break before the next delimiter (one Character, "\r\n").
                return (name, String(decoding: value.utf8.dropLast(2), as: UTF8.self))
            }
        }

        @Test("parameters become form fields, flattened as the query string flattens them, unescaped")
        func parametersAsFields() async throws {
            var serializer = HTTPRequestSerializer()
            serializer.setValue("abc", forHTTPHeaderField: "X-Api-Key")
            serializer.timeoutInterval = 7
            let request = try serializer.multipartFormRequest(
                method: .post, urlString: "https://h.test/upload?x=1",
                parameters: [
                    "user": ["name": "Ann B", "roles": ["admin", "dev"]] as Parameters, "flag": true, "n": 1.5, "s": Set(["b", "a"]),
                    "blob": Data([0x41, 0x42]), "none": NSNull(), "q": "a+b&c=d",
                ] as Parameters
            ) { form in
                form.appendPart(withForm: Data("last".utf8), name: "appended")
            }
            let fields = try await Self.fields(of: request)
            #expect(fields.map(\.name) == ["blob", "flag", "n", "none", "q", "s", "s", "user[name]", "user[roles][]", "user[roles][]", "appended"])
            #expect(fields.map(\.value) == ["AB", "1", "1.5", "", "a+b&c=d", "a", "b", "Ann B", "admin", "dev", "last"])
            #expect(request.url.absoluteString == "https://h.test/upload?x=1", "the parameters stay out of the query")
            #expect(request.headerFields[HTTPField.Name("X-Api-Key")!] == "abc")
            #expect(request.headerFields[.userAgent] != nil)
            #expect(request.options.timeoutInterval == 7)
            let contentType = try #require(request.headerFields[.contentType])
            #expect(contentType.hasPrefix("multipart/form-data; boundary=Boundary+"))
            let length = try #require(request.body.knownLength)
            #expect(request.headerFields[.contentLength] == String(length))
            #expect(Int64(try await collectBytes(of: request.body).count) == length)
            #expect(request.body.isReplayable)
        }

        /// The serializer's query-string style (Alamofire's array keys and booleans) flattens the
        /// form fields as it flattens the query; they were `tags[]` and `1` whatever it said.
        @Test("form fields take the serializer's query-string style, from the serializer and the JSON one")
        func fieldsTakeTheQueryStringStyle() async throws {
            let parameters: Parameters = ["tags": ["a", "b"], "on": true, "off": false, "s": Set(["x"]), "n": 1]
            var serializer = HTTPRequestSerializer()
            serializer.setQueryStringSerialization(with: .init(arrayEncoding: .indexInBrackets, boolEncoding: .literal))
            var json = JSONRequestSerializer()
            json.queryStringSerializationStyle = serializer.queryStringSerializationStyle
            for made in [serializer as any RequestSerializer, json] {
                let request = try made.multipartFormRequest(
                    method: .post, urlString: "https://h.test/upload", parameters: parameters, boundary: nil) { _ in }
                let fields = try await Self.fields(of: request)
                #expect(fields.map(\.name) == ["n", "off", "on", "s", "tags[0]", "tags[1]"])
                #expect(fields.map(\.value) == ["1", "false", "true", "x", "a", "b"])
            }
            serializer.queryStringSerializationStyle = .init(arrayEncoding: .noBrackets)
            let noBrackets = try serializer.multipartFormRequest(method: .post, urlString: "https://h.test/upload", parameters: parameters)
            #expect(try await Self.fields(of: noBrackets).map(\.name) == ["n", "off", "on", "s", "tags", "tags"])
            #expect(try await Self.fields(of: noBrackets).map(\.value) == ["1", "0", "1", "x", "a", "b"])
        }

        @Test("a chosen boundary separates the parts, from every serializer; a bad one is refused")
        func chosenBoundary() async throws {
            let serializers: [any RequestSerializer] = [HTTPRequestSerializer(), JSONRequestSerializer(), PropertyListRequestSerializer()]
            for serializer in serializers {
                let request = try serializer.multipartFormRequest(
                    method: .post, urlString: "https://h.test/upload", parameters: ["a": "1"], boundary: "courier-fixed"
                ) { form in
                    form.appendPart(withForm: Data("2".utf8), name: "b")
                }
                #expect(request.headerFields[.contentType] == "multipart/form-data; boundary=courier-fixed", "\(type(of: serializer))")
                let text = String(decoding: try await collectBytes(of: request.body), as: UTF8.self)
                #expect(text.hasPrefix("--courier-fixed\r\n"))
                #expect(text.hasSuffix("\r\n--courier-fixed--\r\n"))
                #expect(try await Self.fields(of: request).map(\.value) == ["1", "2"])
                // Twice the same: byte for byte.
                let again = try serializer.multipartFormRequest(
                    method: .post, urlString: "https://h.test/upload", parameters: ["a": "1"], boundary: "courier-fixed"
                ) { form in
                    form.appendPart(withForm: Data("2".utf8), name: "b")
                }
                #expect(try await collectBytes(of: again.body) == collectBytes(of: request.body))
                let error = #expect(throws: CourierError.self) {
                    try serializer.multipartFormRequest(method: .post, urlString: "https://h.test/upload", parameters: nil, boundary: "bad\u{1}") { _ in }
                }
                #expect(error?.code == .invalidRequest)
                #expect(error?.request?.url.absoluteString == "https://h.test/upload")
            }
            // Nil keeps the random boundary.
            let random = try HTTPRequestSerializer().multipartFormRequest(
                method: .post, urlString: "https://h.test/upload", parameters: ["a": "1"], boundary: nil) { _ in }
            #expect(random.headerFields[.contentType]?.hasPrefix("multipart/form-data; boundary=Boundary+") == true)
        }

        @Test("GET and HEAD cannot carry a form", arguments: [HTTPRequest.Method.get, .head])
        func getAndHeadRefused(_ method: HTTPRequest.Method) {
            let error = #expect(throws: CourierError.self) {
                try HTTPRequestSerializer().multipartFormRequest(method: method, urlString: "https://h.test/", parameters: ["a": 1])
            }
            #expect(error?.code == .invalidRequest)
            #expect(error?.message.contains(method.rawValue) == true)
            #expect(error?.request?.url.absoluteString == "https://h.test/")
        }

        @Test("other methods with a body are allowed", arguments: [HTTPRequest.Method.put, .patch, .delete, HTTPRequest.Method(rawValue: "REPORT")!])
        func otherMethods(_ method: HTTPRequest.Method) throws {
            let request = try HTTPRequestSerializer().multipartFormRequest(method: method, urlString: "https://h.test/", parameters: ["a": 1])
            #expect(request.method == method)
            #expect(request.headerFields[.contentType]?.hasPrefix("multipart/form-data") == true)
        }

        @Test("no parts: no body and no Content-Type (AFNetworking's JSON serializer; its HTTP one sends an empty form-urlencoded body)")
        func noParts() throws {
            let request = try HTTPRequestSerializer().multipartFormRequest(method: .post, urlString: "https://h.test/")
            #expect(request.body.isEmpty)
            #expect(request.headerFields[.contentType] == nil)
        }

        @Test("what the block throws reaches the caller with the request attached")
        func blockThrows() async throws {
            try await withTemporaryFolder { folder in
                let error = #expect(throws: CourierError.self) {
                    try HTTPRequestSerializer().multipartFormRequest(method: .post, urlString: "https://h.test/up") { form in
                        try form.appendPart(withFileURL: folder.appendingPathComponent("missing.png"), name: "photo")
                    }
                }
                #expect(error?.code == .bodyReadFailed)
                #expect(error?.request?.url.absoluteString == "https://h.test/up")
            }
            struct Mine: Error {}
            let other = #expect(throws: CourierError.self) {
                try HTTPRequestSerializer().multipartFormRequest(method: .post, urlString: "https://h.test/up") { _ in throw Mine() }
            }
            #expect(other?.code == .invalidRequest)
            #expect(other?.underlyingError is Mine)
            #expect(other?.message.contains("POST https://h.test/up") == true)
        }

        @Test("parameters with no form-field form fail with their path")
        func badParameters() {
            let date = #expect(throws: CourierError.self) {
                try HTTPRequestSerializer().multipartFormRequest(method: .post, urlString: "https://h.test/", parameters: ["a": ["when": Date()] as Parameters])
            }
            #expect(date?.code == .parameterEncodingFailed)
            #expect(date?.message.contains("'a[when]'") == true)
            var ascii = HTTPRequestSerializer()
            ascii.stringEncoding = .ascii
            let unrepresentable = #expect(throws: CourierError.self) {
                try ascii.multipartFormRequest(method: .post, urlString: "https://h.test/", parameters: ["k": "é"])
            }
            #expect(unrepresentable?.code == .parameterEncodingFailed)
            #expect(unrepresentable?.message.contains("'k'") == true)
            let topLevel = #expect(throws: CourierError.self) {
                try HTTPRequestSerializer().multipartFormRequest(method: .post, urlString: "https://h.test/", parameters: ["a", "b"])
            }
            #expect(topLevel?.code == .parameterEncodingFailed)
            let badURL = #expect(throws: CourierError.self) {
                try HTTPRequestSerializer().multipartFormRequest(method: .post, urlString: "not a url")
            }
            #expect(badURL?.code == .invalidURL)
        }

        @Test("the JSON and property-list serializers build forms through their base serializer")
        func wrappers() async throws {
            var json = JSONRequestSerializer()
            json.setValue("1", forHTTPHeaderField: "X-Json")
            let request = try json.multipartFormRequest(method: .post, urlString: "https://h.test/", parameters: ["a": ["b": 1]])
            #expect(try await Self.fields(of: request).map(\.name) == ["a[b]"])
            #expect(request.headerFields[HTTPField.Name("X-Json")!] == "1")
            #expect(request.headerFields[.contentType]?.hasPrefix("multipart/form-data; boundary=") == true)
            let plist = try PropertyListRequestSerializer().multipartFormRequest(method: .put, urlString: "https://h.test/", parameters: ["a": 1])
            #expect(try await Self.fields(of: plist).map(\.value) == ["1"])
            // Through the protocol, as a session manager calls it.
            let erased: any RequestSerializer = json
            let viaProtocol = try erased.multipartFormRequest(method: .post, urlString: "https://h.test/", parameters: ["z": "1"]) { _ in }
            #expect(viaProtocol.headerFields[HTTPField.Name("X-Json")!] == "1")
            #expect(try await Self.fields(of: viaProtocol).map(\.name) == ["z"])
        }

        /// A serializer of someone else's, with only the two required methods.
        struct CustomSerializer: RequestSerializer {
            func request(method: HTTPRequest.Method, urlString: String, parameters: (any Sendable)?) throws(CourierError) -> Request {
                var request = Request(method: method, url: URL(string: urlString)!)
                request.headerFields[.contentType] = "application/x-custom"
                request.headerFields[HTTPField.Name("X-Custom")!] = "yes"
                request.body = .data(Data("custom".utf8))
                return request
            }

            func request(bySerializing request: Request, parameters: (any Sendable)?) throws(CourierError) -> Request { request }
        }

        @Test("any serializer gets a form from the default implementation")
        func customSerializer() async throws {
            let serializer: any RequestSerializer = CustomSerializer()
            let request = try serializer.multipartFormRequest(method: .post, urlString: "https://h.test/", parameters: ["a": "1"]) { form in
                form.appendPart(withForm: Data("2".utf8), name: "b")
            }
            #expect(request.headerFields[HTTPField.Name("X-Custom")!] == "yes")
            #expect(request.headerFields[.contentType]?.hasPrefix("multipart/form-data") == true)
            #expect(try await Self.fields(of: request).map(\.value) == ["1", "2"])
            let get = #expect(throws: CourierError.self) {
                try serializer.multipartFormRequest(method: .get, urlString: "https://h.test/", parameters: nil) { _ in }
            }
            #expect(get?.code == .invalidRequest)
        }

        @Test("writing the body to a file: the same bytes, and the request without its body")
        func writeToFile() async throws {
            try await withTemporaryFolder { folder in
                let source = folder.appendingPathComponent("photo.png")
                try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0) }).write(to: source)
                let serializer = HTTPRequestSerializer()
                let request = try serializer.multipartFormRequest(method: .post, urlString: "https://h.test/", parameters: ["a": "1"]) { form in
                    try form.appendPart(withFileURL: source, name: "photo")
                }
                let destination = folder.appendingPathComponent("body.multipart")
                try Data("old contents".utf8).write(to: destination)
                let written = try await serializer.request(withMultipartFormRequest: request, writingStreamContentsToFile: destination)
                #expect(written.body.isEmpty)
                #expect(written.headerFields[.contentType] == request.headerFields[.contentType])
                let onDisk = try Data(contentsOf: destination)
                #expect(written.headerFields[.contentLength] == String(onDisk.count))
                #expect(Array(onDisk) == (try await collectBytes(of: request.body)))
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["body.multipart", "photo.png"])
                // Through a wrapper too.
                let again = try await JSONRequestSerializer().request(withMultipartFormRequest: request, writingStreamContentsToFile: destination)
                #expect(again.headerFields[.contentLength] == String(onDisk.count))
            }
        }

        @Test("an unwritable destination is a typed error and leaves nothing behind", arguments: ["missing-folder/body", "a-directory", "a-file/body"])
        func unwritableDestination(_ relativePath: String) async throws {
            try await withTemporaryFolder { folder in
                try FileManager.default.createDirectory(at: folder.appendingPathComponent("a-directory"), withIntermediateDirectories: false)
                try Data("x".utf8).write(to: folder.appendingPathComponent("a-file"))
                let before = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
                let request = try HTTPRequestSerializer().multipartFormRequest(method: .post, urlString: "https://h.test/", parameters: ["a": "1"])
                let error = await #expect(throws: CourierError.self) {
                    _ = try await HTTPRequestSerializer().request(
                        withMultipartFormRequest: request, writingStreamContentsToFile: folder.appendingPathComponent(relativePath))
                }
                #expect(error?.code == .fileSystemFailure)
                #expect(error?.message.contains(folder.appendingPathComponent(relativePath).path) == true, "\(error?.message ?? "")")
                #expect(error?.request != nil)
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == before)
            }
        }

        /// A folder that appears at the destination while the body is written is not replaced:
        /// the file is renamed into place in one step, which a folder refuses. NIOFileSystem's
        /// `replaceItem` removed the destination, recursively, and then moved the file there (a
        /// cancel between the two lost both files).
        @Test("a folder made at the destination while the body is written is left whole, and the write fails")
        func aFolderMadeAtTheDestinationMeanwhileIsKept() async throws {
            try await withTemporaryFolder { folder in
                let destination = folder.appendingPathComponent("out.multipart")
                var form = MultipartFormData()
                try form.appendPart(
                    withStream: {
                        // Read while the body is copied into the temporary file.
                        try? FileManager.default.createDirectory(at: destination, withIntermediateDirectories: false)
                        try? Data("keep".utf8).write(to: destination.appendingPathComponent("inside.txt"))
                        return AsyncThrowingStream<ByteBuffer, any Error> { continuation in
                            continuation.yield(ByteBuffer(string: "abc"))
                            continuation.finish()
                        }
                    }, name: "s", fileName: "s.txt", length: 3, mimeType: "text/plain")
                let request = form.finalizing(Request(method: .post, url: URL(string: "https://h.test/")!))
                let error = await #expect(throws: CourierError.self) {
                    _ = try await HTTPRequestSerializer().request(withMultipartFormRequest: request, writingStreamContentsToFile: destination)
                }
                #expect(error?.code == .fileSystemFailure)
                #expect(try Data(contentsOf: destination.appendingPathComponent("inside.txt")) == Data("keep".utf8))
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["out.multipart"], "the temporary file was removed")
            }
        }

        @Test("a body that fails midway leaves no partial file, and the old file untouched")
        func failingBodyLeavesNothing() async throws {
            try await withTemporaryFolder { folder in
                let source = folder.appendingPathComponent("source.bin")
                try Data(repeating: 7, count: 1000).write(to: source)
                var form = MultipartFormData()
                form.appendPart(withForm: Data(repeating: 1, count: 2_000_000), name: "big")  // written before the failure
                try form.appendPart(withFileURL: source, name: "f")
                try FileManager.default.removeItem(at: source)
                let request = form.finalizing(Request(method: .post, url: URL(string: "https://h.test/")!))
                let destination = folder.appendingPathComponent("out.multipart")
                try Data("previous".utf8).write(to: destination)
                let error = await #expect(throws: CourierError.self) {
                    _ = try await HTTPRequestSerializer().request(withMultipartFormRequest: request, writingStreamContentsToFile: destination)
                }
                #expect(error?.code == .bodyReadFailed)
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["out.multipart"])
                #expect(try Data(contentsOf: destination) == Data("previous".utf8))
            }
        }
    }
}
