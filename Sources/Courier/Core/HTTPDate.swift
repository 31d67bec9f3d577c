import Foundation

/// Dates as HTTP writes them, read leniently and written as IMF-fixdate.
///
/// Reading follows RFC 6265's cookie-date algorithm (section 5.1.1), which accepts every form
/// servers send: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850 (`Sunday, 06-Nov-94
/// 08:49:37 GMT`), asctime (`Sun Nov  6 08:49:37 1994`) and their common variants (dashes,
/// missing weekday, two-digit years, `UTC`). The cache and the cookie store both read dates with it.
enum HTTPDate {
    private static let months: [[UInt8]] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        .map { Array($0.utf8) }

    /// The date `text` names, or nil when it names none (a year before 1601, a 31st of
    /// February, a missing time…).
    static func parse(_ text: some StringProtocol) -> Date? {
        guard let seconds = self.parseSeconds(text) else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// The date `text` names, as seconds since 1970, or nil.
    static func parseSeconds(_ text: some StringProtocol) -> Int64? {
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
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        let rest = Int(seconds - Int64(days) * 86_400)
        let (year, month, day) = Self.civilFromDays(days)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((days % 7) + 7) % 7]
        let monthName = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][month - 1]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekday), \(two(day)) \(monthName) \(year) \(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60)) GMT"
    }

    // MARK: The algorithm's pieces

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
