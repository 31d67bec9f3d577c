import AsyncHTTPClient
import CompressNIO
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@Suite struct HTTPBinRoutesTests {
    @Test func statusCodes() async throws {
        try await withServer { server, client in
            for code in [200, 201, 204, 400, 404, 500, 503] {
                let fetched = try await client.fetch(server.url("/status/\(code)"), method: .POST)
                #expect(fetched.status == code)
            }
            let teapot = try await client.fetch(server.url("/status/418"))
            #expect(teapot.status == 418)
            #expect(teapot.text.contains("teapot"))
            let unauthorized = try await client.fetch(server.url("/status/401"))
            #expect(unauthorized.header("WWW-Authenticate")?.hasPrefix("Basic") == true)
            let redirect = try await client.fetch(server.url("/status/302"))
            #expect(redirect.header("Location") == "/redirect/1")
            for _ in 0..<10 {
                let random = try await client.fetch(server.url("/status/201,202,203"))
                #expect([201, 202, 203].contains(random.status))
            }
            let invalid = try await client.fetch(server.url("/status/abc"))
            #expect(invalid.status == 400)
        }
    }

    @Test func responseHeadersAreSetAndEchoed() async throws {
        try await withServer { server, client in
            let fetched = try await client.fetch(server.url("/response-headers?X-One=1&X-Two=a&X-Two=b"))
            #expect(fetched.header("X-One") == "1")
            #expect(fetched.response.headers["X-Two"] == ["a", "b"])
            let json = try fetched.json()
            #expect(json["X-One"] as? String == "1")
            #expect(json["X-Two"] as? [String] == ["a", "b"])
            #expect(json["Content-Length"] as? String == String(fetched.bytes.count))
        }
    }

    @Test func redirects() async throws {
        try await withServer { server, client in
            let base = "http://127.0.0.1:\(server.port)"
            #expect(try await client.fetch(server.url("/redirect/3")).header("Location") == "/relative-redirect/2")
            #expect(try await client.fetch(server.url("/redirect/1")).header("Location") == "/get")
            #expect(try await client.fetch(server.url("/redirect/2?absolute=true")).header("Location") == "\(base)/absolute-redirect/1")
            #expect(try await client.fetch(server.url("/relative-redirect/2")).header("Location") == "/relative-redirect/1")
            let absolute = try await client.fetch(server.url("/absolute-redirect/1"))
            #expect(absolute.status == 302)
            #expect(absolute.header("Location") == "\(base)/get")
            let to = try await client.fetch(server.url("/redirect-to?url=%2Fget%3Fa%3D1&status_code=307"), method: .POST)
            #expect(to.status == 307)
            #expect(to.header("Location") == "/get?a=1")
            let defaultStatus = try await client.fetch(server.url("/redirect-to?url=http://example.invalid/"), method: .DELETE)
            #expect(defaultStatus.status == 302)
            let zero = try await client.fetch(server.url("/redirect/0"))
            #expect(zero.status == 404)
        }
    }

    @Test func delayWaitsFractionalSeconds() async throws {
        try await withServer { server, client in
            let clock = ContinuousClock()
            let start = clock.now
            let fetched = try await client.fetch(server.url("/delay/0.2"))
            #expect(fetched.status == 200)
            #expect(clock.now - start >= .milliseconds(190))
            #expect(try fetched.json()["url"] != nil)
        }
    }

    @Test func bytesAreRandomUnlessSeeded() async throws {
        try await withServer { server, client in
            let first = try await client.fetch(server.url("/bytes/1000?seed=7"))
            let second = try await client.fetch(server.url("/bytes/1000?seed=7"))
            let other = try await client.fetch(server.url("/bytes/1000"))
            #expect(first.bytes.count == 1000)
            #expect(first.bytes == second.bytes)
            #expect(first.bytes != other.bytes)
            #expect(first.header("Content-Type") == "application/octet-stream")
            // The seeded generator's words, least significant byte first, so the bytes for a
            // seed stay the same from one version of the server to the next; a length that is
            // not a multiple of 8 is the same bytes, cut.
            let thirteen = try await client.fetch(server.url("/bytes/13?seed=7"))
            #expect(thirteen.bytes == [0xd7, 0x0d, 0x32, 0x59, 0xe4, 0xe1, 0xcb, 0x63, 0x1c, 0x66, 0x3c, 0xf4, 0xd7])
            #expect(Array(first.bytes.prefix(13)) == thirteen.bytes)
            #expect(try await client.fetch(server.url("/bytes/0?seed=7")).bytes.isEmpty)
        }
    }

    @Test func streamSendsJSONLinesChunked() async throws {
        try await withServer(client: ClientOptions(http1Only: true)) { server, client in
            let fetched = try await client.fetch(server.url("/stream/5?x=1"))
            #expect(fetched.header("Transfer-Encoding") == "chunked")
            let lines = fetched.text.split(separator: "\n")
            #expect(lines.count == 5)
            for (index, line) in lines.enumerated() {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object?["id"] as? Int == index)
                #expect((object?["args"] as? [String: String])?["x"] == "1")
            }
        }
    }

    @Test func streamBytesHonoursChunkSizeAndSeed() async throws {
        try await withServer(client: ClientOptions(http1Only: true)) { server, client in
            let streamed = try await client.fetch(server.url("/stream-bytes/5000?chunk_size=512&seed=3"))
            let plain = try await client.fetch(server.url("/bytes/5000?seed=3"))
            #expect(streamed.header("Transfer-Encoding") == "chunked")
            #expect(streamed.bytes == plain.bytes)
        }
    }

    @Test func dripSpreadsBytesOverDuration() async throws {
        try await withServer { server, client in
            let clock = ContinuousClock()
            let start = clock.now
            let fetched = try await client.fetch(server.url("/drip?duration=0.2&numbytes=5&code=201&delay=0.1"))
            #expect(clock.now - start >= .milliseconds(250))
            #expect(fetched.status == 201)
            #expect(fetched.text == "*****")
            #expect(fetched.header("Content-Length") == "5")
        }
    }

    @Test func gzipAndDeflateAreCompressedWhateverTheClientAccepts() async throws {
        try await withServer { server, client in
            let gzip = try await client.fetch(server.url("/gzip"))
            #expect(gzip.header("Content-Encoding") == "gzip")
            #expect(Array(gzip.bytes.prefix(2)) == [0x1f, 0x8b])
            let gzipJSON = try JSONSerialization.jsonObject(with: Data(try #require(inflate(gzip.bytes)))) as? [String: Any]
            #expect(gzipJSON?["gzipped"] as? Bool == true)
            #expect(gzipJSON?["method"] as? String == "GET")

            let deflate = try await client.fetch(server.url("/deflate"), headers: ["Accept-Encoding": "identity"])
            #expect(deflate.header("Content-Encoding") == "deflate")
            let deflateJSON = try JSONSerialization.jsonObject(with: Data(try #require(inflate(deflate.bytes, as: .zlib)))) as? [String: Any]
            #expect(deflateJSON?["deflated"] as? Bool == true)
        }
    }

    @Test func sampleDocumentsAndImages() async throws {
        try await withServer { server, client in
            let json = try await client.fetch(server.url("/json"))
            #expect(json.header("Content-Type") == "application/json")
            #expect(try json.json()["slideshow"] != nil)
            let xml = try await client.fetch(server.url("/xml"))
            #expect(xml.header("Content-Type") == "application/xml")
            #expect(xml.text.contains("<slideshow"))
            let html = try await client.fetch(server.url("/html"))
            #expect(html.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(html.text.contains("<h1>"))
            let utf8 = try await client.fetch(server.url("/encoding/utf8"))
            #expect(utf8.text.contains("Zwölf"))
            #expect(utf8.header("Content-Type") == "text/html; charset=utf-8")

            let magic: [(String, String, [UInt8])] = [
                ("png", "image/png", [0x89, 0x50, 0x4e, 0x47]),
                ("jpeg", "image/jpeg", [0xff, 0xd8, 0xff]),
                ("gif", "image/gif", Array("GIF89a".utf8)),
                ("svg", "image/svg+xml", Array("<?xml".utf8)),
            ]
            for (kind, type, prefix) in magic {
                let image = try await client.fetch(server.url("/image/\(kind)"))
                #expect(image.header("Content-Type") == type)
                #expect(Array(image.bytes.prefix(prefix.count)) == prefix, "\(kind)")
            }
            let jpeg = try await client.fetch(server.url("/image/jpeg"))
            #expect(jpeg.bytes.suffix(2) == [0xff, 0xd9])
        }
    }

    @Test func basicAuthHiddenBasicAuthAndBearer() async throws {
        try await withServer { server, client in
            let good = "Basic " + Data("user:pass".utf8).base64EncodedString()
            let bad = "Basic " + Data("user:nope".utf8).base64EncodedString()
            let ok = try await client.fetch(server.url("/basic-auth/user/pass"), headers: ["Authorization": good])
            #expect(ok.status == 200)
            #expect(try ok.json()["user"] as? String == "user")
            #expect(try ok.json()["authenticated"] as? Bool == true)
            let wrong = try await client.fetch(server.url("/basic-auth/user/pass"), headers: ["Authorization": bad])
            #expect(wrong.status == 401)
            #expect(wrong.header("WWW-Authenticate") == "Basic realm=\"Fake Realm\"")
            let missing = try await client.fetch(server.url("/basic-auth/user/pass"))
            #expect(missing.status == 401)
            let hidden = try await client.fetch(server.url("/hidden-basic-auth/user/pass"), headers: ["Authorization": bad])
            #expect(hidden.status == 404)
            let hiddenOK = try await client.fetch(server.url("/hidden-basic-auth/user/pass"), headers: ["Authorization": good])
            #expect(hiddenOK.status == 200)

            let bearer = try await client.fetch(server.url("/bearer"), headers: ["Authorization": "Bearer abc.def"])
            #expect(try bearer.json()["token"] as? String == "abc.def")
            let noBearer = try await client.fetch(server.url("/bearer"))
            #expect(noBearer.status == 401)
            #expect(noBearer.header("WWW-Authenticate") == "Bearer")
        }
    }

    @Test func cookies() async throws {
        try await withServer { server, client in
            let listed = try await client.fetch(server.url("/cookies"), headers: ["Cookie": "a=1; b=two"])
            #expect(try listed.json()["cookies"] as? [String: String] == ["a": "1", "b": "two"])
            let set = try await client.fetch(server.url("/cookies/set?k=v&m=n"))
            #expect(set.status == 302)
            #expect(set.header("Location") == "/cookies")
            #expect(set.response.headers["Set-Cookie"] == ["k=v; Path=/", "m=n; Path=/"])
            let deleted = try await client.fetch(server.url("/cookies/delete?k"))
            #expect(deleted.status == 302)
            #expect(deleted.header("Set-Cookie")?.hasPrefix("k=; Expires=Thu, 01 Jan 1970") == true)
        }
    }

    @Test func etagConditions() async throws {
        try await withServer { server, client in
            let plain = try await client.fetch(server.url("/etag/abc"))
            #expect(plain.status == 200)
            #expect(plain.header("ETag") == "\"abc\"")
            #expect(try await client.fetch(server.url("/etag/abc"), headers: ["If-None-Match": "\"abc\""]).status == 304)
            #expect(try await client.fetch(server.url("/etag/abc"), headers: ["If-None-Match": "\"x\", W/\"abc\""]).status == 304)
            #expect(try await client.fetch(server.url("/etag/abc"), headers: ["If-None-Match": "\"x\""]).status == 200)
            #expect(try await client.fetch(server.url("/etag/abc"), headers: ["If-Match": "\"x\""]).status == 412)
            #expect(try await client.fetch(server.url("/etag/abc"), headers: ["If-Match": "\"abc\""]).status == 200)
        }
    }

    @Test func rangeRequests() async throws {
        try await withServer { server, client in
            let full = try await client.fetch(server.url("/range/30"))
            #expect(full.status == 200)
            #expect(full.text == "abcdefghijklmnopqrstuvwxyzabcd")
            #expect(full.header("Accept-Ranges") == "bytes")
            #expect(full.header("ETag") == "\"range30\"")
            let part = try await client.fetch(server.url("/range/30"), headers: ["Range": "bytes=2-5"])
            #expect(part.status == 206)
            #expect(part.text == "cdef")
            #expect(part.header("Content-Range") == "bytes 2-5/30")
            let suffix = try await client.fetch(server.url("/range/30"), headers: ["Range": "bytes=-3"])
            #expect(suffix.text == "bcd")
            let open = try await client.fetch(server.url("/range/30"), headers: ["Range": "bytes=27-"])
            #expect(open.text == "bcd")
            let unsatisfiable = try await client.fetch(server.url("/range/30"), headers: ["Range": "bytes=40-50"])
            #expect(unsatisfiable.status == 416)
            #expect(unsatisfiable.header("Content-Range") == "bytes */30")
            let ifRangeMatch = try await client.fetch(server.url("/range/30"), headers: ["Range": "bytes=0-0", "If-Range": "\"range30\""])
            #expect(ifRangeMatch.status == 206)
            let ifRangeOther = try await client.fetch(server.url("/range/30"), headers: ["Range": "bytes=0-0", "If-Range": "\"other\""])
            #expect(ifRangeOther.status == 200)
            #expect(ifRangeOther.bytes.count == 30)
        }
    }

    @Test func cacheAndBase64() async throws {
        try await withServer { server, client in
            let fresh = try await client.fetch(server.url("/cache"))
            #expect(fresh.status == 200)
            #expect(fresh.header("Last-Modified")?.hasSuffix("GMT") == true)
            #expect(fresh.header("ETag") != nil)
            #expect(try await client.fetch(server.url("/cache"), headers: ["If-None-Match": "\"x\""]).status == 304)
            #expect(try await client.fetch(server.url("/cache"), headers: ["If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"]).status == 304)
            #expect(try await client.fetch(server.url("/cache/60")).header("Cache-Control") == "public, max-age=60")
            #expect(try await client.fetch(server.url("/base64/SGVsbG8sIENvdXJpZXI_")).text == "Hello, Courier?")
            #expect(try await client.fetch(server.url("/base64/Q291cmllcg")).text == "Courier")
            #expect(try await client.fetch(server.url("/base64/%%%")).text.hasPrefix("Incorrect Base64"))
        }
    }

    @Test func headRequestsGetNoBody() async throws {
        try await withServer(client: ClientOptions(http1Only: true)) { server, client in
            let fetched = try await client.fetch(server.url("/get"), method: .HEAD)
            #expect(fetched.status == 200)
            #expect(fetched.bytes.isEmpty)
            #expect(Int(fetched.header("Content-Length") ?? "") ?? 0 > 0)
        }
    }
}
