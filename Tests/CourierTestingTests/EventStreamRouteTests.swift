import AsyncHTTPClient
import CourierTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// A minimal `text/event-stream` parser (the HTML standard's rules, `\n` line ends only).
struct EventStreamParser {
    var events: [TestServer.ServerSentEvent] = []
    var retry: Int?
    var comments: [String] = []
    var lastEventID: String?

    init(_ text: String) {
        var id: String?
        var event: String?
        var data: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty {
                if !data.isEmpty {
                    self.events.append(TestServer.ServerSentEvent(id: id, event: event, data: data.joined(separator: "\n")))
                }
                (event, data) = (nil, [])
                continue
            }
            if line.hasPrefix(":") {
                self.comments.append(String(line.dropFirst()))
                continue
            }
            let colon = line.firstIndex(of: ":") ?? line.endIndex
            let field = line[..<colon]
            var value = colon < line.endIndex ? line[line.index(after: colon)...] : ""
            if value.hasPrefix(" ") { value = value.dropFirst() }
            switch field {
            case "id": id = String(value); self.lastEventID = id
            case "event": event = String(value)
            case "data": data.append(String(value))
            case "retry": self.retry = Int(value)
            default: break
            }
        }
    }
}

@Suite struct EventStreamRouteTests {
    @Test(arguments: [false, true])
    func exactFormat(tls: Bool) async throws {
        try await withServer(tls ? .https() : TestServer.Configuration()) { server, client in
            let received = try await client.receive(server.url("/courier/sse?count=2"))
            #expect(received.error == nil)
            #expect(received.response.status == .ok)
            #expect(received.header("Content-Type") == "text/event-stream")
            #expect(received.header("Cache-Control") == "no-cache")
            #expect(received.header("Content-Length") == nil)
            #expect(
                received.text == """
                    : courier event stream

                    id: 1
                    event: tick
                    data: event 1
                    data: of 2

                    id: 2
                    event: tick
                    data: event 2
                    data: of 2


                    """)
            let parsed = EventStreamParser(received.text)
            #expect(parsed.events == [.courier(1, of: 2), .courier(2, of: 2)])
            #expect(parsed.events.first?.data == "event 1\nof 2")
            #expect(parsed.comments == [" courier event stream"])
            #expect(parsed.retry == nil)
        }
    }

    @Test func chunkedOverHTTP1() async throws {
        try await withServer(client: ClientOptions(http1Only: true)) { server, client in
            let received = try await client.receive(server.url("/courier/sse?count=1"))
            #expect(received.header("Transfer-Encoding") == "chunked")
            #expect(received.text == TestServer.ServerSentEvent.courierPrelude() + TestServer.ServerSentEvent.courier(1, of: 1).wireFormat)
        }
    }

    @Test func retryEventNameAndInterval() async throws {
        try await withServer { server, client in
            let received = try await client.receive(server.url("/courier/sse?count=3&retry=1500&event=update&interval=0.02"))
            #expect(received.text.hasPrefix(": courier event stream\nretry: 1500\n\nid: 1\nevent: update\ndata: event 1\n"))
            let parsed = EventStreamParser(received.text)
            #expect(parsed.retry == 1500)
            #expect(parsed.events == (1...3).map { .courier($0, of: 3, event: "update") })
        }
    }

    /// `close-after` ends each response after a few events and closes the connection; the client
    /// reconnects with `Last-Event-ID` until the server answers 204.
    @Test func closeAfterAndLastEventIDResume() async throws {
        try await withServer(client: ClientOptions(http1Only: true)) { server, client in
            var events: [TestServer.ServerSentEvent] = []
            var lastEventID: String?
            var responses = 0
            while responses < 10 {
                let headers: HTTPHeaders = lastEventID.map { ["Last-Event-ID": $0] } ?? [:]
                let received = try await client.receive(server.url("/courier/sse?count=5&close-after=2"), headers: headers)
                responses += 1
                #expect(received.error == nil)
                if received.response.status == .noContent { break }
                #expect(received.header("Connection") == "close")
                let parsed = EventStreamParser(received.text)
                #expect(parsed.events.count <= 2)
                events += parsed.events
                lastEventID = parsed.lastEventID ?? lastEventID
            }
            #expect(events == (1...5).map { .courier($0, of: 5) })
            #expect(responses == 4)  // 1-2, 3-4, 5, then 204
            #expect(server.connectionCount == 4)
        }
    }

    @Test func lastEventIDSkipsWhatWasSeen() async throws {
        try await withServer { server, client in
            let received = try await client.receive(server.url("/courier/sse?count=4"), headers: ["Last-Event-ID": "2"])
            #expect(EventStreamParser(received.text).events == [.courier(3, of: 4), .courier(4, of: 4)])
            #expect(received.text.hasPrefix(": courier event stream\n\nid: 3\n"))
            let done = try await client.fetch(server.url("/courier/sse?count=4"), headers: ["Last-Event-ID": "4"])
            #expect(done.status == 204)
            // An id that is not a number starts over.
            let other = try await client.receive(server.url("/courier/sse?count=1"), headers: ["Last-Event-ID": "x"])
            #expect(EventStreamParser(other.text).events == [.courier(1, of: 1)])
        }
    }

    /// On the wire: two whole events, no last chunk, then the connection closes.
    @Test func dropAfterCutsTheStream() async throws {
        try await withServer { server, _ in
            let response = try await rawExchange(port: server.port, "GET /courier/sse?count=5&drop-after=2 HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(response.statusLine.hasPrefix("HTTP/1.1 200 "))
            #expect(response.header("Transfer-Encoding") == "chunked")
            let (body, complete) = response.dechunked()
            #expect(!complete)
            let text = String(decoding: body, as: UTF8.self)
            #expect(text == TestServer.ServerSentEvent.courierPrelude() + [TestServer.ServerSentEvent.courier(1, of: 5), .courier(2, of: 5)].map(\.wireFormat).joined())
        }
    }

    /// Through a client over HTTP/2: the stream fails after the events sent.
    @Test func dropAfterFailsTheStreamOverHTTP2() async throws {
        try await withServer(.https()) { server, client in
            let received = try await client.receive(server.url("/courier/sse?count=5&drop-after=2"))
            #expect(received.error != nil)
            let events = EventStreamParser(received.text).events
            #expect(events.count <= 2)
            #expect(events == Array([TestServer.ServerSentEvent.courier(1, of: 5), .courier(2, of: 5)].prefix(events.count)))
        }
    }

    @Test func wrongMethodAndBadOptions() async throws {
        try await withServer { server, client in
            #expect(try await client.fetch(server.url("/courier/sse"), method: .POST, body: [1]).status == 405)
            for query in ["count=x", "retry=-1", "interval=abc", "close-after=1&drop-after=1", "event="] {
                #expect(try await client.fetch(server.url("/courier/sse?\(query)")).status == 400, "\(query)")
            }
            let head = try await client.fetch(server.url("/courier/sse"), method: .HEAD)
            #expect(head.status == 200)
            #expect(head.bytes.isEmpty)
        }
    }
}
