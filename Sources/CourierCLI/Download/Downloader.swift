import Courier
import Foundation
import NIOCore

/// `--download`: the body goes to a file (named by `-o`, the response's `Content-Disposition`, or
/// the URL), or without `-o` to standard output when that is not a terminal (HTTPie's
/// `http -d URL | tar zxf -`); the response head and a progress bar go to standard error;
/// `--continue` asks for the rest of a partial file with `Range` (and `If-Range`, with the
/// validator kept with the file: ``PartialFileValidator``) and appends it.
struct Downloader {
    let command: RequestCommand
    let session: SessionManager

    func run(_ built: BuiltRequest) async throws {
        let errorConsole = Console.standardError
        let printer = MessagePrinter(
            style: OutputStyle(pretty: self.command.pretty, console: errorConsole), console: errorConsole, proxies: self.session.configuration.proxy)
        var request = built.request
        let target = self.command.output.map { URL(fileURLWithPath: $0) }
        var offset: Int64 = 0
        var sentValidator: String?
        // The bytes as stored, so that lengths and ranges count what lands in the file (HTTPie too).
        if request.value(forHTTPHeaderField: "Accept-Encoding") == nil {
            request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        }
        if self.command.resume, let target, let size = Self.size(of: target), size > 0 {
            offset = size
            request.setValue("bytes=\(offset)-", forHTTPHeaderField: "Range")
            if request.value(forHTTPHeaderField: "If-Range") == nil, let validator = PartialFileValidator.stored(for: target) {
                // The file changed on the server since: the whole new one comes, not its rest.
                request.setValue(validator, forHTTPHeaderField: "If-Range")
                sentValidator = validator
            }
        }
        // Printed once the response head says which protocol carried the request.
        let shown = BuiltRequest(request: request, bodyKind: built.bodyKind, items: built.items)
        // The request with `--verbose` or `--print H`/`B`; the response head unless `--print`
        // leaves `h` out (the body goes to the file whatever they say).
        let parts = OutputParts(command: self.command, terminal: true)
        let printsRequest = parts.requestHead || parts.requestBody

        let streamed: DataStreamResponse
        do {
            streamed = try await self.session.stream(request)
        } catch {
            if printsRequest { try await printer.printRequest(shown, head: parts.requestHead, body: parts.requestBody) }
            throw CLIFailure.request(error)
        }
        if printsRequest {
            try await printer.printRequest(
                shown, head: parts.requestHead, body: parts.requestBody, networkProtocolName: streamed.task.networkProtocolName)
        }
        let response = streamed.response
        if parts.responseHead || self.command.printed == nil {
            printer.printResponseHead(response, networkProtocolName: streamed.task.networkProtocolName)
        }

        if offset > 0 && response.status.code == 416, Self.isComplete(offset, answer: response, sentValidator: sentValidator != nil) {
            streamed.task.cancel()
            errorConsole.write(line: "'\(target!.path)' is already complete (\(ByteCount.format(offset))).")
            return
        }
        guard response.status.kind == .successful else {
            streamed.task.cancel()
            let status = ExitStatus.checking(response.status) ?? .failure
            throw CLIFailure(status, "HTTP \(response.status.code) \(response.status.reasonPhrase): nothing downloaded")
        }
        var appending = false
        if offset > 0 {
            if response.status.code == 206 {
                guard Self.isRest(after: offset, answer: response) else {
                    streamed.task.cancel()
                    throw CLIFailure(.failure, "the server answered the range from byte \(offset) with another range (\(response.headerFields[.contentRange] ?? "none")), not the rest of the file; the partial file is unchanged")
                }
                if let sentValidator, let other = ContentRange.otherVersion(named: response, than: sentValidator) {
                    streamed.task.cancel()
                    throw CLIFailure(.failure, "the server sent part of another version of the file (\(other), not \(sentValidator)): it ignored If-Range; the partial file is unchanged (download it again without --continue)")
                }
                appending = true
            } else {
                errorConsole.write(line: "The server sent the whole file: starting over.")
            }
        }

        let expected = response.headerFields[.contentLength].flatMap { Int64($0) }
        // Saturating: a 206 may name any length (Int64.max), and the sum would trap.
        let total = expected.map { length -> Int64 in
            let (sum, overflow) = length.addingReportingOverflow(appending ? offset : 0)
            return overflow ? .max : sum
        }
        // `-o` is opened as curl opens it; a name the server or the URL chose is created new.
        // Without `-o`, a standard output that is not a terminal (a pipe, a redirection) gets the
        // body and no file is made, as HTTPie does it.
        let file: URL?
        let handle: FileHandle?
        if let target {
            file = target
            handle = try Self.open(target, appending: appending)
        } else if Self.writesToStandardOutput(output: self.command.output, standardOutputIsTerminal: Console.standardOutput.isTerminal) {
            file = nil
            handle = nil
        } else {
            let created = try Self.createUniqueFile(named: Self.fileName(for: response, url: streamed.request.url))
            file = created.file
            handle = created.handle
        }
        defer { try? handle?.close() }
        // What the bytes are of, for a later --continue (kept when appending: the 206 is of the same).
        if let file, !appending { PartialFileValidator.store(PartialFileValidator.validator(of: response), for: file) }
        let destination = file.map { "'\($0.path)'" } ?? "standard output"

        errorConsole.write(line: "Downloading \(total.map(ByteCount.format) ?? "an unknown size") to \(destination)" + (appending ? ", from byte \(offset)" : ""))
        var bar = errorConsole.isTerminal ? ProgressBar(console: errorConsole, total: total, alreadyDone: appending ? offset : 0) : nil
        let start = ContinuousClock.now
        var written: Int64 = 0
        do {
            for try await chunk in streamed.body {
                if let handle {
                    do {
                        try handle.write(contentsOf: chunk.readableBytesView)
                    } catch {
                        streamed.task.cancel()
                        throw CLIFailure(.failure, "cannot write \(destination): \(error.localizedDescription)")
                    }
                } else {
                    // A failed write ends the process with its own message (``Console/write(_:)``).
                    Console.standardOutput.write(chunk.readableBytesView)
                }
                written += Int64(chunk.readableBytes)
                bar?.advance(by: chunk.readableBytes)
            }
        } catch let error as CourierError {
            bar?.finish()
            let resumable = file == nil ? "" : " (courier --download --continue -o … resumes)"
            throw CLIFailure(ExitStatus.failing(error), error.message + "; \(written) bytes written to \(destination)" + resumable)
        }
        bar?.finish()
        if let expected, written < expected {
            throw CLIFailure(.failure, "incomplete download: \(written) of \(expected) bytes written to \(destination)")
        }
        let elapsed = ContinuousClock.now - start
        errorConsole.write(line: "Done. \(ByteCount.format(written)) in \(String(format: "%.2f", elapsed.seconds)) s (\(ByteCount.rate(written, over: elapsed)))")
    }

