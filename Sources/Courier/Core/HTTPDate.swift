import Foundation

/// Dates as HTTP writes them: read as RFC 9110 defines an HTTP-date for header fields, read
/// leniently for cookies, written as IMF-fixdate.
///
/// - ``parse(_:)`` reads an HTTP-date (RFC 9110 section 5.6.7), as the cache must read `Date`,
///   `Expires` and `Last-Modified` and as `Retry-After` is read: IMF-fixdate
///   (`Sun, 06 Nov 1994 08:49:37 GMT`) and the two obsolete forms recipients must accept, RFC 850
///   (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`). Anything else
///   is no date: a two-digit year outside RFC 850's form, another zone than `GMT`, a missing comma
///   or colon, an extra space, two values joined by a comma. For `Expires`, RFC 9111 then says
///   "already expired". Names are matched without regard to case (`THU`, `dec`, `gmt`): the
///   formats are case-sensitive, but RFC 9111 4.2 asks a cache to read them so, as browsers do.
/// - ``parseCookieDate(_:)`` is RFC 6265's cookie-date algorithm (section 5.1.1), for `Set-Cookie`'s
///   `Expires` attribute only: it accepts every form servers send in cookies (dashes, a missing
///   weekday, two-digit years, `UTC`).
enum HTTPDate {
    private static let months: [[UInt8]] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        .map { Array($0.utf8) }
    /// The day names of an HTTP-date, lower-cased (the date is lower-cased before it is read).
    private static let dayNames: [[UInt8]] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"].map { Array($0.utf8) }
    private static let longDayNames: [[UInt8]] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
        .map { Array($0.utf8) }

    // MARK: HTTP-date

