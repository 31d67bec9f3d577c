import Foundation
import HTTPTypes

/// What a cancelled or interrupted download leaves to continue from: the request, the bytes
/// already on disk, and the validators that prove the resource has not changed since (URLSession's
/// resume data, as a value).
///
/// Get one from ``DownloadTask/cancel(byProducingResumeData:)`` or from the
/// ``CourierError/resumeData`` of a download that failed after it had started receiving, and hand
/// its ``data`` (or the value) to ``SessionManager/downloadTask(withResumeData:progress:destination:completionHandler:)-(Data,_,_,_)``.
/// A continuation whose connection could not be made, or failed or timed out, or that was
/// cancelled producing resume data, before it changed the partial file gives back the resume data
/// it began with, to try again with; one that could not write the partial file (a full disk)
/// keeps it, and its error carries resume data for the bytes written before the failure.
/// The continuation asks for the rest with `Range` and `If-Range`; a server that ignores the range,
/// or whose resource changed, sends it all again and the download restarts cleanly.
///
/// Courier makes resume data only where a continuation can be right: for a `GET` (a
/// continuation repeats the method without a body, so URLSession makes it for `GET` only) of the
/// whole resource (not when the request carried its own `Range`), from a 200 or 206 with a strong
/// `ETag`, or with no `ETag` and a `Last-Modified` at least a second before its `Date` (the only
/// dates RFC 9110 lets `If-Range` carry), whose body was not content-coded (`Range` counts the coded bytes,
/// the file holds what they decode to).
///
/// The bytes so far live in a file in the session's download directory (``temporaryFileURL``); it is yours
/// once you hold resume data: resume from it or call ``discard()``.
///
/// Resume data is bytes a caller may have kept anywhere, so Courier trusts its file no further
/// than a file Courier made: a continuation appends to, moves or removes ``temporaryFileURL``
/// only when it is a regular file named as Courier names its partial files, in the session's
/// ``SessionConfiguration/downloadDirectory`` or the system's temporary directory (URLSession
/// keeps only the file's name for the same reason). Any other file is left alone and the
/// download starts over. So does a continuation whose partial file is shorter than
/// ``bytesReceived``; that file, Courier's own but of no use, is removed when the download ends.
public struct ResumeData: Sendable, Hashable, Codable {
    /// The URL that answered (after redirects).
    public var url: URL
    /// The request's method.
    public var method: String
    /// The caller's header fields, as name-value pairs (without `Range` and `If-Range`, and
    /// without the caller's credentials and cookies when ``url`` is on another origin). Fields
    /// the session added to the attempt (adapters, its HTTP authentication, the cookie store,
    /// tracing) are not recorded: a continuation adds them afresh.
    public var headerFields: [[String]]
    /// The file holding the bytes received so far (see the type's discussion for which files a
    /// continuation will use).
    public var temporaryFileURL: URL
    /// How many bytes of the body the file holds.
    public var bytesReceived: Int64
    /// The whole body's length, when the server said.
    public var expectedLength: Int64?
    /// The response's strong `ETag`, if it had one.
    public var entityTag: String?
    /// The response's `Last-Modified`, if it had one.
    public var lastModified: String?

    /// Reads resume data made by ``data``.
    /// - Throws: ``CourierError/Code/invalidRequest`` when the bytes are not Courier resume data.
    public init(data: Data) throws(CourierError) {
        do {
            self = try JSONDecoder().decode(ResumeData.self, from: data)
        } catch {
            throw CourierError(.invalidRequest, "the resume data cannot be read", underlyingError: error)
        }
    }