    /// Whether the body goes to standard output rather than to a file: without `-o` (`output`),
    /// when standard output is not a terminal (a pipe or a redirection), as HTTPie's
    /// `http --download URL | tar zxf -` does. On a terminal the body goes to a file.
    static func writesToStandardOutput(output: String?, standardOutputIsTerminal: Bool) -> Bool {
        output == nil && !standardOutputIsTerminal
    }

    /// The size of the file `file` names, through symbolic links (`attributesOfItem` reads a
    /// link's own size, the length of the path it holds; the file is opened through the link).
    private static func size(of file: URL) -> Int64? {
        (try? FileManager.default.attributesOfItem(atPath: file.resolvingSymlinksInPath().path)[.size] as? NSNumber)?.int64Value
    }

    /// Opens `file` for writing: at its end when appending, else created empty.
    /// The file is opened as curl opens it (`open` with `O_CREAT`, and `O_TRUNC` unless
    /// appending), not replaced: `-o /dev/null` writes to the device, a link is followed, and the
    /// file keeps its owner, mode and hard links. (`FileManager.createFile` wrote an empty file
    /// beside it and renamed it over: `/dev/null` failed, or as root was replaced by a file.)
    private static func open(_ file: URL, appending: Bool) throws(CLIFailure) -> FileHandle {
        let descriptor = file.withUnsafeFileSystemRepresentation { path -> Int32 in
            guard let path else { return -1 }
            return Foundation.open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (appending ? O_APPEND : O_TRUNC), 0o666)
        }
        guard descriptor >= 0 else {
            throw CLIFailure(.failure, "cannot create '\(file.path)': \(String(cString: strerror(errno)))")
        }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// Whether a 206 to `Range: bytes=offset-` is the rest of the file: its `Content-Range`
    /// starts at `offset` and, when it names the whole length, ends at the last byte (the check
    /// the library makes of a continuation's 206). A range that stops short was appended and the
    /// download reported done, the file short of its end.
    static func isRest(after offset: Int64, answer response: HTTPResponse) -> Bool {
        guard let range = response.headerFields[.contentRange].flatMap(ContentRange.init), range.first == offset else { return false }
        return range.completeLength.map { range.last == $0 - 1 } ?? true
    }

