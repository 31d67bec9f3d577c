import Courier
import Foundation

/// `--cookie-jar FILE`: cookies read from a Netscape cookies.txt file (when it exists) before the
/// request, and the session's cookies written back to it afterwards, as curl's `-b FILE -c FILE`
/// do together; so a shell session logs in once.
struct CookieJarFile {
    let path: String
    let storage: FileCookieStorage

    /// Opens the jar named by `--cookie-jar`, or nil without the flag.
    static func open(_ path: String?) throws(CLIFailure) -> CookieJarFile? {
        guard let path else { return nil }
        do {
            return CookieJarFile(path: path, storage: try FileCookieStorage(fileURL: URL(fileURLWithPath: path)))
        } catch {
            throw CLIFailure(.unreadableInput, "--cookie-jar '\(path)': \(error.message)")
        }
    }

    /// Writes the jar; a jar that cannot be written fails the command (exit status 1).
    func save() throws(CLIFailure) {
        do {
            try self.storage.save()
        } catch {
            throw CLIFailure(.failure, "--cookie-jar '\(self.path)': \(error.message)")
        }
    }

    /// The request as it will go out, with the jar's cookies after its own `Cookie` field: what
    /// `--offline` and `--verbose` show.
    func showing(_ built: BuiltRequest) -> BuiltRequest {
        guard built.request.options.httpShouldHandleCookies != false, let cookies = self.storage.cookieHeader(for: built.request.url) else {
            return built
        }
        var shown = built
        let own = built.request.headerFields[values: .cookie]
        shown.request.headerFields[values: .cookie] = [(own + [cookies]).joined(separator: "; ")]
        return shown
    }
}

extension Error {
    /// The message of a ``CourierError``, else the description.
    fileprivate var message: String { (self as? CourierError)?.message ?? "\(self)" }
}
