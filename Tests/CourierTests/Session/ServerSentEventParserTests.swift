import CourierTesting
@testable import Courier
import NIOCore
import Testing

@Suite("Server-sent event parsing")
struct ServerSentEventParserTests {
    /// Feeds `text` in pieces of `size` bytes and returns every event.
    private func parse(_ text: String, pieces size: Int = .max) -> [ServerSentEvent] {
        var parser = ServerSentEventParser()
        let bytes = Array(text.utf8)
        var events: [ServerSentEvent] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + max(1, min(size, bytes.count)))
            events += parser.feed(ByteBuffer(bytes: bytes[start..<end]))
            start = end
        }
        return events
    }

    @Test(arguments: [1, 2, 3, 7, Int.max])
    func fieldsCommentsAndLineEndingsWhateverTheChunking(size: Int) {
        let text = "\u{FEFF}: a comment\r\nevent: update\r\ndata: first line\rdata:second line\nid: 7\nretry: 1500\n\ndata: plain\n\n"
        let events = self.parse(text, pieces: size)
        #expect(events == [
            ServerSentEvent(event: "update", data: "first line\nsecond line", id: "7", retry: .milliseconds(1500)),
            ServerSentEvent(event: "message", data: "plain", id: "7", retry: .milliseconds(1500)),
        ])
    }

    @Test func oddFieldsAreHandledAsTheStandardSays() {
        let events = self.parse("data\n\nretry: soon\ndata: x\n\nid: a\u{0}b\ndata: y\n\nunknown: z\ndata:  two spaces\n\n")
        #expect(events.map(\.data) == ["", "x", "y", " two spaces"])
        #expect(events.allSatisfy { $0.retry == nil }, "a retry that is not all digits is ignored")
        #expect(events.allSatisfy { $0.id == nil }, "an id holding NUL is ignored")
    }

    @Test func anEventWithoutDataOrUnterminatedIsNotDispatched() {
        #expect(self.parse("event: empty\n\n").isEmpty)
        #expect(self.parse("data: never finished\n").isEmpty)
    }

    @Test func theLastEventIDOutlivesItsEventAndCanBeCleared() {
        let events = self.parse("id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n")
        #expect(events.map(\.id) == ["1", "1", nil])
    }

    /// The wait before a reconnection: a server's `retry:` is raised to `minimumRetryDelay` (a
    /// `retry: 0` had the stream reconnect in a tight loop) and cut to `maximumRetryDelay`; the
    /// caller's `retryDelay`, used until the server sends `retry:`, is only cut.
    @Test func aServersRetryIsKeptBetweenTheMinimumAndTheMaximum() {
        typealias Options = ServerSentEventStream.Options
        func delay(_ retry: Duration?, _ options: Options) -> Duration {
            ServerSentEventStream.AsyncIterator.delay(retry: retry, options: options)
        }
        let options = Options(retryDelay: .milliseconds(1), maximumRetryDelay: .seconds(60))
        #expect(options.minimumRetryDelay == .milliseconds(500))
        #expect(delay(.zero, options) == .milliseconds(500))
        #expect(delay(.milliseconds(499), options) == .milliseconds(500))
        #expect(delay(.milliseconds(1500), options) == .milliseconds(1500))
        #expect(delay(.seconds(86400), options) == .seconds(60))
        #expect(delay(nil, options) == .milliseconds(1), "the caller's own delay is not raised")
        #expect(delay(nil, Options(retryDelay: .seconds(600))) == .seconds(60))
        #expect(delay(.zero, Options(minimumRetryDelay: .zero)) == .zero)
        #expect(delay(.zero, Options(maximumRetryDelay: .milliseconds(20))) == .milliseconds(20), "the maximum wins")
    }

    /// The standard's "last event ID buffer": an `id` becomes the last event ID (sent back as
    /// `Last-Event-ID`) when a blank line ends its event, one without data too. An `id` whose
    /// event the connection cut off is forgotten with the event, so that the server sends that
    /// event again; the next connection's events start from the last ID dispatched.
    @Test func anIDBecomesTheLastEventIDOnlyWhenItsEventEnds() {
        var parser = ServerSentEventParser()
        let first = parser.feed(ByteBuffer(string: "id: 1\ndata: a\n\nid: 2\ndata: b\n"))
        #expect(first.map(\.id) == ["1"])
        #expect(parser.lastEventID == "1")
        parser.reset()
        #expect(parser.lastEventID == "1")
        #expect(parser.feed(ByteBuffer(string: "data: c\n\n")).map(\.id) == ["1"])
        #expect(parser.feed(ByteBuffer(string: "id: 3\n\n")).isEmpty)
        #expect(parser.lastEventID == "3", "an event without data still sets the last event ID")
    }

    /// An event may hold `maximumEventSize` bytes before its blank line, counted over its data
    /// lines and the line under way: one more and the parser stops, having returned the events
    /// before it (in the same chunk too). A reset (a new connection) starts again.
    @Test(arguments: [1, 5, Int.max])
    func anEventThatRunsOverTheLimitStopsTheParser(size: Int) {
        func feed(_ parser: inout ServerSentEventParser, _ text: String) -> [ServerSentEvent] {
            let bytes = Array(text.utf8)
            var events: [ServerSentEvent] = []
            for start in stride(from: 0, to: bytes.count, by: min(size, bytes.count)) {
                events += parser.feed(ByteBuffer(bytes: bytes[start..<min(bytes.count, start + size)]))
            }
            return events
        }
        // Within the limit: "data: " is not held, only the value (and the line while it is read).
        var parser = ServerSentEventParser(maximumEventSize: 16)
        #expect(feed(&parser, "data: 0123456789\n\n") == [ServerSentEvent(data: "0123456789")])
        #expect(parser.overflow == nil)
        // Data lines that never end their event.
        parser = ServerSentEventParser(maximumEventSize: 16)
        #expect(feed(&parser, "data: first\n\ndata: 0123456\ndata: 789abcdef\ndata: late\n\n") == [ServerSentEvent(data: "first")])
        #expect(parser.overflow == 17)
        #expect(feed(&parser, "data: more\n\n").isEmpty, "nothing more is parsed")
        // One line that never ends.
        parser = ServerSentEventParser(maximumEventSize: 16)
        #expect(feed(&parser, "data: x\n\n: " + String(repeating: "-", count: 40)) == [ServerSentEvent(data: "x")])
        #expect(parser.overflow == 17)
        parser.reset()
        #expect(parser.overflow == nil)
        #expect(feed(&parser, "data: again\n\n") == [ServerSentEvent(data: "again")])
    }

    /// Whatever a server sends (fields known and not, line breaks of every kind, a byte-order mark
    /// or its start, NULs, comments, events over the bound), the events, the last ID, the retry
    /// and whether the parser stopped are the same wherever the chunks are cut.
    @Test func anyStreamIsParsedTheSameWhereverCut() {
        let pieces = [
            "data", "event", "id", "retry", "dat", ":", ": ", " ", "\r", "\n", "\r\n", "\n\n", "x", "12", "\u{0}", "\u{FEFF}", "é",
        ].map { Array($0.utf8) } + [[0xEF], [0xEF, 0xBB], [0xFF]]
        struct Parsed: Equatable {
            var events: [ServerSentEvent]
            var lastEventID: String?
            var retry: Duration?
            var overflow: Int?
        }
        func parse(_ bytes: [UInt8], cuts: [Int], limit: Int) -> Parsed {
            var parser = ServerSentEventParser(maximumEventSize: limit)
            let events = Cuts.pieces(of: bytes, at: cuts).flatMap { parser.feed(ByteBuffer(bytes: $0)) }
            return Parsed(events: events, lastEventID: parser.lastEventID, retry: parser.retry, overflow: parser.overflow)
        }
        var random = SeededGenerator(seed: 0x5851_F42D_4C95_7F2D)
        for round in 0..<1_500 {
            let bytes = (0..<Int.random(in: 1...40, using: &random)).flatMap { _ in pieces.randomElement(using: &random)! }
            let limit = Bool.random(using: &random) ? 24 : 1 << 20
            let whole = parse(bytes, cuts: [], limit: limit)
            for cuts in Cuts.toTry(bytes.count, randomSets: 4, most: 4, using: &random) {
                let result = parse(bytes, cuts: cuts, limit: limit)
                #expect(result == whole, "round \(round), cuts \(Cuts.describe(cuts, of: bytes.count)): \(String(decoding: bytes, as: UTF8.self).debugDescription)")
                if result != whole { return }
            }
        }
    }

    @Test func aCRAtTheEndOfAChunkAndAnLFAtTheStartOfTheNextAreOneEnding() {
        var parser = ServerSentEventParser()
        #expect(parser.feed(ByteBuffer(string: "data: a\r")).isEmpty)
        #expect(parser.feed(ByteBuffer(string: "\ndata: b\r\n\r\n")) == [ServerSentEvent(data: "a\nb")])
    }
}