    init(
        request: Request, temporaryFileURL: URL, bytesReceived: Int64, expectedLength: Int64?,
        entityTag: String?, lastModified: String?
    ) {
        self.url = request.url
        self.method = request.method.rawValue
        self.headerFields = request.headerFields
            .filter { $0.name != .range && $0.name != .ifRange }
            .map { [$0.name.rawName, $0.value] }
        self.temporaryFileURL = temporaryFileURL
        self.bytesReceived = bytesReceived
        self.expectedLength = expectedLength
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    /// The resume data as bytes, to store or to pass to `downloadTask(withResumeData:…)`.
    public var data: Data {
        // Encoding a struct of strings, URLs and integers cannot fail.
        (try? JSONEncoder().encode(self)) ?? Data()
    }

    /// Removes the partial file; the resume data is of no use afterwards.
    ///
    /// Only a regular file named as Courier names its partial files is removed; anything else
    /// ``temporaryFileURL`` names is left alone.
    public func discard() {
        guard Self.isPartialFile(self.temporaryFileURL) else { return }
        try? FileManager.default.removeItem(at: self.temporaryFileURL)
    }

    /// The validator for `If-Range`: the strong entity tag, else the modification date.
    var ifRangeValue: String? { self.entityTag ?? self.lastModified }

    /// The request and plan of a download that continues from here: it asks for the rest of the
    /// body and appends to the partial file, or asks for all of it when the partial file is gone or
    /// shorter than recorded (or the resume data names no validator).
    /// A partial file that is not one Courier could have made in `downloadDirectory` (or the
    /// system's temporary directory) is not touched: the download starts over in a file of its own.
    /// One Courier made that cannot be continued is removed when the download that starts over
    /// ends (``DownloadPlan/unusablePartialFile``): nothing else would ever remove it.
    func continuation(to destination: DownloadDestination?, downloadDirectory: URL?) -> (request: Request, plan: DownloadPlan) {
        let trusted = self.isTrustedPartialFile(downloadDirectory: downloadDirectory)
        let (request, offset) = self.continuationRequest(trusted: trusted)
        return (
            request,
            DownloadPlan(
                destination: destination, continuation: offset.map { (self.temporaryFileURL, $0) }, resumeData: offset == nil ? nil : self,
                unusablePartialFile: trusted && offset == nil ? self.temporaryFileURL : nil)
        )
    }

    /// Whether ``temporaryFileURL`` is a file Courier may append to, move and remove: a regular
    /// file (not a link) with a partial file's name, directly in `downloadDirectory` or in the
    /// system's temporary directory.
    func isTrustedPartialFile(downloadDirectory: URL?) -> Bool {
        guard Self.isPartialFile(self.temporaryFileURL) else { return false }
        let folder = Self.canonicalPath(self.temporaryFileURL.deletingLastPathComponent())
        let allowed = [downloadDirectory, FileManager.default.temporaryDirectory].compactMap { $0.map(Self.canonicalPath) }
        return allowed.contains(folder)
    }

    /// Whether `url` is a local regular file (not a link) named like the partial files Courier
    /// makes (`DownloadDestination.temporaryFileURL(in:)`).
    static func isPartialFile(_ url: URL) -> Bool {
        guard url.isFileURL, DownloadDestination.isTemporaryFileName(url.lastPathComponent) else { return false }
        let type = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.type] as? FileAttributeType
        return type == .typeRegular
    }

    /// A folder's path with `.`/`..` and links resolved and no trailing slash, to compare folders.
    private static func canonicalPath(_ folder: URL) -> String {
        var path = folder.standardizedFileURL.resolvingSymlinksInPath().path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        return path
    }

    private func continuationRequest(trusted: Bool) -> (request: Request, offset: Int64?) {
        var fields = HTTPFields()
        for pair in self.headerFields where pair.count == 2 {
            if let name = HTTPField.Name(pair[0]) { fields.append(HTTPField(name: name, value: pair[1])) }
        }
        var request = Request(method: HTTPRequest.Method(self.method) ?? .get, url: self.url, headerFields: fields)
        let size =
            trusted ? (try? FileManager.default.attributesOfItem(atPath: self.temporaryFileURL.path)[.size] as? NSNumber)?.int64Value : nil
        guard let size, size >= self.bytesReceived, self.bytesReceived > 0, let validator = self.ifRangeValue else {
            return (request, nil)
        }
        request.headerFields[.range] = "bytes=\(self.bytesReceived)-"
        request.headerFields[.ifRange] = validator
        return (request, self.bytesReceived)
    }

    /// Whether a response can be resumed later: it is a 200 or 206 that names a strong entity tag
    /// or a modification date that `If-Range` may carry, and does not refuse ranges.
    ///
    /// RFC 9110 13.1.5 lets `If-Range` carry a date only when the client holds no entity tag (not
    /// even a weak one) and the date is a strong validator (8.8.2.2): the response's `Date` is at
    /// least a second later, so the resource cannot have changed again within the second the date
    /// names. Otherwise a change made in the same second would pass `If-Range`, and the rest of
    /// the new body would be appended to the start of the old one.
    ///
    /// `continuing` is the request of a `206` that continues a partial file: when the `206` names
    /// no validator (RFC 9110 15.3.7 lets one that answers `If-Range` leave them out), the one its
    /// `If-Range` sent, which the server just matched, still stands for the whole file. Without
    /// it, a continuation that broke off again left no resume data and removed the partial file,
    /// with every byte of both transfers in it.
    static func validators(of response: HTTPResponse, continuing: Request? = nil) -> (entityTag: String?, lastModified: String?)? {
        guard response.status.code == 200 || response.status.code == 206 else { return nil }
        let fields = response.headerFields
        if fields.value(of: .acceptRanges)?.equalsLowercased("none") == true { return nil }
        let tag = fields.value(of: .eTag)
        let modified = fields.value(of: .lastModified)
        if tag == nil, modified == nil, response.status.code == 206, let matched = continuing?.headerFields[.ifRange] {
            // An entity tag is quoted; anything else `If-Range` holds is a date.
            return matched.hasPrefix("\"") ? (matched, nil) : (nil, matched)
        }
        if let tag, !tag.hasPrefix("W/") { return (tag, modified) }
        guard tag == nil, let modified, let modifiedDate = HTTPDate.parse(modified),
            let date = fields.value(of: .date).flatMap({ HTTPDate.parse($0) }), date.timeIntervalSince(modifiedDate) >= 1
        else { return nil }
        return (nil, modified)
    }
}
