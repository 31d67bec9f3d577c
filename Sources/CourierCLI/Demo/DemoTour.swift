import Courier
import CourierTesting
import Foundation
import NIOCore

/// The demo's steps, each a few lines of the library's API and a printout of what went and came.
struct DemoTour {
    let http: TestServer
    let https: TestServer
    let style: OutputStyle
    let downloadSize: Int
    let downloadRate: Int
    let out = Console.standardOutput

    func run() async throws {
        self.out.write(line: self.style.paint("Courier demo", .green) + ": every request goes to a TestServer in this process, on loopback.")
        self.out.write(line: "  HTTP  \(self.http.baseURL.absoluteString)")
        self.out.write(line: "  HTTPS \(self.https.baseURL.absoluteString) (Courier's test certificate)\n")

        let manager = HTTPSessionManager(baseURL: self.http.baseURL)
        manager.completionQueue = .global()
        do {
            try await self.getWithParameters(manager)
            try await self.postForm(manager)
            try await self.postJSON()
            try await self.multipartUpload(manager)
            try await self.download(manager)
            try await self.pinnedHTTPS()
            await self.reachability()
        } catch {
            await manager.invalidate(cancelingTasks: true)
            if let error = error as? CourierError { throw CLIFailure.request(error) }
            throw error
        }
        await manager.invalidate(cancelingTasks: true)
        self.out.write(line: "\nThe same from the command line, against any server:")
        self.out.write(line: "  courier :8080/get q==courier          courier -f POST :8080/post name=Ada")
        self.out.write(line: "  courier :8080/post name=Ada tags:='[\"a\"]'   courier -d -o file.bin :8080/bytes/1024")
    }

    // MARK: Steps

    private func getWithParameters(_ manager: HTTPSessionManager) async throws(CourierError) {
        self.title(1, "GET with parameters, the JSON response serialized", "HTTPSessionManager.get(_:parameters:)")
        let response = try await manager.get("get", parameters: ["q": "courier", "lang": "swift"])
        self.sent(response.request)
        self.received(response.response, detail: "args " + Self.member("args", of: response.data))
    }

    private func postForm(_ manager: HTTPSessionManager) async throws(CourierError) {
        self.title(2, "POST a form", "HTTPRequestSerializer: application/x-www-form-urlencoded")
        let response = try await manager.post("post", parameters: ["name": "Ada", "city": "Zürich"])
        self.sent(response.request)
        self.received(response.response, detail: "form " + Self.member("form", of: response.data))
    }

    private func postJSON() async throws(CourierError) {
        self.title(3, "POST JSON", "JSONRequestSerializer")
        let manager = HTTPSessionManager(baseURL: self.http.baseURL)
        manager.completionQueue = .global()
        var serializer = JSONRequestSerializer()
        serializer.writingOptions = [.sortedKeys]
        manager.requestSerializer = serializer
        defer { manager.invalidate(cancelingTasks: true) }
        let response = try await manager.post("post", parameters: ["name": "Ada", "languages": ["Swift", "C"]])
        self.sent(response.request)
        self.received(response.response, detail: "json " + Self.member("json", of: response.data))
    }

