import Courier
import Foundation
import Testing

/// Every verb round-trips headers, query and body through TestServer and, when configured, a
/// real httpbin.
@Suite("HTTP verbs against httpbin-compatible servers")
struct VerbConformanceTests {
    func object(_ response: DataResponse<(any Sendable)?>) throws -> [String: any Sendable] {
        try #require(response.value.json)
    }

    @Test(arguments: Peer.all)
    func getPutsParametersInTheQuery(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let response = try await manager.get("get", parameters: ["q": "swift courier", "page": 2], headers: [.init("X-Courier-Test")!: "yes"])
                let json = try self.object(response)
                let args = try #require(json["args"] as? [String: any Sendable])
                #expect(args["q"] as? String == "swift courier")
                #expect(args["page"] as? String == "2")
                let headers = try #require(json["headers"] as? [String: any Sendable])
                #expect(headers["X-Courier-Test"] as? String == "yes")
                #expect(response.response.status == .ok)
                #expect(response.request.url.query?.contains("page=2") == true)
            }
        }
    }

    @Test(arguments: Peer.all)
    func postPutPatchSendAFormBody(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let calls: [(String, (HTTPSessionManager) async throws(CourierError) -> DataResponse<(any Sendable)?>)] = [
                    ("post", { m throws(CourierError) in try await m.post("post", parameters: ["name": "Ada", "lang": "swift"]) }),
                    ("put", { m throws(CourierError) in try await m.put("put", parameters: ["name": "Ada", "lang": "swift"]) }),
                    ("patch", { m throws(CourierError) in try await m.patch("patch", parameters: ["name": "Ada", "lang": "swift"]) }),
                ]
                for (name, call) in calls {
                    let json = try self.object(try await call(manager))
                    let form = try #require(json["form"] as? [String: any Sendable], "\(name)")
                    #expect(form["name"] as? String == "Ada", "\(name)")
                    #expect(form["lang"] as? String == "swift", "\(name)")
                    let headers = try #require(json["headers"] as? [String: any Sendable])
                    #expect((headers["Content-Type"] as? String)?.hasPrefix("application/x-www-form-urlencoded") == true, "\(name)")
                }
            }
        }
    }

    @Test(arguments: Peer.all)
    func deleteAndHead(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let json = try self.object(try await manager.delete("delete", parameters: ["id": 7]))
                #expect((json["args"] as? [String: any Sendable])?["id"] as? String == "7")
                let head = try await manager.head("get")
                #expect(head.status == .ok)
            }
        }
    }

    @Test(arguments: Peer.all)
    func callbackVerbsReportSuccessAndFailure(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let args: [String: any Sendable]? = await awaitCallback { finish in
                    manager.get("get", parameters: ["a": "1"], success: { _, object in
                        finish(object.json?["args"] as? [String: any Sendable])
                    }, failure: { _, _ in finish(nil) })
                }
                #expect(args?["a"] as? String == "1")
                let failure: (Bool, CourierError?) = await awaitCallback { finish in
                    manager.get("status/404", success: { _, _ in finish((false, nil)) }, failure: { task, error in
                        finish((task != nil, error))
                    })
                }
                #expect(failure.0, "a failed request still has its task")
                #expect(failure.1?.response?.status.code == 404)
                let headDone: Bool = await awaitCallback { finish in
                    manager.head("get", success: { task in finish(task.response?.status == .ok) }, failure: { _, _ in finish(false) })
                }
                #expect(headDone)
            }
        }
    }

    @Test(arguments: Peer.all)
    func redirectsAreFollowed(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let response = try await manager.get("redirect/3")
                #expect(response.response.status == .ok)
                #expect(response.request.url.path.hasSuffix("/get"))
            }
        }
    }

    @Test(arguments: Peer.all)
    func gzipIsDecompressed(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let json = try self.object(try await manager.get("gzip"))
                #expect(json["gzipped"] as? Bool == true || (json["gzipped"] as? NSNumber)?.boolValue == true)
            }
        }
    }
}
