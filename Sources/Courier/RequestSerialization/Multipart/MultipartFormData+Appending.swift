import Foundation
import HTTPTypes
import NIOCore

extension MultipartFormData {
    /// Appends the file at `fileURL` as a file field, its file name the URL's last path
    /// component and its media type inferred from the extension (`application/octet-stream` when
    /// unknown; see ``mimeType(forPathExtension:)``).
    ///
    /// The file is checked now and read when the body is sent.
    /// - Parameters:
    ///   - fileURL: A `file:` URL of a regular file.
    ///   - name: The form field name.
    /// - Throws: ``CourierError/Code/bodyReadFailed`` when `fileURL` is not a file URL, or names
    ///   nothing, a directory, something other than a regular file, or a file this process cannot
    ///   read.
    public mutating func appendPart(withFileURL fileURL: URL, name: String) throws(CourierError) {
        let fileName = fileURL.lastPathComponent
        try self.appendPart(
            withFileURL: fileURL, name: name, fileName: fileName,
            mimeType: Self.mimeType(forPathExtension: fileURL.pathExtension))
    }

    /// Appends the file at `fileURL` as a file field with the given file name and media type.
    ///
    /// The file is checked now (AFNetworking checks at append time too) and its size recorded for
    /// the body's length; it is opened only when its turn comes in the body, and read in large
    /// chunks.
    /// - Parameters:
    ///   - fileURL: A `file:` URL of a regular file (a symbolic link to one is followed).
    ///   - name: The form field name.
    ///   - fileName: The file name the server sees.
    ///   - mimeType: The part's `Content-Type`.
    /// - Throws: ``CourierError/Code/bodyReadFailed`` when `fileURL` is not a file URL, or names
    ///   nothing, a directory, something other than a regular file, or a file this process cannot
    ///   read; ``CourierError/Code/invalidRequest`` when its size would make the form longer than
    ///   an `Int64` counts.
    public mutating func appendPart(withFileURL fileURL: URL, name: String, fileName: String, mimeType: String) throws(CourierError) {
        let size = try Self.sizeOfReadableFile(at: fileURL, field: name)
        try self.appendSized(
            MultipartPart(
                headers: MultipartPart.headers(name: name, fileName: fileName, mimeType: mimeType),
                content: .file(fileURL, size: size)),
            name: name)
    }

    /// Appends a part whose size a caller or a file gave, unless the form's length would then come
    /// within 2⁶¹ bytes of what an `Int64` holds: that room is kept for the parts appended from
    /// memory, which cannot fail (``contentLength`` would overflow and trap; a stream declared
    /// `Int64.max - 200` bytes long, then any field, did).
    private mutating func appendSized(_ part: MultipartPart, name: String) throws(CourierError) {
        let boundary = self.boundaryValue
        let overhead = Int64(boundary.encapsulationDelimiter.count + part.headerBlock.count + boundary.closeDelimiter.count)
        let (withPart, overflow) = self.contentLength.addingReportingOverflow(part.bodyLength)
        guard !overflow, withPart <= Int64.max - Self.roomForPartsInMemory - overhead else {
            throw CourierError(.invalidRequest, "the form field '\(name)' makes the form longer than a body can be (\(part.bodyLength) bytes)")
        }
        self.append(part)
    }

    /// What the sized parts leave of `Int64`'s range for the parts appended from memory (2⁶¹
    /// bytes, more than any memory holds).
    static let roomForPartsInMemory: Int64 = 1 << 61

    /// Appends a file field whose bytes come from a stream made afresh for each send (AFNetworking's
    /// `appendPartWithInputStream:name:fileName:length:mimeType:`).
    ///
    /// The stream must produce exactly `length` bytes: more or fewer fails the body with
    /// ``CourierError/Code/bodyReadFailed``, as the request declared its length up front.
    /// - Parameters:
    ///   - makeStream: Makes the part's chunks; called once each time the body is sent.
    ///   - name: The form field name.
    ///   - fileName: The file name the server sees.
    ///   - length: The exact number of bytes the stream produces.
    ///   - mimeType: The part's `Content-Type`.
    /// - Throws: ``CourierError/Code/invalidRequest`` when `length` is negative, or would make the
    ///   form longer than an `Int64` counts (less 2⁶¹ bytes kept for the parts appended from memory).
    public mutating func appendPart(
        withStream makeStream: @escaping @Sendable () -> some AsyncSequence<ByteBuffer, any Error> & Sendable,
        name: String,
        fileName: String,
        length: Int64,
        mimeType: String
    ) throws(CourierError) {
        try self.appendStreamPart(
            makeStream: { makeStream() }, replayable: true, name: name, fileName: fileName, length: length, mimeType: mimeType)
    }

