import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOCore
import Testing

/// nginx from Debian's packages on 127.0.0.1, started by `.ci/run` (see `.ci/nginx.sh`): a real
/// third-party server for large files, ranges and uploads.
enum Nginx {
    static var url: URL? { ProcessInfo.processInfo.environment["COURIER_NGINX_URL"].flatMap(URL.init(string:)) }
    static var root: URL? { ProcessInfo.processInfo.environment["COURIER_NGINX_ROOT"].map { URL(fileURLWithPath: $0) } }
    static var isAvailable: Bool { url != nil && root != nil }
    /// The Unix-domain socket the same server listens on.
    static var socket: String? { ProcessInfo.processInfo.environment["COURIER_NGINX_SOCKET"] }
}

@Suite(
    "Large transfers against nginx",
    .enabled(if: Nginx.isAvailable, "COURIER_NGINX_URL and COURIER_NGINX_ROOT are not set: .ci/run starts nginx and sets them"))
struct NginxTransferTests {
    private var large: URL { Nginx.root!.appendingPathComponent("files/large.bin") }

    private func crc(_ url: URL) throws -> CRC32 { CRC32.checksum(of: try Data(contentsOf: url)) }

    @Test func aLargeFileDownloadsWhole() async throws {
        try await withManager(baseURL: Nginx.url) { manager in
            let download = try await manager.download(Request(url: Nginx.url!.appendingPathComponent("files/large.bin")))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            #expect(download.response.status == .ok)
            #expect(try self.crc(download.fileURL) == self.crc(self.large))
        }
    }

    /// The same file through nginx's Unix-domain socket (``SessionConfiguration/unixSocketPaths``),
    /// the URL naming a host that exists nowhere else; then a small request on the same
    /// connection.
    @Test(.enabled(if: Nginx.socket != nil, "COURIER_NGINX_SOCKET is not set: .ci/run starts nginx and sets it"))
    func aLargeFileDownloadsWholeThroughNginxsUnixSocket() async throws {
        var configuration = SessionConfiguration.default
        configuration.unixSocketPaths = ["nginx.socket": Nginx.socket!]
        try await withManager(baseURL: URL(string: "http://nginx.socket/"), configuration: configuration) { manager in
            let download = try await manager.download(Request(url: URL(string: "http://nginx.socket/files/large.bin")!))
            defer { try? FileManager.default.removeItem(at: download.fileURL) }
            #expect(download.response.status == .ok)
            #expect(try self.crc(download.fileURL) == self.crc(self.large))
            manager.responseSerializer = HTTPResponseSerializer()
            let small = try await manager.get("files/small.txt")
            #expect(small.value as? Data == Data("a small file for the cache tests\n".utf8))
            #expect(small.metrics?.transactions.last?.isReusedConnection == true)
            #expect(small.metrics?.transactions.last?.remoteSocketAddress?.pathname == Nginx.socket)
        }
    }

    @Test func aCancelledDownloadResumesWithNginxsRangeSupport() async throws {
        try await withManager(baseURL: Nginx.url) { manager in
            let task = manager.downloadTask(with: Request(url: Nginx.url!.appendingPathComponent("slow/large.bin")), completionHandler: nil)
            task.resume()
            #expect(await eventually { task.countOfBytesReceived > 1 << 20 })
            var resumeData = try #require(await task.cancelProducingResumeData(), "nginx sends a strong ETag and Last-Modified")
            #expect(resumeData.entityTag != nil)
            // The rest from the same file at full speed: the validators still match.
            resumeData.url = Nginx.url!.appendingPathComponent("files/large.bin")
            let rest = try await manager.download(resumingFrom: resumeData)
            defer { try? FileManager.default.removeItem(at: rest.fileURL) }
            #expect(rest.response.status == .partialContent)
            #expect(try self.crc(rest.fileURL) == self.crc(self.large))
        }
    }

    @Test func aLargeFileUploadsWhole() async throws {
        try await withManager(baseURL: Nginx.url) { manager in
            let name = "upload-\(UUID().uuidString).bin"
            let request = Request(method: .put, url: Nginx.url!.appendingPathComponent("uploads/\(name)"), body: .file(self.large))
            let response = try await manager.response(for: request, serializer: HTTPResponseSerializer())
            #expect(response.response.status == .created)
            let stored = Nginx.root!.appendingPathComponent("uploads/\(name)")
            defer { try? FileManager.default.removeItem(at: stored) }
            #expect(try self.crc(stored) == self.crc(self.large))
        }
    }

    @Test func aStreamedMultipartBodyIsTheBodyWrittenToAFile() async throws {
        try await withScratchDirectory { folder in
            try await withManager(baseURL: Nginx.url) { manager in
                let name = "form-\(UUID().uuidString).bin"
                let target = Nginx.url!.appendingPathComponent("uploads/\(name)").absoluteString
                let serializer = HTTPRequestSerializer()
                let form = try serializer.multipartFormRequest(method: .put, urlString: target, parameters: ["title": "large"]) { form in
                    try form.appendPart(withFileURL: self.large, name: "file")
                }
                let bodyFile = folder.appendingPathComponent("body.bin")
                _ = try await serializer.request(withMultipartFormRequest: form, writingStreamContentsToFile: bodyFile)
                let response = try await manager.response(for: form, serializer: HTTPResponseSerializer())
                #expect(response.response.status == .created)
                let stored = Nginx.root!.appendingPathComponent("uploads/\(name)")
                defer { try? FileManager.default.removeItem(at: stored) }
                #expect(try self.crc(stored) == self.crc(bodyFile), "what went over the wire is what the file variant wrote")
            }
        }
    }
}
