import Courier
import CourierTesting
import Foundation
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Each serializer on real responses from TestServer and, when configured, a real httpbin.
@Suite("Response serialization round trips")
struct ResponseSerializationRoundTripTests {
    @Test(arguments: Peer.all)
    func jsonFromJSONRoute(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let response = try await manager.get("json")
                let slideshow = try #require(response.value.json?["slideshow"] as? [String: any Sendable])
                #expect(slideshow["title"] as? String != nil)
            }
        }
    }

    @Test(arguments: Peer.all)
    func xmlParserAndDocument(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let parsed = try await manager.response(method: .get, urlString: "xml", serializer: XMLParserResponseSerializer())
                let source = try #require(parsed.value)
                let parser = source.makeParser()
                #expect(parser.parse())
                let document = try await manager.response(method: .get, urlString: "xml", serializer: XMLDocumentResponseSerializer())
                let root = try #require(document.value).document().rootElement()
                #expect(root?.name == "slideshow")
                // The JSON route is not XML: the content type is refused, the data kept.
                await #expect {
                    try await manager.response(method: .get, urlString: "json", serializer: XMLDocumentResponseSerializer())
                } throws: { error in
                    let error = error as? CourierError
                    return error?.code == .unacceptableContentType && error?.data?.isEmpty == false
                }
            }
        }
    }

    @Test(arguments: Peer.all)
    func imagesKnowTheirFormatAndSize(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                for (path, format) in [("image/png", ImageFormat.png), ("image/jpeg", .jpeg)] {
                    let response = try await manager.response(method: .get, urlString: path, serializer: ImageResponseSerializer())
                    let image = try #require(response.value, "\(path)")
                    #expect(image.format == format)
                    #expect(image.pixelWidth > 0 && image.pixelHeight > 0)
                    #expect(image.data == response.data)
                }
            }
        }
    }

    @Test(arguments: Peer.all)
    func htmlAsStringAndEmptyResponses(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let html = try await manager.response(method: .get, urlString: "html", serializer: StringResponseSerializer())
                #expect(html.value.contains("<html"))
                // 204 and HEAD: no object, no error.
                let noContent = try await manager.response(method: .get, urlString: "status/204", serializer: JSONResponseSerializer())
                #expect(noContent.value == nil)
                let head = try await manager.response(method: .head, urlString: "json", serializer: JSONResponseSerializer())
                #expect(head.value == nil)
                let empty = try await manager.response(method: .get, urlString: "status/204", serializer: DecodableResponseSerializer(Empty.self))
                #expect(empty.response.status.code == 204)
            }
        }
    }

    @Test(arguments: Peer.all)
    func compoundTakesTheFirstThatSucceeds(_ peer: Peer) async throws {
        try await peer.run { base in
            try await withManager(baseURL: base) { manager in
                let compound = CompoundResponseSerializer([ImageResponseSerializer(), JSONResponseSerializer()])
                let image = try await manager.response(method: .get, urlString: "image/png", serializer: compound)
                #expect(image.value is ResponseImage)
                let json = try await manager.response(method: .get, urlString: "json", serializer: compound)
                #expect(json.value.json != nil)
            }
        }
    }

    @Test func badStatusKeepsTheStatusErrorAndTheData() async throws {
        try await withTestServer { server in
            try await withManager(baseURL: server.baseURL) { manager in
                await #expect {
                    try await manager.get("status/404")
                } throws: { error in
                    let error = error as? CourierError
                    return error?.code == .unacceptableStatusCode && error?.response?.status.code == 404
                }
            }
        }
    }
}
