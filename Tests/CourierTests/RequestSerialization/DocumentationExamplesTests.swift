import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

extension RequestSerializationTests {
    /// The examples of the DocC article Request serialization (Courier.docc/RequestSerialization.md),
    /// checked.
    @Suite("Documentation examples")
    struct DocumentationExamplesTests {
        @Test("HTTPRequestSerializer examples")
        func http() throws {
            var serializer = HTTPRequestSerializer()
            serializer.setValue("abc", forHTTPHeaderField: "X-Api-Key")
            serializer.setAuthorizationHeaderField(username: "ann", password: "secret")
            serializer.timeoutInterval = 10
            let search = try serializer.request(
                method: .get,
                urlString: "https://example.com/search?lang=en#top",
                parameters: ["q": "swift nio", "page": 2]
            )
            #expect(search.url.absoluteString == "https://example.com/search?lang=en&page=2&q=swift%20nio#top")
            #expect(search.head.path == "/search?lang=en&page=2&q=swift%20nio")
            #expect(search.options.timeoutInterval == 10)
            #expect(search.headerFields[HTTPField.Name("X-Api-Key")!] == "abc")
            let login = try serializer.request(
                method: .post,
                urlString: "https://example.com/login",
                parameters: ["user": ["name": "ann", "roles": ["admin", "dev"]] as Parameters, "remember": true]
            )
            #expect(login.body.data == Data("remember=1&user%5Bname%5D=ann&user%5Broles%5D%5B%5D=admin&user%5Broles%5D%5B%5D=dev".utf8))
            #expect(try HTTPRequestSerializer.queryString(from: ["q": "a+b c/d?"] as Parameters) == "q=a%2Bb%20c/d?")
            #expect(
                try HTTPRequestSerializer.queryString(from: ["user": ["name": "Ann", "tags": ["a", "b"]] as Parameters, "q": "a b"] as Parameters)
                    == "q=a%20b&user%5Bname%5D=Ann&user%5Btags%5D%5B%5D=a&user%5Btags%5D%5B%5D=b"
            )
        }

        @Test("JSON error message example")
        func jsonError() {
            let json = JSONRequestSerializer()
            #expect {
                try json.request(method: .post, urlString: "https://example.com/", parameters: ["items": [["price": Double.nan]]])
            } throws: { error in
                (error as? CourierError)?.message == "the number at 'items[0][price]' is nan, which JSON cannot carry"
            }
        }

        @Test("URLEncodedFormEncoder example")
        func form() throws {
            struct Search: Encodable, Sendable { var query: String; var tags: [String]; var exact: Bool }
            var form = URLEncodedFormEncoder()
            form.arrayEncoding = .noBrackets
            form.boolEncoding = .literal
            form.spaceEncoding = .plusReplaced
            form.keyEncoding = .convertToSnakeCase
            #expect(try form.encode(Search(query: "swift nio", tags: ["a", "b"], exact: true)) == "exact=true&query=swift+nio&tags=a&tags=b")

            struct Page: Encodable, Sendable { var query: String; var page: Int }
            let request = Request(method: .get, url: URL(string: "https://example.com/search")!)
            let encoded = try URLEncodedFormParameterEncoder.default.encode(Page(query: "a b", page: 2), into: request)
            #expect(encoded.url.absoluteString == "https://example.com/search?page=2&query=a%20b")
        }
    

        @Test("README multipart example, as written (files in a temporary folder, the tour's manager on TestServer)")
        func multipart() async throws {
            try await withTemporaryFolder { folder in
                let server = try await TestServer.start()
                let manager = HTTPSessionManager(baseURL: server.baseURL)
                manager.completionQueue = .global()
                let serializer = HTTPRequestSerializer()
                try Data("meow".utf8).write(to: folder.appendingPathComponent("cat.jpg"))

                let photo = folder.appendingPathComponent("cat.jpg")  // The article: URL(fileURLWithPath: "/tmp/cat.jpg")
                // The article: "https://example.com/upload"; here the test server, as the request is uploaded below.
                let upload = try serializer.multipartFormRequest(method: .post, urlString: server.url("/post").absoluteString,
                                                                 parameters: ["album": ["id": 7]]) { form in
                    try form.appendPart(withFileURL: photo, name: "photo")
                    form.appendPart(withFileData: Data("hi".utf8), name: "note", fileName: "note.txt", mimeType: "text/plain")
                    form.appendPart(withForm: Data("cats".utf8), name: "tag")
                }
                let contentType = try #require(upload.headerFields[.contentType])
                #expect(contentType.hasPrefix("multipart/form-data; boundary=Boundary+"))
                #expect(upload.headerFields[.contentLength] == upload.body.knownLength.map { String($0) })
                let text = String(decoding: try await collectBytes(of: upload.body), as: UTF8.self)
                #expect(text.contains("Content-Disposition: form-data; name=\"album[id]\"\r\n\r\n7\r\n"))
                #expect(text.contains("Content-Disposition: form-data; name=\"photo\"; filename=\"cat.jpg\"\r\nContent-Type: image/jpeg\r\n\r\nmeow\r\n"))

                let posted = try await manager.post("post", parameters: ["album": "cats"]) { form in
                    try form.appendPart(withFileURL: photo, name: "photo")
                }
                #expect((posted.value.json?["files"] as? [String: any Sendable])?["photo"] as? String == "meow")

                let bodyFile = folder.appendingPathComponent("upload.multipart")  // The article: /tmp/upload.multipart
                let bare = try await serializer.request(withMultipartFormRequest: upload, writingStreamContentsToFile: bodyFile)
                let sent: String? = await awaitCallback { finish in
                    manager.uploadTask(with: bare, fromFile: bodyFile) { response, object, error in
                        finish(((object as? [String: any Sendable])?["files"] as? [String: any Sendable])?["photo"] as? String)
                    }.resume()
                }
                #expect(sent == "meow")
                #expect(bare.body.isEmpty)

                await manager.invalidate(cancelingTasks: false)
                try await server.shutdown()
            }
        }
    }
}
