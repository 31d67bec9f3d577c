import Foundation
import Testing

@testable import Courier

@Suite("Cookie dates (RFC 6265 5.1.1)")
struct CookieDateTests {
    /// 1994-11-06 08:49:37 UTC, RFC 9110's example.
    let example: Int64 = 784_111_777

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
        "Sunday, 06-Nov-94 08:49:37 GMT",  // RFC 850
        "Sun Nov  6 08:49:37 1994",  // asctime
        "Sun, 06-Nov-1994 08:49:37 GMT",  // Netscape's cookie form
        "06 Nov 1994 08:49:37 GMT",  // no weekday
        "Sun, 6 Nov 1994 08:49:37 UTC",
        "Sun, 06 November 1994 08:49:37 GMT",
        "sun, 06 nov 1994 08:49:37 gmt",
        "Sun,06-Nov-1994 08:49:37",
        "Sun, 06 Nov 1994 8:49:37 GMT",
    ])
    func everyFormServersSend(_ text: String) {
        #expect(HTTPDate.cookieDateSeconds(text) == self.example, "\(text)")
    }

    @Test(arguments: [
        "",
        "0",
        "-1",
        "Sun, 06 Nov 1994 GMT",  // no time
        "Sun, 31 Feb 1994 08:49:37 GMT",  // no such day
        "Sun, 06 Nov 1600 08:49:37 GMT",  // before 1601
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:370 GMT",  // three-digit seconds
        "Sun, 06 Xyz 1994 08:49:37 GMT",
    ])
    func refusesWhatNamesNoDate(_ text: String) {
        #expect(HTTPDate.cookieDateSeconds(text) == nil, "\(text)")
    }

    @Test func twoDigitYearsFollowTheRFC() {
        #expect(HTTPDate.cookieDateSeconds("Thu, 01-Jan-70 00:00:01 GMT") == 1)
        #expect(HTTPDate.parseCookieDate("Wed, 09-Jun-21 10:18:14 GMT") == HTTPDate.parseCookieDate("Wed, 09 Jun 2021 10:18:14 GMT"))
        #expect(HTTPDate.cookieDateSeconds("Fri, 29 Feb 2008 00:00:00 GMT") != nil, "a leap day")
        #expect(HTTPDate.cookieDateSeconds("Fri, 29 Feb 2100 00:00:00 GMT") == nil, "2100 is not a leap year")
    }

    @Test func formatsIMFFixdateAndReadsItBack() {
        let date = Date(timeIntervalSince1970: TimeInterval(self.example))
        #expect(HTTPDate.format(date) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        for seconds in stride(from: Int64(-5_000_000_000), to: 10_000_000_000, by: 123_456_789) where seconds > -11_644_473_600 {
            let text = HTTPDate.format(Date(timeIntervalSince1970: TimeInterval(seconds)))
            #expect(HTTPDate.cookieDateSeconds(text) == seconds, "\(text)")
        }
    }
}