    /// Whether a 416 to `Range: bytes=offset-` says the partial file is whole: its
    /// `Content-Range: bytes */n` names `offset` as the length; or it names none (Apache and
    /// lighttpd send none: RFC 9110 15.5.17 only says SHOULD) and the request carried the
    /// validator kept with the file as `If-Range`, which the server found current (it would have
    /// sent the whole file otherwise, RFC 9110 13.1.5), so the file has all its bytes.
    static func isComplete(_ offset: Int64, answer response: HTTPResponse, sentValidator: Bool) -> Bool {
        guard let length = Self.completeLength(of: response) else { return sentValidator }
        return length == offset
    }

    /// The whole length a 416 states (`Content-Range: bytes */n`).
    static func completeLength(of response: HTTPResponse) -> Int64? {
        response.headerFields[.contentRange].flatMap(ContentRange.unsatisfiedCompleteLength)
    }

    /// The name from `Content-Disposition` (its last path component only, without leading dots, as
    /// HTTPie takes it: no hidden file such as `.bashrc`): `filename*` (RFC 6266 4.3, RFC 8187:
    /// `UTF-8''na%C3%AFve.txt`) when it is there and decodes, else `filename`; else the URL's last
    /// path component, else `index`.
    static func fileName(for response: HTTPResponse, url: URL) -> String {
        if let disposition = response.headerFields[.contentDisposition] {
            for candidate in [Self.extendedFileName(in: disposition), Self.dispositionParameters(disposition)["filename"]] {
                guard let name = candidate?.trimmingCharacters(in: .whitespaces) else { continue }
                if let safe = Self.safeFileName(name, droppingLeadingDots: true) { return safe }
            }
        }
        // The URL's last segment, decoded (`lastPathComponent` decodes): a redirect's
        // `/d/..%2F..%2F.profile` is `../../.profile`, whose last component is taken again.
        return Self.safeFileName(url.lastPathComponent) ?? "index"
    }

