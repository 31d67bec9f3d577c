import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@Suite struct HTTPBinEchoTests {
    @Test func getEchoesArgsHeadersOriginAndURL() async throws {
        try await withServer { server, client in
            let fetched = try await client.fetch(server.url("/get?a=1&b=two%20words&a=2&c"), headers: ["X-Test": "yes"])
            #expect(fetched.status == 200)
            #expect(fetched.header("Content-Type") == "application/json")
            let json = try fetched.json()
            let args = try #require(json["args"] as? [String: Any])
            #expect(args["a"] as? [String] == ["1", "2"])
            #expect(args["b"] as? String == "two words")
            #expect(args["c"] as? String == "")
            let headers = try #require(json["headers"] as? [String: String])
            #expect(headers["X-Test"] == "yes")
            #expect(json["origin"] as? String == "127.0.0.1")
            #expect(json["url"] as? String == "http://127.0.0.1:\(server.port)/get?a=1&b=two%20words&a=2&c")
        }
    }

    @Test func methodRoutesRejectOtherMethods() async throws {
        try await withServer { server, client in
            #expect(try await client.fetch(server.url("/get"), method: .POST).status == 405)
            #expect(try await client.fetch(server.url("/post")).status == 405)
            for (path, method) in [("/put", HTTPMethod.PUT), ("/patch", .PATCH), ("/delete", .DELETE), ("/post", .POST)] {
                let fetched = try await client.fetch(server.url(path), method: method, body: Array("raw".utf8))
                #expect(fetched.status == 200, "\(path)")
                #expect(try fetched.json()["data"] as? String == "raw", "\(path)")
            }
        }
    }

    @Test func postParsesJSONAndKeepsRawData() async throws {
        try await withServer { server, client in
            let body = #"{"name":"courier","n":[1,2]}"#
            let fetched = try await client.fetch(
                server.url("/post?x=1"), method: .POST, headers: ["Content-Type": "application/json"], body: Array(body.utf8))
            let json = try fetched.json()
            #expect(json["data"] as? String == body)
            let parsed = try #require(json["json"] as? [String: Any])
            #expect(parsed["name"] as? String == "courier")
            #expect(parsed["n"] as? [Int] == [1, 2])
            #expect((json["form"] as? [String: Any])?.isEmpty == true)
            #expect((json["args"] as? [String: Any])?["x"] as? String == "1")
        }
    }

    @Test func postParsesURLEncodedForm() async throws {
        try await withServer { server, client in
            let fetched = try await client.fetch(
                server.url("/post"), method: .POST, headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: Array("a=1&a=2&b=hello+world&c=%E2%9C%93".utf8))
            let form = try #require(try fetched.json()["form"] as? [String: Any])
            #expect(form["a"] as? [String] == ["1", "2"])
            #expect(form["b"] as? String == "hello world")
            #expect(form["c"] as? String == "✓")
            #expect(try fetched.json()["json"] is NSNull)
        }
    }

    @Test func postParsesMultipartFormAndFiles() async throws {
        try await withServer { server, client in
            let boundary = "courier-boundary-42"
            var body = Data()
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"field\"\r\n\r\nvalue one\r\n".utf8))
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nfile\r\ncontents\r\n".utf8))
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"blob\"; filename=\"b.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n".utf8))
            body.append(contentsOf: [0xff, 0x00, 0xfe])
            body.append(Data("\r\n--\(boundary)--\r\n".utf8))
            let fetched = try await client.fetch(
                server.url("/anything/upload"), method: .POST,
                headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)"], body: Array(body))
            let json = try fetched.json()
            #expect((json["form"] as? [String: Any])?["field"] as? String == "value one")
            let files = try #require(json["files"] as? [String: Any])
            #expect(files["upload"] as? String == "file\r\ncontents")
            #expect(files["blob"] as? String == "data:application/octet-stream;base64,/wD+")
            #expect(json["method"] as? String == "POST")
        }
    }

    @Test func anythingAcceptsEveryMethodAndPath() async throws {
        try await withServer { server, client in
            for method in [HTTPMethod.GET, .POST, .PUT, .DELETE, .PATCH, .OPTIONS] {
                let fetched = try await client.fetch(server.url("/anything/a/b?q=1"), method: method)
                #expect(fetched.status == 200)
                let json = try fetched.json()
                #expect(json["method"] as? String == method.rawValue)
                #expect((json["url"] as? String)?.hasSuffix("/anything/a/b?q=1") == true)
            }
            let binary = try await client.fetch(server.url("/anything"), method: .PUT, body: [0xff, 0xfe])
            #expect(try binary.json()["data"] as? String == "data:application/octet-stream;base64,//4=")
        }
    }

    @Test func headersUserAgentIPAndUUID() async throws {
        try await withServer { server, client in
            let headers = try await client.fetch(server.url("/headers"), headers: ["X-A": "1", "User-Agent": "courier-tests"])
            let echoed = try #require(try headers.json()["headers"] as? [String: String])
            #expect(echoed["X-A"] == "1")
            #expect(echoed["Host"] == "127.0.0.1:\(server.port)")
            let agent = try await client.fetch(server.url("/user-agent"), headers: ["User-Agent": "courier-tests"])
            #expect(try agent.json()["user-agent"] as? String == "courier-tests")
            #expect(try await client.fetch(server.url("/ip")).json()["origin"] as? String == "127.0.0.1")
            let uuid = try #require(try await client.fetch(server.url("/uuid")).json()["uuid"] as? String)
            #expect(UUID(uuidString: uuid) != nil)
        }
    }

    @Test func unknownPathIsNotFound() async throws {
        try await withServer { server, client in
            let missing = try await client.fetch(server.url("/no/such/route"))
            #expect(missing.status == 404)
            let root = try await client.fetch(server.url("/"))
            #expect(root.status == 404)
        }
    }
}
