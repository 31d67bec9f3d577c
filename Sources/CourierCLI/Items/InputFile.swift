import Foundation

/// Files named on the command line: checked before anything is sent, read as text for `=@`,
/// `:=@`, `:@` and `==@` items. Every failure is ``ExitStatus/unreadableInput`` with the path.
enum InputFile {
    /// Throws unless `path` is a readable regular file.
    static func checkReadable(_ path: String) throws(CLIFailure) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CLIFailure(.unreadableInput, "cannot read '\(path)': no such file")
        }
        guard !isDirectory.boolValue else { throw CLIFailure(.unreadableInput, "cannot read '\(path)': it is a directory") }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw CLIFailure(.unreadableInput, "cannot read '\(path)': permission denied")
        }
    }

    /// The file's contents as UTF-8 text.
    static func text(_ path: String) throws(CLIFailure) -> String {
        try Self.checkReadable(path)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIFailure(.unreadableInput, "cannot read '\(path)'")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CLIFailure(.unreadableInput, "'\(path)' is not UTF-8 text")
        }
        return text
    }

    /// The file's text without the line feeds that end it, as HTTPie reads `Header:@file` and
    /// `name==@file`.
    static func textWithoutTrailingNewlines(_ path: String) throws(CLIFailure) -> String {
        var text = try Self.text(path)
        while let last = text.unicodeScalars.last, last == "\n" { text.unicodeScalars.removeLast() }
        return text
    }
}
