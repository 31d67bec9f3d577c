import Foundation

/// The Netscape `cookies.txt` format that curl (`-b`/`-c`), wget (`--load-cookies`/
/// `--save-cookies`) and browsers' exporters read and write: one cookie per line, seven fields
/// separated by tabs.
///
/// ```
/// # Netscape HTTP Cookie File
/// .example.com	TRUE	/	FALSE	1767225600	theme	dark
/// #HttpOnly_example.com	FALSE	/account	TRUE	0	session	abc123
/// ```
///
/// The fields are the domain (a leading dot and `TRUE` in the second field for a cookie that
/// also goes to subdomains; `#HttpOnly_` in front for an `HttpOnly` cookie), the path, `TRUE` for
/// `Secure`, the expiry in seconds since 1970 (0 for a session cookie), the name and the value.
/// The format has no place for `SameSite` or the creation date: a cookie read back has no
/// `SameSite`, and its creation date is the time it was read (the file's order is kept).
public enum NetscapeCookieFile {
    /// The first line curl writes, which curl and wget expect.
    public static let header = "# Netscape HTTP Cookie File"

    /// What a file held: the cookies, and the numbers (from 1) of the lines that were neither
    /// comments nor cookies.
    public struct Contents: Sendable {
        /// The cookies, in file order; expired ones are left out.
        public var cookies: [Cookie]
        /// The line numbers of malformed lines, which were skipped.
        public var invalidLines: [Int]
    }

    /// Reads the text of a cookies file. Comments, blank lines and cookies expired at `now` are
    /// skipped; malformed lines (a control character other than the tabs is one) are skipped and
    /// listed.
    public static func decode(_ text: String, now: Date = Date()) -> Contents {
        var contents = Contents(cookies: [], invalidLines: [])
        // Lines end with LF or CRLF: `"\r\n"` is one `Character`, which a split on `"\n"` misses.
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        for (number, rawLine) in lines.enumerated() {
            var line = rawLine
            if line.last == "\r" { line = line.dropLast() }
            var isHTTPOnly = false
            if line.hasPrefix("#HttpOnly_") {
                isHTTPOnly = true
                line = line.dropFirst("#HttpOnly_".count)
            } else if line.hasPrefix("#") || line.allSatisfy({ $0 == " " || $0 == "\t" }) {
                continue
            }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            // curl accepts a line without the value field: the value is then empty. A control
            // character (the tabs apart) makes the line malformed, as it makes a `Set-Cookie`
            // field invalid (RFC 6265bis 5.6): it would go into the `Cookie` field.
            guard fields.count == 7 || fields.count == 6,
                !line.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }),
                !fields[0].isEmpty, let subdomains = Self.flag(fields[1]), let secure = Self.flag(fields[3]),
                let expiry = Int64(fields[4]), fields[2].hasPrefix("/")
            else {
                contents.invalidLines.append(number + 1)
                continue
            }
            let expiresDate = expiry == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(expiry))
            let cookie = Cookie(
                name: String(fields[5]), value: fields.count == 7 ? String(fields[6]) : "",
                domain: String(fields[0]), path: String(fields[2]), expiresDate: expiresDate,
                isHostOnly: !subdomains && !fields[0].hasPrefix("."), isSecure: secure, isHTTPOnly: isHTTPOnly,
                creationDate: now)
            if cookie.isExpired(at: now) { continue }
            contents.cookies.append(cookie)
        }
        return contents
    }

    /// A date as the file's expiry: whole seconds, at least 1 (0 is a session cookie's) and at
    /// most the end of year 9999 (a file's expiry of 2⁶³ seconds came back as a date `Int64`
    /// cannot hold).
    private static func expiry(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970.rounded(.up)
        return seconds.isNaN ? 1 : Int64(min(max(seconds, 1), 253_402_300_799))
    }

    /// Writes cookies in the format, after ``header``; a session cookie gets expiry 0.
    public static func encode(_ cookies: some Sequence<Cookie>) -> String {
        var text = Self.header + "\n# Written by Courier. Each line: domain, subdomains, path, secure, expiry, name, value.\n\n"
        for cookie in cookies {
            if cookie.isHTTPOnly { text += "#HttpOnly_" }
            text += cookie.isHostOnly ? cookie.domain : "." + cookie.domain
            text += cookie.isHostOnly ? "\tFALSE\t" : "\tTRUE\t"
            text += cookie.path
            text += cookie.isSecure ? "\tTRUE\t" : "\tFALSE\t"
            text += String(cookie.expiresDate.map { Self.expiry($0) } ?? 0)
            text += "\t\(cookie.name)\t\(cookie.value)\n"
        }
        return text
    }

    private static func flag(_ field: Substring) -> Bool? {
        if field.equalsLowercased("true") { return true }
        if field.equalsLowercased("false") { return false }
        return nil
    }
}