    /// A name the server gave as a file name in the current folder: its last path component,
    /// with control characters (C0, DEL and C1) written `%XX` as wget's default does, so that
    /// neither the name nor the line that prints it carries them; nil when nothing is left or
    /// it is `.` or `..`. With `droppingLeadingDots`, the dots that start the component go.
    static func safeFileName(_ name: String, droppingLeadingDots: Bool = false) -> String? {
        var last = (name as NSString).lastPathComponent
        if droppingLeadingDots { last = String(last.drop(while: { $0 == "." })) }
        guard !last.isEmpty, last != ".", last != "..", last != "/" else { return nil }
        var safe = ""
        for scalar in last.unicodeScalars {
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                safe += String(format: "%%%02X", scalar.value)
            } else {
                safe.unicodeScalars.append(scalar)
            }
        }
        return safe
    }

    /// The parameters of a `Content-Disposition` value (RFC 6266 4.1), by lower-cased name: a
    /// token as written, a quoted-string without its quotes and with each character after a `\`
    /// as itself (RFC 9110 5.6.4), so that `filename="Q3; final.pdf"` is `Q3; final.pdf` and
    /// `filename="say \"hi\".txt"` is `say "hi".txt`. The first of a repeated name counts; the
    /// disposition type, or any word without `=`, is no parameter. An unterminated quoted-string
    /// runs to the end.
    static func dispositionParameters(_ disposition: String) -> [String: String] {
        let scalars = Array(disposition.unicodeScalars)
        var parameters: [String: String] = [:]
        var index = 0
        while index < scalars.count {
            var name = String.UnicodeScalarView()
            while index < scalars.count, scalars[index] != "=", scalars[index] != ";" {
                name.append(scalars[index])
                index += 1
            }
            guard index < scalars.count, scalars[index] == "=" else {
                index += 1  // past the `;` that ends a word without `=`
                continue
            }
            index += 1
            while index < scalars.count, scalars[index] == " " || scalars[index] == "\t" { index += 1 }
            var value = String.UnicodeScalarView()
            var quoted = false
            if index < scalars.count, scalars[index] == "\"" {
                quoted = true
                index += 1
                while index < scalars.count, scalars[index] != "\"" {
                    if scalars[index] == "\\", index + 1 < scalars.count { index += 1 }
                    value.append(scalars[index])
                    index += 1
                }
                // What follows the closing quote, up to the next `;`, is not the value's.
                while index < scalars.count, scalars[index] != ";" { index += 1 }
            } else {
                while index < scalars.count, scalars[index] != ";" {
                    value.append(scalars[index])
                    index += 1
                }
            }
            index += 1  // past the `;`
            let key = String(name).trimmingCharacters(in: .whitespaces).lowercased()
            if !key.isEmpty, parameters[key] == nil {
                parameters[key] = quoted ? String(value) : String(value).trimmingCharacters(in: .whitespaces)
            }
        }
        return parameters
    }

    /// `filename*`'s value decoded: `charset'language'percent-encoded`, UTF-8 or ISO-8859-1.
    static func extendedFileName(in disposition: String) -> String? {
        guard let value = Self.dispositionParameters(disposition)["filename*"]?.trimmingCharacters(in: .whitespaces) else { return nil }
        let parts = value.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        let charset = parts[0].lowercased()
        var bytes: [UInt8] = []
        var encoded = parts[2].utf8[...]
        while let byte = encoded.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard encoded.count >= 2, let decoded = UInt8(String(decoding: encoded.prefix(2), as: UTF8.self), radix: 16) else { return nil }
            bytes.append(decoded)
            encoded = encoded.dropFirst(2)
        }
        switch charset {
        case "utf-8": return String(validating: bytes, as: UTF8.self)
        case "iso-8859-1": return String(bytes.map { Character(Unicode.Scalar($0)) })
        default: return nil
        }
    }

    /// The most bytes a file name may have: `NAME_MAX` of Linux's and macOS's file systems.
    static let maximumFileNameLength = 255

    /// `name` cut to at most `limit` bytes of UTF-8, between Unicode scalars, its extension (from
    /// the last `.`, not a leading one) kept when it leaves room for a character before it: a
    /// server's 300-byte name failed with "File name too long".
    static func fitted(_ name: String, toBytes limit: Int) -> String {
        guard name.utf8.count > limit else { return name }
        var stem = Substring(name)
        var pathExtension = Substring()
        // 4 bytes: room for any one scalar before the extension.
        if let dot = name.lastIndex(of: "."), dot != name.startIndex, name[dot...].utf8.count <= limit - 4 {
            stem = name[..<dot]
            pathExtension = name[dot...]
        }
        var kept = String.UnicodeScalarView()
        var size = pathExtension.utf8.count
        for scalar in stem.unicodeScalars {
            let width = UTF8.width(scalar)
            guard size + width <= limit else { break }
            kept.append(scalar)
            size += width
        }
        return String(kept) + pathExtension
    }

    /// Creates `name` in the current folder, or `name-1`, `name-2`… when the name is taken
    /// (HTTPie's rule), as curl creates a name the server chose: `open` with `O_CREAT | O_EXCL`,
    /// so that whatever has the name, a symbolic link included (one to nothing too), is neither
    /// followed nor written over. Each name is cut to ``maximumFileNameLength`` bytes, its
    /// suffix included (``fitted(_:toBytes:)``).
    static func createUniqueFile(named name: String) throws(CLIFailure) -> (file: URL, handle: FileHandle) {
        let folder = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        var suffix = 0
        while true {
            let end = suffix == 0 ? "" : "-\(suffix)"
            let candidate = folder.appendingPathComponent(Self.fitted(name, toBytes: Self.maximumFileNameLength - end.utf8.count) + end)
            var failure = EINVAL
            let descriptor = candidate.withUnsafeFileSystemRepresentation { path -> Int32 in
                guard let path else { return -1 }
                let opened = Foundation.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
                if opened < 0 { failure = errno }
                return opened
            }
            if descriptor >= 0 { return (candidate, FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)) }
            guard failure == EEXIST else {
                throw CLIFailure(.failure, "cannot create '\(candidate.path)': \(String(cString: strerror(failure)))")
            }
            suffix += 1
        }
    }
}
