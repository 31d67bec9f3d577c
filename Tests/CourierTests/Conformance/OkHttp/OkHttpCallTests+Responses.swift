// Ported from OkHttp's okhttp/src/jvmTest/kotlin/okhttp3/CallTest.kt
// (https://github.com/square/okhttp), Copyright (C) 2013 Square, Inc.,
// licensed under the Apache License, Version 2.0.

import Courier
import CourierTesting
import Foundation
import HTTPTypes
import Testing

/// `CallTest`'s cases of unusual and malformed response heads. A broken HTTP/1.1 head fails the
/// request with ``CourierError/Code/invalidResponse`` (OkHttp: an `IOException`, "Unexpected
/// status line: …").
extension OkHttpCallTests {
    // OkHttp: getReturns500
    @Test func getReturns500() async throws {
        try await Self.withMock { server, manager in
            server.enqueue(Self.mock(code: 500))
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.url("/")))
            #expect(response.response.status.code == 500)
            // Not successful: Courier's default validation refuses it.
            server.enqueue(Self.mock(code: 500))
            let error = await Self.failure { try await manager.response(for: Request(url: server.url("/")), serializer: DataResponseSerializer()) }
            #expect(error?.code == .unacceptableStatusCode)
        }
    }

    // OkHttp: responseHeaderNameWithSpacePermitted, responseHeaderNameWithTabPermitted
    // A response field whose name is no token (white space inside it, RFC 9110 5.1). OkHttp
    // expects the response, with the field under that name. Courier refuses the head, as Go's
    // client does ("malformed MIME header line"): llhttp reads no such line, and dropping it
    // alone could drop a line the server meant for framing (`Content-Length : 2`), so the body
    // after it could not be trusted. The error is typed and names the fault, and the connection
    // is not used again.
    @Test(arguments: ["a b", "a\tb", "Content-Length "])
    func responseHeaderNameWithWhiteSpaceIsRefused(_ name: String) async throws {
        try await Self.overHTTP1({ connection, _, _ in
            .respond(connection == 0 ? "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\(name): c\r\n\r\nok" : "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        }) { server, manager in
            let error = await Self.failure { try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)) }
            #expect(error?.code == .invalidResponse)
            #expect(error?.message.contains("not a token") == true, "\(String(describing: error))")
            let next = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(Self.text(next) == "ok")
            #expect(server.connectionCount == 2, "the refused head's connection is closed")
        }
    }

    // OkHttp: repeatedHeaderNames
    @Test func repeatedHeaderNames() async throws {
        try await Self.repeatedHeaderNames(http2: false)
    }

    // OkHttp: repeatedHeaderNames_HTTP_2
    @Test func repeatedHeaderNames_HTTP_2() async throws {
        try await Self.repeatedHeaderNames(http2: true)
    }

    static func repeatedHeaderNames(http2: Bool) async throws {
        try await Self.withMock(http2: http2) { server, manager in
            server.enqueue(Self.mock([("B", "123"), ("B", "234")]))
            var request = Request(url: server.url("/"))
            request.headerFields.append(HTTPField(name: HTTPField.Name("A")!, value: "345"))
            request.headerFields.append(HTTPField(name: HTTPField.Name("A")!, value: "456"))
            let response = try await manager.responseOfAnyStatus(for: request)
            #expect(response.response.status.code == 200)
            #expect(response.metrics?.transactions.last?.networkProtocolName == (http2 ? "h2" : "http/1.1"))
            #expect(response.response.headerFields[values: HTTPField.Name("B")!] == ["123", "234"])
            #expect(server.requests.first?.headerFields[values: HTTPField.Name("A")!] == ["345", "456"])
        }
    }

    /// A HEAD answered with `head`, then a GET answered `abc`, over one connection.
    static func headThenGet(_ head: String, _ check: (DataResponse<Data>) -> Void) async throws {
        try await Self.overHTTP1({ _, _, request in
            request.hasPrefix("HEAD ") ? .respond(head) : .respond("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
        }) { server, manager in
            let response = try await manager.responseOfAnyStatus(for: Request(method: .head, url: server.baseURL))
            #expect(response.response.status.code == 200)
            #expect(response.value.isEmpty)
            check(response)
            let get = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(get.response.status.code == 200)
            #expect(Self.text(get) == "abc")
            // exchangeIndex 0, then 1: the same connection.
            #expect(get.metrics?.transactions.last?.isReusedConnection == true)
            #expect(server.connectionCount == 1)
        }
    }

    // OkHttp: headResponseContentLengthIsIgnored
    @Test func headResponseContentLengthIsIgnored() async throws {
        try await Self.headThenGet("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n") { _ in }
    }

    // OkHttp: headResponseContentEncodingIsIgnored
    @Test func headResponseContentEncodingIsIgnored() async throws {
        try await Self.headThenGet("HTTP/1.1 200 OK\r\nContent-Encoding: chunked\r\n\r\n") { response in
            #expect(response.response.headerFields[.contentEncoding] == "chunked")
        }
    }

    /// The error a response head (and body) written as `bytes` fails the request with.
    static func failure(answering bytes: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> CourierError? {
        var error: CourierError?
        try await Self.overHTTP1({ _, _, _ in .respond(bytes) }) { server, manager in
            error = await Self.failure(sourceLocation: sourceLocation) { try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)) }
        }
        return error
    }

    // OkHttp: serverSendsInvalidResponseHeaders
    @Test func serverSendsInvalidResponseHeaders() async throws {
        let error = try await Self.failure(answering: "HTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(error?.code == .invalidResponse, "\(String(describing: error))")
    }

    // OkHttp: serverSendsInvalidCodeTooLarge
    @Test func serverSendsInvalidCodeTooLarge() async throws {
        let error = try await Self.failure(answering: "HTTP/1.1 2147483648 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(error?.code == .invalidResponse, "\(String(describing: error))")
    }

    // OkHttp: serverSendsInvalidCodeNotANumber
    @Test func serverSendsInvalidCodeNotANumber() async throws {
        let error = try await Self.failure(answering: "HTTP/1.1 00a OK\r\nContent-Length: 0\r\n\r\n")
        #expect(error?.code == .invalidResponse, "\(String(describing: error))")
    }

    // OkHttp: serverSendsUnnecessaryWhitespace
    @Test func serverSendsUnnecessaryWhitespace() async throws {
        let error = try await Self.failure(answering: " HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(error?.code == .invalidResponse, "\(String(describing: error))")
    }

    // OkHttp: http204WithBodyDisallowed
    // OkHttp expects a failure ("HTTP 204 had non-zero Content-Length: 39"). Courier takes the
    // 204 without content: a 204 ends with its head whatever its fields say (RFC 9112 6.3, as
    // curl reads it); the bytes after it are no response, and the connection is closed.
    @Test func http204WithBodyDisallowed() async throws {
        let body = "I'm not even supposed to be here today."
        try await Self.overHTTP1({ _, _, _ in .respond("HTTP/1.1 204 No Content\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)") }) {
            server, manager in
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(response.response.status.code == 204)
            #expect(response.value.isEmpty)
            // The bytes after the 204's head are no response: the connection is not used again.
            let next = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(next.response.status.code == 204)
            #expect(server.connectionCount == 2)
        }
    }

    // OkHttp: http205WithBodyDisallowed
    // OkHttp expects a failure ("HTTP 205 had non-zero Content-Length: 39"). Courier reads the
    // content its Content-Length frames (RFC 9112 6.3 makes no exception for 205; RFC 9110 15.3.6
    // forbids the server to send it but asks nothing of the client), as curl does.
    @Test func http205WithBodyDisallowed() async throws {
        let body = "I'm not even supposed to be here today."
        try await Self.overHTTP1({ _, _, _ in .respond("HTTP/1.1 205 Reset Content\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)") }) {
            server, manager in
            let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(response.response.status.code == 205)
            #expect(Self.text(response) == body)
        }
    }

    // OkHttp: responseHeaderParsingIsLenient
    // OkHttp expects the head taken, with the fields `a\tb: c\u{7f}d`, `: ef` and `🍩: ☕️`.
    // Courier refuses it (invalidResponse): its HTTP/1.1 decoder (llhttp, strict) holds field
    // names to RFC 9110 5.1's token and values to 5.5's field-vchar, as Go's client does for names.
    @Test func responseHeaderParsingIsLenient() async throws {
        let head: [UInt8] = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\na\tb: c\u{7f}d\r\n: ef\r\n\u{1F369}: \u{2615}\u{FE0F}\r\n\r\n".utf8)
        try await Self.overHTTP1({ _, _, _ in .respondBytes(head) }) { server, manager in
            let error = await Self.failure { try await manager.responseOfAnyStatus(for: Request(url: server.baseURL)) }
            #expect(error?.code == .invalidResponse, "\(String(describing: error))")
        }
    }

    /// `responseHeaderParsingIsLenient`'s lines one by one: which of them Courier refuses. A name
    /// that is not a token (a tab in it, empty, UTF-8) and a value with DEL (a CTL, not a
    /// field-vchar) are refused; a value in UTF-8 (obs-text) is taken.
    @Test(arguments: [
        ("a\tb: c", false), ("x: c\u{7f}d", false), (": ef", false), ("\u{1F369}: v", false), ("x: \u{2615}\u{FE0F}", true),
    ])
    func responseHeaderParsingIsLenient_line(line: String, accepted: Bool) async throws {
        let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\(line)\r\n\r\n".utf8)
        try await Self.overHTTP1({ _, _, _ in .respondBytes(head) }) { server, manager in
            do {
                let response = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
                #expect(accepted, "accepted: \(response.response.headerFields)")
            } catch let error as CourierError {
                #expect(!accepted && error.code == .invalidResponse, "\(error)")
            }
        }
    }

    // OkHttp: serverHalfClosingBeforeResponse (OkHttp's client with retryOnConnectionFailure
    // off; Courier resends no POST lost on a kept-alive connection by default, and fails it with
    // connectionClosed)
    @Test func serverHalfClosingBeforeResponse() async throws {
        // The first connection answers its first request, then shuts its output down (a FIN,
        // still reading) instead of answering the second.
        try await Self.overHTTP1({ connection, request, _ in
            connection == 0 && request == 1 ? .shutdownOutput : .respond("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
        }) { server, manager in
            let first = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(Self.text(first) == "abc")
            let error = await Self.failure { try await manager.responseOfAnyStatus(for: Self.post(server.baseURL, "body!")) }
            #expect(error?.code == .connectionClosed, "\(String(describing: error))")
            let third = try await manager.responseOfAnyStatus(for: Request(url: server.baseURL))
            #expect(Self.text(third) == "abc")
            #expect(third.metrics?.transactions.last?.isReusedConnection == false)
            #expect(server.connectionCount == 2)
        }
    }
}