    private func multipartUpload(_ manager: HTTPSessionManager) async throws(CourierError) {
        self.title(4, "Multipart upload with progress", "HTTPSessionManager.post(_:parameters:progress:constructingBodyWith:)")
        let file = Data((0..<(512 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let marks = ProgressMarks()
        let response = try await manager.post("post", parameters: ["title": "report"], progress: { progress in
            marks.record(progress.fractionCompleted)
        }) { form in
            form.appendPart(withFileData: file, name: "report", fileName: "report.bin", mimeType: "application/octet-stream")
        }
        self.sent(response.request, body: false)
        self.out.write(line: "    upload progress: " + marks.summary)
        let files = Self.object(response.data)?["files"] as? [String: Any]
        let echoed = (files?["report"] as? String)?.utf8.count ?? 0
        self.received(response.response, detail: "form \(Self.member("form", of: response.data)), file part of \(ByteCount.format(Int64(file.count))) echoed (\(echoed) characters)")
    }

    /// Fails the demo (``CLIFailure``, exit status 1) when a check of what the library did failed.
    static func check(_ passed: Bool, _ failure: @autoclosure () -> String) throws(CLIFailure) {
        guard passed else { throw CLIFailure(.failure, "the demo's check failed: " + failure()) }
    }

    private func download(_ manager: HTTPSessionManager) async throws {
        self.title(5, "Download to a file, with a progress bar", "SessionManager.download(_:to:progress:)")
        let generated = TestServer.GeneratedFile(length: self.downloadSize)
        let path = self.downloadRate > 0 ? generated.path(["rate": String(self.downloadRate)]) : generated.path()
        let request = Request(method: .get, url: self.http.url(path))
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("courier-demo-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: target) }
        let bar = DemoProgress(console: self.out, total: Int64(self.downloadSize), enabled: self.style.terminal)
        let result = try await manager.download(request, to: DownloadDestination(options: [.removePreviousFile]) { _, _ in target }) { progress in
            bar.update(progress.completedUnitCount)
        }
        bar.finish()
        self.sent(result.request, body: false)
        let data = (try? Data(contentsOf: result.fileURL)) ?? Data()
        let intact = CRC32.checksum(of: data) == generated.crc32()
        self.received(result.response, detail: "\(ByteCount.format(Int64(data.count))) written to \(result.fileURL.lastPathComponent), CRC-32 \(intact ? "matches" : "DOES NOT match")")
        try Self.check(intact, "the downloaded file's CRC-32 does not match the served file's")
    }

    private func pinnedHTTPS() async throws {
        self.title(6, "HTTPS with a pinned certificate", "SecurityPolicy(pinningMode: .certificate, pinnedCertificates:)")
        let root = try Certificate.certificates(pemEncoded: TestCertificates.rootCA)
        // The test root stands for a system root (as in AFNetworking, a pin alone does not make a
        // chain valid that the trusted roots refuse), and it is the pinned certificate.
        var pinned = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: Set(root))
        pinned.additionalTrustedCertificates = root
        let manager = HTTPSessionManager(baseURL: self.https.baseURL, securityPolicy: pinned)
        manager.completionQueue = .global()
        let response = try await manager.get("get")
        await manager.invalidate(cancelingTasks: true)
        self.sent(response.request, body: false)
        self.received(response.response, detail: "pinned to Courier's test root CA: trusted")

        let other = try Certificate.certificates(pemEncoded: TestCertificates.selfSignedLeaf)
        var wrongPin = SecurityPolicy(pinningMode: .certificate, pinnedCertificates: Set(other))
        wrongPin.additionalTrustedCertificates = root
        let wrong = HTTPSessionManager(baseURL: self.https.baseURL, securityPolicy: wrongPin)
        wrong.completionQueue = .global()
        var refused = false
        do {
            _ = try await wrong.get("get")
            self.out.write(line: "    " + self.style.paint("the wrong pin was accepted: this is a bug", .red))
        } catch {
            refused = true
            self.out.write(line: "    pinned to another certificate: " + self.style.paint("refused", .yellow) + " (\(error.code)): \(error.message)")
        }
        await wrong.invalidate(cancelingTasks: true)
        try Self.check(refused, "a certificate pinned to another one was accepted")
    }

    private func reachability() async {
        self.title(7, "Network reachability", "NetworkReachabilityManager (routing netlink on Linux)")
        let manager = NetworkReachabilityManager()
        let statuses = manager.statuses
        manager.startMonitoring()
        let status = await withTaskGroup(of: NetworkReachabilityStatus?.self) { group in
            group.addTask {
                for await status in statuses where status != .unknown { return status }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(2))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        let shown = status ?? manager.networkReachabilityStatus
        manager.stopMonitoring()
        var line = "    status: " + self.style.paint(shown.localizedDescription, shown.isReachable ? .green : .yellow)
        if let reason = manager.failureReason { line += " (\(reason))" }
        self.out.write(line: line)
    }

    // MARK: Printing

    private func title(_ number: Int, _ text: String, _ api: String) {
        self.out.write(line: "\n" + self.style.paint("\(number). \(text)", .green) + "  " + self.style.paint(api, .gray))
    }

    private func sent(_ request: Request, body: Bool = true) {
        var line = "    → \(request.method.rawValue) \(MessagePrinter.target(of: request.url))"
        if let type = request.value(forHTTPHeaderField: "Content-Type") { line += "  Content-Type: \(type)" }
        self.out.write(line: self.style.paint(line, .cyan))
        if body, let data = request.body.data, !data.isEmpty, let text = String(data: data, encoding: .utf8) {
            self.out.write(line: "      body: \(text)")
        }
    }

    private func received(_ response: HTTPResponse, detail: String) {
        let status = "\(response.status.code) \(response.status.reasonPhrase)"
        self.out.write(line: "    ← " + self.style.paint(status, response.status.kind == .successful ? .green : .red) + "  " + detail)
    }

    private static func object(_ data: Data?) -> [String: Any]? {
        data.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }

    /// One member of a JSON object response, re-encoded compactly with sorted keys.
    private static func member(_ name: String, of data: Data?) -> String {
        guard let value = Self.object(data)?[name] else { return "(none)" }
        guard JSONSerialization.isValidJSONObject(value),
            let encoded = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return "\(value)" }
        return String(decoding: encoded, as: UTF8.self)
    }
}
