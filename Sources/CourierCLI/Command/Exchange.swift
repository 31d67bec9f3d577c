import Courier
import Foundation
import NIOCore

/// Sends the request as a stream and prints what ``OutputParts`` asks for.
struct Exchange {
    let command: RequestCommand
    let session: SessionManager
    let style: OutputStyle
    /// `--cookie-jar`, whose cookies the printed request shows.
    var jar: CookieJarFile?

    /// Bodies shown formatted are read whole first; past this size they are written as they come.
    static let formattingLimit = 16 << 20

    func run(_ built: BuiltRequest) async throws {
        let console = Console.standardOutput
        let printer = MessagePrinter(style: self.style, console: console, proxies: self.session.configuration.proxy)
        let parts = OutputParts(command: self.command, terminal: self.style.terminal)
        // The request is printed once its response head says which protocol carried it (the
        // request line names it); the cookies shown are those it was sent with.
        let shown = self.jar?.showing(built) ?? built
        // The engine adds `Accept-Encoding` only when it decompresses (not after `Accept-Encoding:`).
        let decompressing = self.session.configuration.decompression != .disabled

        let streamed: DataStreamResponse
        do {
            streamed = try await self.session.stream(built.request)
        } catch {
            if parts.requestHead || parts.requestBody {
                try await printer.printRequest(shown, head: parts.requestHead, body: parts.requestBody, decompressing: decompressing)
            }
            throw CLIFailure.request(error)
        }
        if parts.requestHead || parts.requestBody {
            // After redirects, the request that got this response (HTTPie shows the last exchange
            // too): its method, URL and body as the redirects left them.
            let current = streamed.task.currentRequest
            let redirected = current.url != built.request.url
            if redirected && parts.requestHead {
                Console.standardOutput.write(line: "* followed redirects from \(built.request.method.rawValue) \(built.request.url.absoluteString)")
            }
            let sent = redirected ? BuiltRequest(request: current, bodyKind: current.body.isEmpty ? .none : built.bodyKind, items: built.items) : shown
            try await printer.printRequest(
                sent, head: parts.requestHead, body: parts.requestBody, decompressing: decompressing,
                networkProtocolName: streamed.task.networkProtocolName, expectContinueThreshold: self.session.configuration.expectContinueThreshold)
        }
        if parts.responseHead { printer.printResponseHead(streamed.response, networkProtocolName: streamed.task.networkProtocolName) }
        var bodyEndsLine = true
        if parts.responseBody {
            bodyEndsLine = try await self.printBody(of: streamed, console: console)
            // Trailer fields come after the body, as on the wire; with the head, since they are
            // fields of the same kind.
            if parts.responseHead, let trailers = streamed.task.responseTrailers, !trailers.isEmpty {
                printer.printTrailers(trailers)
            }
        } else if parts.metadata {
            // The metrics are of the whole exchange: the body is read to its end, unprinted.
            try await Self.discardBody(of: streamed)
        } else {
            streamed.task.cancel()
        }
        // `--verbose`, `--print m`: the task's metrics once the body ended (a body left unread
        // ends the task by cancellation, whose metrics say little).
        if parts.metadata, let metrics = streamed.task.metrics {
            // After a body, on a terminal a blank line; piped, the body as it came, so its last
            // line ended here when it did not (the first metrics line was glued to it).
            if parts.responseBody, self.style.terminal || !bodyEndsLine { console.write("\n") }
            printer.printMetrics(metrics)
        }
        if self.command.checkStatus, let status = ExitStatus.checking(streamed.response.status, followingRedirects: self.command.follow) {
            if !self.style.terminal {
                Console.standardError.write(line: "courier: warning: HTTP \(streamed.response.status.code) \(streamed.response.status.reasonPhrase)")
            }
            throw status
        }
    }

    /// Reads the body to its end and drops it.
    private static func discardBody(of streamed: DataStreamResponse) async throws(CLIFailure) {
        var iterator = streamed.body.makeAsyncIterator()
        do {
            while try await iterator.next() != nil {}
        } catch {
            throw CLIFailure.request(error)
        }
    }

    /// Writes the body; returns whether what it wrote ended a line (or wrote nothing).
    private func printBody(of streamed: DataStreamResponse, console: Console) async throws -> Bool {
        let contentType = streamed.response.headerFields[.contentType]
        let renderer = BodyRenderer(style: self.style, console: console)
        var iterator = streamed.body.makeAsyncIterator()
        // Styled output needs the whole body; a terminal's binary check needs its start.
        let limit = self.style.format || self.style.colors ? Self.formattingLimit : 4096
        var head = Data()
        var ended = false
        do {
            while head.count < limit {
                guard let chunk = try await iterator.next() else {
                    ended = true
                    break
                }
                head.append(contentsOf: chunk.readableBytesView)
            }
            if ended {
                guard !head.isEmpty else { return true }
                renderer.render(head, contentType: contentType)
                if self.style.terminal && head.last != UInt8(ascii: "\n") {
                    console.write("\n")
                    return true
                }
                return self.style.terminal || head.last == UInt8(ascii: "\n")
            }
            // A long body is written as it comes, unformatted; a binary one not to a terminal.
            if self.style.terminal && BinaryCheck.isBinary(head) {
                console.write(BinaryCheck.note + "\n")
                streamed.task.cancel()
                return true
            }
            console.write(head)
            var last = head.last
            while let chunk = try await iterator.next() {
                console.write(chunk.readableBytesView)
                if let byte = chunk.readableBytesView.last { last = byte }
            }
            return last == nil || last == UInt8(ascii: "\n")
        } catch {
            throw CLIFailure.request(error)
        }
    }
}
