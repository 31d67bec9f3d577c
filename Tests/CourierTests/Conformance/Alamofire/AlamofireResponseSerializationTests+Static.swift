import Courier
import CourierTesting
import Foundation
import NIOCore
import Testing

/// Twins of Alamofire's `StaticSerializationTests` (`Tests/ResponseSerializationTests.swift`):
/// the serializers as static members where a serializer is expected, and in a request.
@Suite("Conformance: Alamofire ResponseSerializationTests, static members")
struct AlamofireStaticSerializationConformanceTests {
    func consumeResponseSerializer<Serializer: ResponseSerializer>(_ serializer: Serializer) -> Serializer { serializer }

    @Test func testThatDataSerializerCanBeCreatedStaticallyFromProtocol() throws {
        let serializer = consumeResponseSerializer(.data)
        #expect(try serializer.responseObject(for: nil, data: Data("data".utf8)) == Data("data".utf8))
    }

    @Test func testThatStringSerializerCanBeCreatedStaticallyFromProtocol() throws {
        #expect(try consumeResponseSerializer(.string).responseObject(for: nil, data: Data("text".utf8)) == "text")
        #expect(consumeResponseSerializer(.string(encoding: .isoLatin1)).encoding == .isoLatin1)
    }

    @Test func testThatDecodableSerializerCanBeCreatedStaticallyFromProtocol() throws {
        let serializer = consumeResponseSerializer(.decodable(of: [String: Int].self))
        #expect(try serializer.responseObject(for: nil, data: Data(#"{"a": 1}"#.utf8)) == ["a": 1])
    }

    func consumeDownloadResponseSerializer<Serializer: DownloadResponseSerializer>(_ serializer: Serializer) -> Serializer { serializer }

    @Test func testThatURLSerializerCanBeCreatedStaticallyFromProtocol() throws {
        let file = URL(fileURLWithPath: "/tmp/file")
        #expect(try consumeDownloadResponseSerializer(.url).responseObject(for: nil, fileURL: file) == file)
    }

    func consumeStreamSerializer<Serializer: DataStreamSerializer>(_ serializer: Serializer) -> Serializer { serializer }

    @Test func testThatPassthroughStreamSerializerCanBeCreatedStaticallyFromProtocol() {
        var serializer = consumeStreamSerializer(.passthrough)
        #expect(serializer.serialize(ByteBuffer(string: "data")) == [Data("data".utf8)])
    }

    @Test func testThatStringStreamSerializerCanBeCreatedStaticallyFromProtocol() {
        var serializer = consumeStreamSerializer(.string)
        #expect(serializer.serialize(ByteBuffer(string: "text")) == ["text"])
    }

    @Test func testThatDecodableStreamSerializerCanBeCreatedStaticallyFromProtocol() throws {
        var serializer = consumeStreamSerializer(.decodable(of: [String: Int].self))
        #expect(try serializer.serialize(ByteBuffer(string: "{\"a\": 1}\n")) == [["a": 1]])
    }

    /// Not a source test: the members where Courier takes a serializer, over a socket.
    @Test func aRequestTakesAStaticSerializer() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                let text = try await manager.response(for: Request(url: server.url("/get")), serializer: .string).value
                #expect(text.hasPrefix("{"))
                let json = try await manager.response(for: Request(url: server.url("/json")), serializer: .json).value
                #expect(json is [String: Any])
            }
        }
    }
}
