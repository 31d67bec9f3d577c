import Foundation

/// What a download task keeps, beside the rest of its state (``TaskState/download``), about its
/// file and what the current answer says about resuming it; it stays empty for other tasks.
/// Guarded by the task's lock, as the rest of ``TaskState`` is.
struct DownloadState {
    /// Writes the body to the task's file, from the final response head on.
    var file: DownloadFileWriter?
    /// Handed to the task's ``DownloadFileWriter`` (tests only: a slow disk).
    var writeGate: DownloadFileWriter.WriteGate?
    /// The response's validators, when the download can be resumed later.
    var resumeValidators: (entityTag: String?, lastModified: String?)?
    /// Whether the current attempt's answer is a 416 that found the partial file of resume data
    /// whole: the download completes with that file, and the 416 is not a failure to retry.
    var keptFileIsWhole = false
    /// The offset of the last byte the `Content-Range` of a continuation's 206 names (nil for any
    /// other answer): its body must end there (``TaskState/bytesWithinContinuedRange(_:)``,
    /// ``TaskState/continuedRangeShortfall()``).
    var continuedRangeLast: Int64?
    /// Whether the body of a continuation's 206 did not fill the range it named (it ended short
    /// of it, or ran past it): the task fails, and its partial file keeps the bytes that fell in
    /// the range, with resume data, as a body cut short does.
    var bodyMissedRange = false
    /// Whether Courier refused a continuation's 206 that was not the rest of the partial file
    /// (its `Content-Range` starts or ends elsewhere) but names no other version than `If-Range`
    /// sent: nothing was written, so the partial file stays, named by the resume data the
    /// continuation began with.
    var refusalKeepsPartialFile = false
    /// Set by `cancel(byProducingResumeData:)`.
    var resumeDataHandler: (@Sendable (ResumeData?) -> Void)?

    /// A final response head was taken for the file `writer` writes: `validators` (nil: the
    /// download cannot be resumed from it) and, for a continuation's 206, the last byte its range
    /// names.
    mutating func answerWritten(to writer: DownloadFileWriter, validators: (entityTag: String?, lastModified: String?)?, rangeLast: Int64?) {
        self.file = writer
        self.resumeValidators = validators
        self.continuedRangeLast = rangeLast
    }

    /// The answer is a 416 that found the partial file whole: no file is written, and nothing of
    /// an earlier answer of the attempt is kept.
    mutating func answerFoundKeptFileWhole() {
        self.file = nil
        self.resumeValidators = nil
        self.continuedRangeLast = nil
        self.keptFileIsWhole = true
    }

    /// The attempt is retried: what its answer said is forgotten (its file was let go of
    /// before, ``takeFile()``).
    mutating func attemptRetried() {
        self.resumeValidators = nil
        self.continuedRangeLast = nil
        self.keptFileIsWhole = false
    }

    /// The file writer, taken: the state no longer holds it.
    mutating func takeFile() -> DownloadFileWriter? {
        defer { self.file = nil }
        return self.file
    }
}