    /// The date the HTTP-date `text` names (RFC 9110 section 5.6.7), or nil when `text` is not one.
    static func parse(_ text: some StringProtocol, now: Date = Date()) -> Date? {
        guard let seconds = self.parseSeconds(text, now: now) else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// The date the HTTP-date `text` names, as seconds since 1970, or nil. An RFC 850 date's
    /// two-digit year is the year of `now`'s century, or of the century before when that would be
    /// more than 50 years after `now` (RFC 9110 5.6.7).
    static func parseSeconds(_ text: some StringProtocol, now: Date = Date()) -> Int64? {
        // ASCII letters lower-cased: names match whatever their case (RFC 9111 4.2).
        let bytes = text.utf8.map(\.lowercasedASCII)
        switch bytes.count {
        case 29 where bytes[3] == UInt8(ascii: ","):
            // IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
            guard Self.dayNames.contains(where: { $0[...] == bytes[0..<3] }),
                Self.matches(bytes, at: 4, " "), let day = Self.digits(bytes, at: 5, count: 2),
                Self.matches(bytes, at: 7, " "), let month = Self.month(bytes, at: 8),
                Self.matches(bytes, at: 11, " "), let year = Self.digits(bytes, at: 12, count: 4),
                Self.matches(bytes, at: 16, " "), let time = Self.time(bytes, at: 17),
                Self.matches(bytes, at: 25, " gmt")
            else { return nil }
            return Self.seconds(year: year, month: month, day: day, time: time)
        case 24:
            // asctime: `Sun Nov  6 08:49:37 1994`.
            guard Self.dayNames.contains(where: { $0[...] == bytes[0..<3] }),
                Self.matches(bytes, at: 3, " "), let month = Self.month(bytes, at: 4), Self.matches(bytes, at: 7, " "),
                let day = bytes[8] == UInt8(ascii: " ") ? Self.digits(bytes, at: 9, count: 1) : Self.digits(bytes, at: 8, count: 2),
                Self.matches(bytes, at: 10, " "), let time = Self.time(bytes, at: 11),
                Self.matches(bytes, at: 19, " "), let year = Self.digits(bytes, at: 20, count: 4)
            else { return nil }
            return Self.seconds(year: year, month: month, day: day, time: time)
        default:
            // RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`.
            guard let comma = bytes.firstIndex(of: UInt8(ascii: ",")), bytes.count == comma + 24,
                Self.longDayNames.contains(where: { $0[...] == bytes[0..<comma] }),
                Self.matches(bytes, at: comma + 1, " "), let day = Self.digits(bytes, at: comma + 2, count: 2),
                Self.matches(bytes, at: comma + 4, "-"), let month = Self.month(bytes, at: comma + 5),
                Self.matches(bytes, at: comma + 8, "-"), let shortYear = Self.digits(bytes, at: comma + 9, count: 2),
                Self.matches(bytes, at: comma + 11, " "), let time = Self.time(bytes, at: comma + 12),
                Self.matches(bytes, at: comma + 20, " gmt")
            else { return nil }
            let nowDays = Int((now.timeIntervalSince1970 / 86_400).rounded(.down))
            let currentYear = Self.civilFromDays(nowDays).year
            var year = currentYear - currentYear % 100 + shortYear
            if year > currentYear + 50 { year -= 100 }
            return Self.seconds(year: year, month: month, day: day, time: time)
        }
    }

    private static func matches(_ bytes: [UInt8], at index: Int, _ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        return literal.withUTF8Buffer { literal in
            (0..<count).allSatisfy { bytes[index + $0] == literal[$0] }
        }
    }

    /// Exactly `count` digits at `index`.
    private static func digits(_ bytes: [UInt8], at index: Int, count: Int) -> Int? {
        guard index + count <= bytes.count else { return nil }
        var value = 0
        for byte in bytes[index..<(index + count)] {
            guard Self.isDigit(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }

    /// A month name, lower-cased, at `index`: 1…12.
    private static func month(_ bytes: [UInt8], at index: Int) -> Int? {
        guard index + 3 <= bytes.count else { return nil }
        return Self.months.firstIndex { $0[...] == bytes[index..<(index + 3)] }.map { $0 + 1 }
    }

    /// `HH:MM:SS` at `index`.
    private static func time(_ bytes: [UInt8], at index: Int) -> (Int, Int, Int)? {
        guard let hour = Self.digits(bytes, at: index, count: 2), Self.matches(bytes, at: index + 2, ":"),
            let minute = Self.digits(bytes, at: index + 3, count: 2), Self.matches(bytes, at: index + 5, ":"),
            let second = Self.digits(bytes, at: index + 6, count: 2)
        else { return nil }
        return (hour, minute, second)
    }

    /// Seconds since 1970 of a date and time, or nil when there is no such day or time (a leap
    /// second, `:60`, is taken as the next second).
    private static func seconds(year: Int, month: Int, day: Int, time: (Int, Int, Int)) -> Int64? {
        let (hour, minute, second) = time
        guard day >= 1, day <= Self.daysIn(month: month, year: year), hour <= 23, minute <= 59, second <= 60 else { return nil }
        let days = Self.daysFromCivil(year: year, month: month, day: day)
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    // MARK: cookie-date

    /// The date `text` names as RFC 6265's cookie-date algorithm reads it, or nil when it names
    /// none (a year before 1601, a 31st of February, a missing time…). For cookies only.
    static func parseCookieDate(_ text: some StringProtocol) -> Date? {
        guard let seconds = self.cookieDateSeconds(text) else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// The date `text` names as a cookie-date, as seconds since 1970, or nil.
    static func cookieDateSeconds(_ text: some StringProtocol) -> Int64? {
        var time: (Int, Int, Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        var token: [UInt8] = []
        token.reserveCapacity(16)

        func take(_ token: [UInt8]) {
            if time == nil, let found = Self.time(token) {
                time = found
            } else if day == nil, let found = Self.leadingDigits(token, min: 1, max: 2) {
                day = found
            } else if month == nil, token.count >= 3,
                let index = Self.months.firstIndex(where: { $0 == token[0..<3].map { $0 | 0x20 } })
            {
                month = index + 1
            } else if year == nil, let found = Self.leadingDigits(token, min: 2, max: 4) {
                year = found
            }
        }

        for byte in text.utf8 {
            if Self.isDelimiter(byte) {
                if !token.isEmpty {
                    take(token)
                    token.removeAll(keepingCapacity: true)
                }
            } else {
                token.append(byte)
            }
        }
        if !token.isEmpty { take(token) }

        guard let (hour, minute, second) = time, let day, let month, var year else { return nil }
        if year >= 70, year <= 99 { year += 1900 } else if year >= 0, year <= 69 { year += 2000 }
        guard day >= 1, day <= Self.daysIn(month: month, year: year), year >= 1601, hour <= 23, minute <= 59, second <= 59 else {
            return nil
        }
        let days = Self.daysFromCivil(year: year, month: month, day: day)
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// `date` as an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func format(_ date: Date) -> String {
        // An HTTP date has a four-digit year: a date outside years 1 to 9999 (a cookie file's
        // expiry of 2⁶³ seconds, which `Int64` cannot hold) is written as the nearest end.
        let interval = date.timeIntervalSince1970
        let seconds = interval.isNaN ? 0 : Int64(min(max(interval, -62_135_596_800), 253_402_300_799).rounded(.down))
        let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        let rest = Int(seconds - Int64(days) * 86_400)
        let (year, month, day) = Self.civilFromDays(days)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((days % 7) + 7) % 7]
        let monthName = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][month - 1]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekday), \(two(day)) \(monthName) \(year) \(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60)) GMT"
    }

    // MARK: The cookie-date algorithm's pieces

    /// RFC 6265's delimiter: %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E.
    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte) || (0x5B...0x60).contains(byte)
            || (0x7B...0x7E).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// `min`…`max` digits, then nothing or a non-digit followed by anything.
    private static func leadingDigits(_ token: [UInt8], min: Int, max: Int) -> Int? {
        var value = 0
        var count = 0
        for byte in token {
            guard Self.isDigit(byte) else { break }
            count += 1
            if count > max { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return count >= min ? value : nil
    }

    /// `h:m:s` with one or two digits each, then nothing or a non-digit followed by anything.
    private static func time(_ token: [UInt8]) -> (Int, Int, Int)? {
        var fields: [Int] = []
        var index = 0
        while fields.count < 3 {
            var value = 0
            var digits = 0
            while index < token.count, Self.isDigit(token[index]), digits < 3 {
                value = value * 10 + Int(token[index] - 0x30)
                digits += 1
                index += 1
            }
            guard digits >= 1, digits <= 2 else { return nil }
            fields.append(value)
            if fields.count < 3 {
                guard index < token.count, token[index] == UInt8(ascii: ":") else { return nil }
                index += 1
            }
        }
        if index < token.count, Self.isDigit(token[index]) { return nil }
        return (fields[0], fields[1], fields[2])
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
