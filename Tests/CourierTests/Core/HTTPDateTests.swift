import Foundation
import Testing

@testable import Courier

/// RFC 9110 5.6.7's HTTP-date, as the cache reads `Date`, `Expires` and `Last-Modified`.
@Suite("HTTP dates (RFC 9110 5.6.7)")
struct HTTPDateTests {
    /// 1994-11-06 08:49:37 UTC, RFC 9110's example.
    let example: Int64 = 784_111_777
    /// 2026-11-29, for RFC 850's two-digit years.
    let now = Date(timeIntervalSince1970: 1_795_910_400)

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
        "Sunday, 06-Nov-94 08:49:37 GMT",  // RFC 850
        "Sun Nov  6 08:49:37 1994",  // asctime
    ])
    func theThreeFormsRecipientsMustAccept(_ text: String) {
        #expect(HTTPDate.parseSeconds(text, now: self.now) == self.example, "\(text)")
    }

    @Test(arguments: [
        "",
        "0",
        "-1",
        "Sun, 06 Nov 94 08:49:37 GMT",  // two-digit year in IMF-fixdate
        "Sun, 06 Nov 1994 08:49:37 UTC",  // another zone
        "Sun, 06 Nov 1994 08:49:37 +0000",
        "Sun 06 Nov 1994 08:49:37 GMT",  // no comma
        "Sun, 06 Nov 1994 084937 GMT",  // no colons
        "Sun, 06 Nov 1994 08:49:37 GMT ",  // extra space
        " Sun, 06 Nov 1994 08:49:37 GMT",
        "Sun,  06 Nov 1994 08:49:37 GMT",
        "Sun, 6 Nov 1994 08:49:37 GMT",  // one-digit day
        "Sun, 06 Nov 1994 8:49:37 GMT",  // one-digit hour
        "Sun, 06-Nov-1994 08:49:37 GMT",  // Netscape's cookie form
        "06 Nov 1994 08:49:37 GMT",  // no weekday
        "Sun, 06 November 1994 08:49:37 GMT",
        "Sun, 31 Feb 1994 08:49:37 GMT",  // no such day
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT, Mon, 07 Nov 1994 08:49:37 GMT",  // two fields joined
        "Sun, 06-Nov-94 08:49:37 GMT",  // RFC 850 with a short weekday
        "Sunday, 06 Nov 1994 08:49:37 GMT",
        "Sun Nov 6 08:49:37 1994",  // asctime with one space
        "Sun Nov  6 08:49:37 94",
    ])
    func anythingElseIsNoDate(_ text: String) {
        #expect(HTTPDate.parseSeconds(text, now: self.now) == nil, "\(text)")
    }

    /// Names in any case (RFC 9111 4.2: a cache SHOULD match dates case-insensitively; browsers
    /// do, and the cache-tests suite checks it).
    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 gmt", "sun, 06 Nov 1994 08:49:37 GMT", "SUN, 06 NOV 1994 08:49:37 GMT", "Sun, 06 nov 1994 08:49:37 gMT",
        "SUNDAY, 06-NOV-94 08:49:37 GMT", "sun nov  6 08:49:37 1994",
    ])
    func namesAreReadInAnyCase(_ text: String) {
        #expect(HTTPDate.parseSeconds(text, now: self.now) == self.example, "\(text)")
    }

    @Test func anRFC850YearMoreThanFiftyYearsAheadIsOfTheCenturyBefore() {
        // 2026: "76" is 2076 (50 years ahead), "77" is 1977.
        let in2076 = HTTPDate.parseSeconds("Sunday, 01-Nov-76 00:00:00 GMT", now: self.now)
        let in1977 = HTTPDate.parseSeconds("Tuesday, 01-Nov-77 00:00:00 GMT", now: self.now)
        #expect(in2076 == HTTPDate.parseSeconds("Sun, 01 Nov 2076 00:00:00 GMT"))
        #expect(in1977 == HTTPDate.parseSeconds("Tue, 01 Nov 1977 00:00:00 GMT"))
    }

    @Test func readsWhatItWrites() {
        for seconds in stride(from: Int64(0), to: 10_000_000_000, by: 123_456_789) {
            let text = HTTPDate.format(Date(timeIntervalSince1970: TimeInterval(seconds)))
            #expect(HTTPDate.parseSeconds(text) == seconds, "\(text)")
        }
    }
}
