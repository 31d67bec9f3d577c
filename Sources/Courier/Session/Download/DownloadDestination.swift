import Foundation
import HTTPTypes
import NIOFileSystem

/// Where a finished download goes: given the temporary file and the response, the final URL and
/// how to put the file there (AFNetworking's `destination` block, with Alamofire's options).
///
/// ```swift
/// let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reports")
/// let destination = DownloadDestination { _, response in
///     folder.appendingPathComponent("report-\(response.status.code).pdf")
/// }
/// ```
public struct DownloadDestination: Sendable {
    /// How to move the file into place.
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Make the folders the destination needs.
        public static let createIntermediateDirectories = Options(rawValue: 1 << 0)
        /// Replace a file already at the destination; without this option the move fails, the
        /// existing file is kept and the download is removed.
        public static let removePreviousFile = Options(rawValue: 1 << 1)
    }

    /// Names the final URL from the temporary file and the response.
    public let url: @Sendable (_ temporaryURL: URL, _ response: HTTPResponse) -> URL
    /// How to move the file there.
    public let options: Options

    /// A destination.
    /// - Parameters:
    ///   - options: How to move the file; by default intermediate folders are made and an existing
    ///     file is kept (the move fails).
    ///   - url: Names the final URL; called once, off the engine's threads.
    public init(
        options: Options = [.createIntermediateDirectories],
        _ url: @escaping @Sendable (_ temporaryURL: URL, _ response: HTTPResponse) -> URL
    ) {
        self.url = url
        self.options = options
    }

    /// Moves `temporaryURL` to the destination and returns where it went. The file system work
    /// runs on NIOFileSystem's threads. The file goes first under a hidden name beside the
    /// destination (a rename, or a copy when the destination is on another file system), then to
    /// the destination's name (a rename): a copy cut short (a full disk) never leaves a partial
    /// file under the destination's name, and `removePreviousFile` removes the earlier file only
    /// once the new one is whole beside it.
    /// - Throws: ``CourierError/Code/fileSystemFailure`` naming the destination; the temporary file,
    ///   when it is still there, is left for the caller to remove.
    func move(_ temporaryURL: URL, response: HTTPResponse, request: Request) async throws(CourierError) -> URL {
        let target = self.url(temporaryURL, response)
        // A name of its own length: one built on the target's would be too long for a target
        // named near the file system's limit (255 bytes).
        let staged = target.deletingLastPathComponent().appendingPathComponent(
            ".courier-" + String(UInt64.random(in: .min ... .max), radix: 36) + ".partial")
        let files = FileSystem.shared
        do {
            if self.options.contains(.createIntermediateDirectories) {
                try await files.createDirectory(
                    at: FilePath(target.deletingLastPathComponent().path), withIntermediateDirectories: true, permissions: nil)
            }
            try await files.moveItem(at: FilePath(temporaryURL.path), to: FilePath(staged.path))
            if self.options.contains(.removePreviousFile) {
                try await files.removeItem(at: FilePath(target.path), strategy: .platformDefault, recursively: false)
            }
            try await files.moveItem(at: FilePath(staged.path), to: FilePath(target.path))
            return target
        } catch {
            // What a copy left, or the whole file when the last rename failed (a file in the way).
            try? FileManager.default.removeItem(at: staged)
            throw CourierError(
                .fileSystemFailure, "\(request.summary): cannot move the download to \(target.path)",
                request: request, response: response, underlyingError: error)
        }
    }
}

extension DownloadDestination {
    /// A new file for a download's body in `directory`, or in the system's temporary directory.
    static func temporaryFileURL(in directory: URL?) -> URL {
        (directory ?? FileManager.default.temporaryDirectory).appendingPathComponent("\(Self.temporaryFilePrefix)\(UUID().uuidString).tmp")
    }

    private static let temporaryFilePrefix = "CourierDownload-"

    /// Whether `name` is a name ``temporaryFileURL(in:)`` makes.
    static func isTemporaryFileName(_ name: String) -> Bool {
        guard name.hasPrefix(Self.temporaryFilePrefix), name.hasSuffix(".tmp") else { return false }
        let uuid = name.dropFirst(Self.temporaryFilePrefix.count).dropLast(4)
        return UUID(uuidString: String(uuid)) != nil
    }
}
