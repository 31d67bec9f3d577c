import AsyncHTTPClient
import Courier
import CourierOpenAPI
import Dispatch
import Foundation
import NIOCore
import NIOFileSystem
import NIOHTTP1
import OpenAPIRuntime

#if canImport(Glibc)
import Glibc
#endif

/// One measured transfer in a process of its own, so that its peak memory is its own:
/// `courier-bench transfer-child <download|upload> <client> <url> <file> <bytes>` prints one line
/// of JSON: seconds, bytes, peak RSS.
enum TransferChild {
    struct Measurement: Codable {
        var seconds: Double
        var bytes: Int64
        var peakRSSKiB: Int64
        /// Resident memory before the transfer began and after it ended with its client released.
        var startRSSMiB: Double
        var endRSSMiB: Double
    }

    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.count == 5, let url = URL(string: arguments[2]), let bytes = Int64(arguments[4]) else {
            FileHandle.standardError.write(Data("usage: courier-bench transfer-child <kind> <client> <url> <file> <bytes>\n".utf8))
            return 2
        }
        let file = URL(fileURLWithPath: arguments[3])
        let startRSS = SoakBench.residentMiB()
        let started = ContinuousClock.now
        do {
            let moved: Int64
            switch (arguments[0], arguments[1]) {
            case ("download", "courier"), ("floor", "courier"): moved = try await Self.courierDownload(url)
            case ("download", "ahc"), ("floor", "ahc"): moved = try await Self.ahcDownload(url)
            case ("upload", "courier"): moved = try await Self.courierUpload(file, to: url)
            case ("upload", "ahc"), ("multipart", "ahc"): moved = try await Self.ahcUpload(file, to: url)
            case ("multipart", "courier"): moved = try await Self.courierMultipartUpload(file, to: url)
            case ("stream", "courier"): moved = try await Self.courierStream(url)
            case ("stream", "openapi"): moved = try await Self.openAPIStream(url)
            default:
                FileHandle.standardError.write(Data("courier-bench: no \(arguments[1]) client for \(arguments[0])\n".utf8))
                return 2
            }
            let elapsed = ContinuousClock.now - started
            guard moved == bytes else {
                FileHandle.standardError.write(Data("courier-bench: moved \(moved) bytes, expected \(bytes)\n".utf8))
                return 3
            }
            var usage = rusage()
            getrusage(RUSAGE_SELF.rawValue, &usage)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let measurement = Measurement(
                seconds: seconds, bytes: moved, peakRSSKiB: Int64(usage.ru_maxrss), startRSSMiB: startRSS, endRSSMiB: SoakBench.residentMiB())
            print(String(decoding: try JSONEncoder().encode(measurement), as: UTF8.self))
            return 0
        } catch {
            FileHandle.standardError.write(Data("courier-bench: \(error)\n".utf8))
            return 1
        }
    }

    // MARK: Downloads

    /// Courier's download task: the body to a temporary file, written off the event loops.
    private static func courierDownload(_ url: URL) async throws -> Int64 {
        let manager = Self.courierManager()
        manager.completionQueue = DispatchQueue(label: "courier-bench.completion")
        let download: DownloadResponse
        do {
            download = try await manager.download(Request(url: url))
        } catch {
            await manager.invalidate(cancelingTasks: true)
            throw error
        }
        await manager.invalidate(cancelingTasks: false)
        defer { try? FileManager.default.removeItem(at: download.fileURL) }
        let size = try FileManager.default.attributesOfItem(atPath: download.fileURL.path)[.size] as? NSNumber
        return size?.int64Value ?? -1
    }

    /// Courier's streamed body (`SessionManager.stream`), each chunk counted and dropped.
    private static func courierStream(_ url: URL) async throws -> Int64 {
        let manager = Self.courierManager()
        do {
            let stream = try await manager.stream(Request(url: url))
            var total: Int64 = 0
            for try await chunk in stream.body { total += Int64(chunk.readableBytes) }
            await manager.invalidate(cancelingTasks: false)
            return total
        } catch {
            await manager.invalidate(cancelingTasks: true)
            throw error
        }
    }

    /// The generated OpenAPI client's `getBlob` on `CourierTransport` (issue 31), each chunk of its
    /// `HTTPBody` counted and dropped: against ``courierStream(_:)``, what the transport and the
    /// runtime add to a streamed download.
    private static func openAPIStream(_ url: URL) async throws -> Int64 {
        let manager = Self.courierManager()
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        components.percentEncodedPath = ""
        let client = Client(serverURL: components.url!, transport: CourierTransport(manager: manager))
        do {
            let body = try await client.getBlob().ok.body.any
            var total: Int64 = 0
            for try await chunk in body { total += Int64(chunk.count) }
            await manager.invalidate(cancelingTasks: false)
            return total
        } catch {
            await manager.invalidate(cancelingTasks: true)
            throw error
        }
    }

    /// A manager that also trusts CourierTesting's root (for `--tls`).
    private static func courierManager() -> SessionManager {
        SessionManager(configuration: .default, securityPolicy: CourierSetup.trustingTestRoot)
    }

    /// An AsyncHTTPClient that trusts CourierTesting's root (for `--tls`).
    private static func ahcClient() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = AHCClient.trustingTestRoot
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// AsyncHTTPClient writing each chunk with NIOFileSystem's buffered writer, as the issue's
    /// baseline does.
    private static func ahcDownload(_ url: URL) async throws -> Int64 {
        let client = Self.ahcClient()
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("courier-bench-ahc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: target) }
        do {
            let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(600))
            let written = try await FileSystem.shared.withFileHandle(
                forWritingAt: FilePath(target.path), options: .newFile(replaceExisting: true)
            ) { handle in
                var writer = handle.bufferedWriter()
                var total: Int64 = 0
                for try await chunk in response.body {
                    total += try await writer.write(contentsOf: chunk)
                }
                try await writer.flush()
                return total
            }
            try await client.shutdown()
            return written
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    // MARK: Uploads

    /// Courier's upload task from a file (read in chunks as they are sent).
    private static func courierUpload(_ file: URL, to url: URL) async throws -> Int64 {
        let manager = Self.courierManager()
        manager.completionQueue = DispatchQueue(label: "courier-bench.completion")
        defer { manager.invalidate(cancelingTasks: true) }
        let request = Request(method: .post, url: url, body: .file(file))
        let response = try await manager.response(for: request, serializer: HTTPResponseSerializer())
        guard response.response.status.code == 204 else { throw CourierError(.invalidResponse, "status \(response.response.status)") }
        return request.body.knownLength ?? -1
    }

    /// Courier's multipart form with the file as its one part, streamed part by part (the file is
    /// opened when its turn comes and read in chunks). The bytes counted are the file's.
    private static func courierMultipartUpload(_ file: URL, to url: URL) async throws -> Int64 {
        let manager = Self.courierManager()
        manager.completionQueue = DispatchQueue(label: "courier-bench.completion")
        defer { manager.invalidate(cancelingTasks: true) }
        let request = try HTTPRequestSerializer().multipartFormRequest(method: .post, urlString: url.absoluteString) { form in
            try form.appendPart(withFileURL: file, name: "file")
        }
        let response = try await manager.response(for: request, serializer: HTTPResponseSerializer())
        guard response.response.status.code == 204 else { throw CourierError(.invalidResponse, "status \(response.response.status)") }
        let size = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber
        return size?.int64Value ?? -1
    }

    /// AsyncHTTPClient streaming the same file through NIOFileSystem's chunked reader. `execute`
    /// returns at the response head, and nginx answers an upload before it has read it: the
    /// transfer counts as done once the last chunk was taken and the response body has ended.
    private static func ahcUpload(_ file: URL, to url: URL) async throws -> Int64 {
        let client = Self.ahcClient()
        do {
            let size = try await FileSystem.shared.withFileHandle(forReadingAt: FilePath(file.path)) { handle -> Int64 in
                let size = try await handle.info().size
                let (drained, drainedContinuation) = AsyncStream.makeStream(of: Void.self)
                var request = HTTPClientRequest(url: url.absoluteString)
                request.method = .POST
                request.body = .stream(ReportingEnd(base: handle.readChunks(), end: drainedContinuation), length: .known(size))
                let response = try await client.execute(request, timeout: .seconds(600))
                for try await _ in response.body {}
                for await _ in drained {}
                guard response.status.code == 204 else { throw CourierError(.invalidResponse, "status \(response.status)") }
                return size
            }
            try await client.shutdown()
            return size
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}

/// A sequence that finishes `end` once its base has no more elements.
struct ReportingEnd<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == ByteBuffer {
    typealias Element = ByteBuffer
    let base: Base
    let end: AsyncStream<Void>.Continuation

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: Base.AsyncIterator
        let end: AsyncStream<Void>.Continuation

        mutating func next() async throws -> ByteBuffer? {
            let element = try await self.base.next()
            if element == nil { self.end.finish() }
            return element
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: self.base.makeAsyncIterator(), end: self.end)
    }
}
