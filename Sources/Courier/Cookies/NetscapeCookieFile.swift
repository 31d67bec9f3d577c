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
/// The fields are the domain (`#HttpOnly_` in front for an `HttpOnly` cookie), `TRUE` for a
/// cookie that also goes to subdomains (written with a leading dot on the domain; when read, the
/// flag decides, as curl reads it: `.example.com` with `FALSE` is a host-only cookie for
/// `example.com`), the path, `TRUE` for `Secure`, the expiry in seconds since 1970 (0 for a
/// session cookie), the name and the value.
/// The format has no place for `SameSite`: a cookie read back has no `SameSite`. Nor has it one
/// for the creation date, so ``encode(_:)`` writes it in a comment above each cookie
/// (`# created 1700000000.25`, seconds since 1970), which curl and wget skip. A cookie without
/// one (a file curl wrote) was created before the file was read, at a time unknown: it is read
/// as created at `Date.distantPast`, in the file's order, so that
/// ``CookieStorage/removeCookies(since:)`` keeps it.
public enum NetscapeCookieFile {
    /// The first line curl writes, which curl and wget expect.
    public static let header = "# Netscape HTTP Cookie File"

    /// What starts the comment ``encode(_:)`` writes above a cookie's line: its creation date.
    static let creationPrefix = "# created "

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
    /// listed. Tabs after the seventh field belong to the value (``encode(_:)`` writes a value's
    /// tabs as they are). A cookie's creation date is read from the `# created` comment on the
    /// line just above it; without one, it is `Date.distantPast`.
    ///
    /// - Parameters:
    ///   - text: The file's text.
    ///   - now: The time against which expiry is checked.
    ///   - publicSuffixes: When given, a cookie for a domain and its subdomains whose domain is a
    ///     public suffix (`.com`, `.co.uk`) is skipped and its line listed, as curl does: it would
    ///     be sent to every site under the suffix, which no `Set-Cookie` field may ask for. A
    ///     host-only cookie for such a name is kept. ``FileCookieStorage`` passes its list.
    public static func decode(_ text: String, now: Date = Date(), publicSuffixes: PublicSuffixList? = nil) -> Contents {
        var contents = Contents(cookies: [], invalidLines: [])
        // Lines end with LF or CRLF: `"\r\n"` is one `Character`, which a split on `"\n"` misses.
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        // The creation date the line just read gave, for the line that follows it only.
        var created: Date?
        for (number, rawLine) in lines.enumerated() {
            var line = rawLine
            if line.last == "\r" { line = line.dropLast() }
            let creationDate = created ?? .distantPast
            created = nil
            var isHTTPOnly = false
            if line.hasPrefix(Self.creationPrefix) {
                if let seconds = Double(line.dropFirst(Self.creationPrefix.count)), seconds.isFinite {
                    created = Date(timeIntervalSince1970: seconds)
                }
                continue
            } else if line.hasPrefix("#HttpOnly_") {
                isHTTPOnly = true
                line = line.dropFirst("#HttpOnly_".count)
            } else if line.hasPrefix("#") || line.allSatisfy({ $0 == " " || $0 == "\t" }) {
                continue
            }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            // curl accepts a line without the value field: the value is then empty. A control
            // character (the tabs apart) makes the line malformed, as it makes a `Set-Cookie`
            // field invalid (RFC 6265bis 5.6): it would go into the `Cookie` field.
            // More than seven fields: the value holds tabs. A name is then required: curl reads
            // such a line as malformed, and without a name the fields cannot be told apart.
            guard fields.count == 6 || fields.count == 7 || (fields.count > 7 && !fields[5].isEmpty),
                !line.utf8.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }),
                !fields[0].isEmpty, let subdomains = Self.flag(fields[1]), let secure = Self.flag(fields[3]),
                let expiry = Int64(fields[4]), fields[2].hasPrefix("/")
            else {
                contents.invalidLines.append(number + 1)
                continue
            }
            let expiresDate = expiry == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(expiry))
            let value = fields.count > 6 ? String(line[fields[6].startIndex...]) : ""
            let cookie = Cookie(
                name: String(fields[5]), value: value,
                domain: String(fields[0]), path: String(fields[2]), expiresDate: expiresDate,
                isHostOnly: !subdomains, isSecure: secure, isHTTPOnly: isHTTPOnly,
                creationDate: creationDate)
            if cookie.isExpired(at: now) { continue }
            if let publicSuffixes, !cookie.isHostOnly, !CookieMatching.isIPAddress(cookie.domain),
                publicSuffixes.isPublicSuffix(cookie.domain)
            {
                contents.invalidLines.append(number + 1)
                continue
            }
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

    /// Writes cookies in the format, after ``header``; a session cookie gets expiry 0. Above each
    /// cookie's line, a comment gives its creation date (seconds since 1970), which
    /// ``decode(_:now:publicSuffixes:)`` reads back and curl and wget skip.
    ///
    /// A value's tabs are written as they are (``decode(_:now:publicSuffixes:)`` reads them back;
    /// curl skips such a line, as it refuses such a cookie). A cookie whose name or path holds a
    /// tab is left out (``canEncode(_:)``): the format has no way to tell that tab from the field
    /// separators; so is a nameless cookie whose value holds one.
    public static func encode(_ cookies: some Sequence<Cookie>) -> String {
        var text = Self.header
            + "\n# Written by Courier. Each line: domain, subdomains, path, secure, expiry, name, value;"
            + " the comment above it: when the cookie was created, in seconds since 1970.\n\n"
        for cookie in cookies where Self.canEncode(cookie) {
            let created = cookie.creationDate.timeIntervalSince1970
            if created.isFinite { text += "\(Self.creationPrefix)\(created)\n" }
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

    /// Whether ``encode(_:)`` writes `cookie`: its name and path hold no tab, and its value holds
    /// none either when it has no name (``decode(_:now:publicSuffixes:)`` reads a value's tabs
    /// only after a name, as curl refuses such a line: written, the cookie would not come back);
    /// and no field holds another control character (a line break in a cookie made by hand,
    /// not by `Set-Cookie`, which refuses them, would end the line and start one of its own: a
    /// cookie for any domain the next time the file is read).
    public static func canEncode(_ cookie: Cookie) -> Bool {
        !cookie.name.utf8.contains(0x09) && !cookie.path.utf8.contains(0x09) && !(cookie.name.isEmpty && cookie.value.utf8.contains(0x09))
            && !Self.holdsAControlCharacter(cookie.name) && !Self.holdsAControlCharacter(cookie.value)
            && !Self.holdsAControlCharacter(cookie.domain) && !Self.holdsAControlCharacter(cookie.path)
    }

    /// Whether `text` holds a control character other than a tab (which each field's own rule
    /// decides on): below 0x20, or DEL.
    private static func holdsAControlCharacter(_ text: String) -> Bool {
        text.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    private static func flag(_ field: Substring) -> Bool? {
        if field.equalsLowercased("true") { return true }
        if field.equalsLowercased("false") { return false }
        return nil
    }
}
