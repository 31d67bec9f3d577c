import Courier
import CourierTesting
import Foundation
import Testing

@Suite("Decodable verbs")
struct DecodableVerbTests {
    struct Echo: Decodable, Sendable {
        let args: [String: String]
        let url: String
    }

    struct Posted: Decodable, Sendable {
        let form: [String: String]
    }

    @Test(arguments: Peer.all)
    func verbsDecodeTheirBodies(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let get = try await manager.get("get", parameters: ["a": "1"], as: Echo.self)
                #expect(get.value.args == ["a": "1"])
                #expect(get.response.status == .ok)
                let post = try await manager.post("post", parameters: ["b": "2"], as: Posted.self)
                #expect(post.value.form == ["b": "2"])
                let put = try await manager.put("put", parameters: ["c": "3"], as: Posted.self)
                #expect(put.value.form == ["c": "3"])
                let patch = try await manager.patch("patch", parameters: ["d": "4"], as: Posted.self)
                #expect(patch.value.form == ["d": "4"])
                let delete = try await manager.delete("delete", parameters: ["e": "5"], as: Echo.self)
                #expect(delete.value.args == ["e": "5"])
            }
        }
    }

    @Test func decodingFailureKeepsTheData() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                await #expect {
                    try await manager.get("get", as: Posted.self)
                } throws: { error in
                    let error = error as? CourierError
                    return error?.code == .responseSerializationFailed && error?.data?.isEmpty == false && error?.request != nil
                }
            }
        }
    }
}