    /// Appends a file field whose bytes come from a stream that can be read once.
    ///
    /// The form's body then cannot be sent twice (``isReplayable`` is false), so a redirect that
    /// must resend the body (307, 308) is answered by the redirect response itself. Prefer
    /// ``appendPart(withStream:name:fileName:length:mimeType:)`` when you can make the stream again.
    /// - Parameters:
    ///   - stream: The part's chunks, exactly `length` bytes of them.
    ///   - name: The form field name.
    ///   - fileName: The file name the server sees.
    ///   - length: The exact number of bytes the stream produces.
    ///   - mimeType: The part's `Content-Type`.
    /// - Throws: ``CourierError/Code/invalidRequest`` when `length` is negative, or would make the
    ///   form longer than an `Int64` counts (less 2⁶¹ bytes kept for the parts appended from memory).
    public mutating func appendPart(
        withInputStream stream: some AsyncSequence<ByteBuffer, any Error> & Sendable,
        name: String,
        fileName: String,
        length: Int64,
        mimeType: String
    ) throws(CourierError) {
        try self.appendStreamPart(
            makeStream: { stream }, replayable: false, name: name, fileName: fileName, length: length, mimeType: mimeType)
    }

    /// Appends bytes in memory as a file field, with `Content-Disposition` naming `fileName` and
    /// the given `Content-Type`.
    /// - Parameters:
    ///   - data: The file's bytes.
    ///   - name: The form field name.
    ///   - fileName: The file name the server sees.
    ///   - mimeType: The part's `Content-Type`.
    public mutating func appendPart(withFileData data: Data, name: String, fileName: String, mimeType: String) {
        self.append(
            MultipartPart(headers: MultipartPart.headers(name: name, fileName: fileName, mimeType: mimeType), content: .data(data)))
    }

    /// Appends a plain form field: `Content-Disposition: form-data; name="…"` and the bytes,
    /// with no `Content-Type` (a server reads it as text).
    /// - Parameters:
    ///   - data: The field's value, usually text in UTF-8.
    ///   - name: The form field name.
    public mutating func appendPart(withForm data: Data, name: String) {
        self.append(MultipartPart(headers: MultipartPart.headers(name: name, fileName: nil, mimeType: nil), content: .data(data)))
    }

    /// Appends a part with exactly the given header fields and body, for anything the other
    /// methods do not cover (a `Content-Transfer-Encoding`, a nested `multipart/mixed`…).
    /// - Parameters:
    ///   - headers: The part's header fields, written in order; usually a `Content-Disposition`.
    ///   - body: The part's bytes.
    public mutating func appendPart(withHeaders headers: HTTPFields, body: Data) {
        self.append(MultipartPart(headers: headers, content: .data(body)))
    }

    /// The media type for a file name extension (`"png"` gives `image/png`), from a table built
    /// in, so it is the same on every platform; `application/octet-stream` when it is unknown.
    public static func mimeType(forPathExtension pathExtension: String) -> String {
        MIMEType.forPathExtension(pathExtension)
    }

    private mutating func appendStreamPart(
        makeStream: @escaping @Sendable () -> RequestBody.Stream,
        replayable: Bool,
        name: String,
        fileName: String,
        length: Int64,
        mimeType: String
    ) throws(CourierError) {
        guard length >= 0 else {
            throw CourierError(.invalidRequest, "the stream for the form field '\(name)' has a negative length (\(length))")
        }
        try self.appendSized(
            MultipartPart(
                headers: MultipartPart.headers(name: name, fileName: fileName, mimeType: mimeType),
                content: .stream(makeStream: makeStream, length: length, replayable: replayable)),
            name: name)
    }

    /// The size of the regular, readable file at `url`, following symbolic links.
    static func sizeOfReadableFile(at url: URL, field name: String) throws(CourierError) -> Int64 {
        guard url.isFileURL else {
            throw CourierError(.bodyReadFailed, "the form field '\(name)': \(url.absoluteString) is not a file URL")
        }
        switch RequestBody.examine(file: url) {
        case .readable(let size):
            return size
        case .refused(let reason, let underlyingError):
            throw CourierError(.bodyReadFailed, "the form field '\(name)': \(reason)", underlyingError: underlyingError)
        }
    }
}
