import Foundation
import NIOCore
import NIOHTTP1

/// `/courier/sse`: a finite stream of numbered server-sent events (see
/// ``TestServer/ServerSentEvent``), paced, resumable through `Last-Event-ID`, and able to end the
/// connection after a few events so that a client must reconnect.
enum CourierEventStreamRoute {
    /// The most events one stream may hold.
    static let maximumCount = 10_000

    static func reply(_ request: IncomingRequest) -> Reply {
        let method = request.head.method
        guard method == .GET || method == .HEAD else { return .methodNotAllowed(["GET", "HEAD"]) }
        let options: Options
        do {
            options = try Options.parse(request)
        } catch {
            return .badRequest(error.description)
        }
        // Resume after the last event the client saw; none left means "stop reconnecting" (204).
        let lastSeen = request.header("Last-Event-ID").flatMap { HTTPBinRoutes.integer($0.trimmingCharacters(in: .whitespaces)[...]) }
        if let lastSeen, lastSeen >= options.count {
            return .complete(.noContent, [:], ByteBuffer())
        }
        let first = (lastSeen ?? 0) + 1
        let last = min(options.count, options.limit.map { first + $0 - 1 } ?? options.count)

        var chunks = first <= last ? (first...last).map { number in
            ByteBuffer(string: TestServer.ServerSentEvent.courier(number, of: options.count, event: options.event).wireFormat)
        } : []
        // The prelude goes with the first event, so that events come `interval` apart from the start.
        var prelude = ByteBuffer(string: TestServer.ServerSentEvent.courierPrelude(retry: options.retry))
        if !chunks.isEmpty { prelude.writeBuffer(&chunks[0]) }
        chunks = [prelude] + chunks.dropFirst()

        let headers: HTTPHeaders = ["Content-Type": "text/event-stream", "Cache-Control": "no-cache"]
        return .paced(.ok, headers, chunks: chunks, interval: options.interval, ending: options.ending)
    }

    /// The query options.
    struct Options {
        /// `count`: the stream's events, numbered from 1 (3 by default).
        var count = 3
        /// `interval`: seconds between events (0 by default, at most 10).
        var interval = TimeAmount.zero
        /// `retry`: milliseconds for the `retry:` field, or nil for none.
        var retry: Int?
        /// `event`: the events' type (`tick` by default).
        var event = "tick"
        /// At most this many events in this response (`close-after` or `drop-after`).
        var limit: Int?
        /// How this response ends.
        var ending = ReplyEnding.complete

        static func parse(_ request: IncomingRequest) throws(CourierTestingError) -> Options {
            func number(_ name: String) throws(CourierTestingError) -> Int? {
                guard let value = request.queryValue(name) else { return nil }
                guard let number = HTTPBinRoutes.integer(value[...]) else { throw CourierTestingError("\(name) must be a whole number") }
                return number
            }
            var options = Options()
            if let count = try number("count") { options.count = min(count, CourierEventStreamRoute.maximumCount) }
            options.retry = try number("retry")
            switch (try number("close-after"), try number("drop-after")) {
            case (nil, nil): break
            case (let limit?, nil): (options.limit, options.ending) = (limit, .completeThenClose)
            case (nil, let limit?): (options.limit, options.ending) = (limit, .drop)
            case (_?, _?): throw CourierTestingError("give close-after or drop-after, not both")
            }
            if let value = request.queryValue("interval") {
                guard let interval = HTTPBinRoutes.seconds(value) else { throw CourierTestingError("interval must be seconds") }
                options.interval = interval
            }
            if let event = request.queryValue("event") {
                guard !event.isEmpty, !event.contains(where: \.isNewline) else { throw CourierTestingError("event must be one line") }
                options.event = event
            }
            return options
        }
    }
}
