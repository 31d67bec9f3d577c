// Ported from curl's test cases tests/data/test8, test31, test61, test327, test329, test1105,
// test1216, test1218, test1228 and test1415 (https://github.com/curl/curl),
// Copyright (C) Daniel Stenberg, <daniel@haxx.se>, et al., licensed under the curl license.

import Foundation
import Testing

@testable import Courier

/// curl's cookie test cases, against Courier's ``MemoryCookieStorage`` and
/// ``NetscapeCookieFile``: the `Set-Cookie` fields of each case's response, stored for the case's
/// URL, then the `Cookie` field Courier sends where curl's protocol log shows one, or the cookies
/// file Courier writes where curl's case checks its jar (compared line by line, in any order:
/// curl writes its hash's order). The clock stands at 2023-11-14 22:13:20 UTC; curl's `%days[400]`
/// is that plus 400 days (both cap a cookie's life there, RFC 6265bis 5.5).
///
/// Where Courier answers otherwise on purpose, the test asserts Courier's answer with curl's in
/// a comment. Courier follows RFC 6265bis (as browsers and Go's jar do) where curl keeps older
/// rules:
/// - a `Path` attribute is kept as sent; curl drops a trailing `/` (`/silly/` is `/silly`), so
///   for curl `path=/overwrite/` and `path=/overwrite` are one cookie, for Courier two;
/// - a `Path` attribute that does not start with `/` (`path="/silly/"`, quoted) is the default
///   path (RFC 6265bis 5.6.4); curl unquotes it;
/// - a `Set-Cookie` without `=` is a cookie with an empty name (RFC 6265bis 5.6, step 5); curl
///   drops it;
/// - a horizontal tab inside a name or value is allowed (RFC 6265bis 5.6 aborts only on the other
///   control characters); curl drops the cookie, as Go does.
@Suite("curl's cookie test cases")
struct CurlCookieJarTests {
    static func store() -> MemoryCookieStorage {
        // libpsl's list has `com` and `se`; `fake`, `foo` and `curl` are no public suffixes there.
        MemoryCookieStorage(publicSuffixes: PublicSuffixList(rules: "com\nse\n"), clock: ManualClock().function)
    }

    /// The lines of the cookies file Courier writes for `store` (without its comment header).
    static func jar(_ store: MemoryCookieStorage) -> Set<String> {
        Set(NetscapeCookieFile.encode(store.allCookies).split(separator: "\n").map(String.init).filter { !$0.hasPrefix("# ") && $0 != NetscapeCookieFile.header })
    }

    static let in400Days = String(1_700_000_000 + 400 * 86_400)

    // curl: test31, "HTTP with weirdly formatted cookies and cookiejar storage"
    @Test func test31() {
        let store = Self.store()
        // The last field's name is curl's `%hex[...]hex%` bytes, UTF-8 that spells Latin-1 text.
        let oddName = String(decoding: [0xC3, 0x82, 0xC2, 0xB3, 0xC3, 0x83, 0x5C, 0x78, 0x39, 0x32, 0xC3, 0x83, 0x5C, 0x78, 0x39, 0x61,
                                        0xC3, 0x83, 0x5C, 0x78, 0x38, 0x64, 0xC3, 0x83, 0x5C, 0x78, 0x39, 0x37] as [UInt8], as: UTF8.self)
        store.storeCookies(fromSetCookieFields: [
            "", ";", "blankdomain=sure; domain=; path=/",
            "foobar=name; domain=anything.com; path=/ ; secure",
            "ismatch=this  ; domain=test31.curl; path=/silly/",
            "ISMATCH=this  ; domain=test31.curl; path=/silly/",
            "overwrite=this  ; domain=test31.curl; path=/overwrite/",
            "overwrite=this2  ; domain=test31.curl; path=/overwrite",
            "sec1value=secure1  ; domain=test31.curl; path=/secure1/ ; secure",
            "sec2value=secure2  ; domain=test31.curl; path=/secure2/ ; secure",
            "sec3value=secure3  ; domain=test31.curl; path=/secure3/ ; secure",
            "sec4value=secure4  ; secure; domain=test31.curl; path=/secure4/ ;",
            "sec5value=secure5  ; secure; domain=test31.curl; path=/secure5/ ;",
            "sec6value=secure6  ; secure ; domain=test31.curl; path=/secure6/ ;",
            "sec7value=secure7  ; secure   ; domain=test31.curl; path=/secure7/ ;",
            "sec8value=secure8  ; secure ; domain=test31.curl; path=/secure8/ ;",
            "secure=very1  ; secure; domain=test31.curl; path=/secure9/;",
            "httpo1=value1  ; domain=test31.curl; path=/p1/; httponly",
            "httpo2=value2  ; domain=test31.curl; path=/p2/; httponly",
            "httpo3=value3  ; httponly; domain=test31.curl; path=/p3/;",
            "httpo4=value4  ; httponly; domain=test31.curl; path=/p4/;",
            "httponly=myvalue1  ; domain=test31.curl; path=/p4/; httponly",
            "httpandsec=myvalue2  ; domain=test31.curl; path=/p4/; httponly; secure",
            "httpandsec2=myvalue3; domain=test31.curl; path=/p4/; httponly; secure",
            "httpandsec3=myvalue4  ; domain=test31.curl; path=/p4/; httponly; secure",
            "httpandsec4=myvalue5  ; domain=test31.curl; path=/p4/; httponly; secure",
            "httpandsec5=myvalue6  ; domain=test31.curl; path=/p4/; secure; httponly",
            "httpandsec6=myvalue7  ; domain=test31.curl; path=/p4/; secure; httponly",
            "httpandsec7=myvalue8  ; domain=test31.curl; path=/p4/; secure; httponly",
            "httpandsec8=myvalue9; domain=test31.curl; path=/p4/; secure; httponly",
            "partmatch=present; domain=test31.curl ; path=/;",
            "eat=this; domain=moo.foo.moo;",
            "eat=this-too; domain=.foo.moo;",
            "nodomainnovalue",
            "nodomain=value; expires=Fri Feb 13 11:56:27 GMT 2037",
            "novalue; domain=reallysilly",
            "test=yes; domain=foo.com; expires=Sat Feb 2 11:56:27 GMT 2030",
            "test2=yes; domain=se; expires=Sat Feb 2 11:56:27 GMT 2030",
            "magic=yessir; path=/silly/; HttpOnly",
            "blexp=yesyes; domain=test31.curl; domain=test31.curl; expiry=totally bad;",
            "partialip=nono; domain=.0.0.1;",
            "withspaces=  yes  within and around    ;",
            "withspaces2 =before equals;",
            "prespace=  yes before;",
            "securewithspace=after    ; secure",
            "\(oddName)=%96%A6g%9Ay%B0%A5g%A7tm%7C%95%9A",
        ], for: URL(string: "http://test31.curl/we/want/31")!)
        #expect(Self.jar(store) == [
            "test31.curl\tFALSE\t/we/want\tFALSE\t0\t\(oddName)\t%96%A6g%9Ay%B0%A5g%A7tm%7C%95%9A",
            "test31.curl\tFALSE\t/we/want\tFALSE\t0\tprespace\tyes before",
            "test31.curl\tFALSE\t/we/want\tFALSE\t0\twithspaces2\tbefore equals",
            "test31.curl\tFALSE\t/we/want\tFALSE\t0\twithspaces\tyes  within and around",
            ".test31.curl\tTRUE\t/we/want\tFALSE\t0\tblexp\tyesyes",
            // curl: `/silly` (a trailing `/` dropped), here and below.
            "#HttpOnly_test31.curl\tFALSE\t/silly/\tFALSE\t0\tmagic\tyessir",
            "test31.curl\tFALSE\t/we/want\tFALSE\t\(Self.in400Days)\tnodomain\tvalue",
            ".test31.curl\tTRUE\t/\tFALSE\t0\tpartmatch\tpresent",
            "#HttpOnly_.test31.curl\tTRUE\t/p4/\tFALSE\t0\thttponly\tmyvalue1",
            "#HttpOnly_.test31.curl\tTRUE\t/p4/\tFALSE\t0\thttpo4\tvalue4",
            "#HttpOnly_.test31.curl\tTRUE\t/p3/\tFALSE\t0\thttpo3\tvalue3",
            "#HttpOnly_.test31.curl\tTRUE\t/p2/\tFALSE\t0\thttpo2\tvalue2",
            "#HttpOnly_.test31.curl\tTRUE\t/p1/\tFALSE\t0\thttpo1\tvalue1",
            // curl: one cookie, `/overwrite` `this2` (the two paths are one to curl).
            ".test31.curl\tTRUE\t/overwrite/\tFALSE\t0\toverwrite\tthis",
            ".test31.curl\tTRUE\t/overwrite\tFALSE\t0\toverwrite\tthis2",
            ".test31.curl\tTRUE\t/silly/\tFALSE\t0\tISMATCH\tthis",
            ".test31.curl\tTRUE\t/silly/\tFALSE\t0\tismatch\tthis",
            "test31.curl\tFALSE\t/\tFALSE\t0\tblankdomain\tsure",
            // curl: none (a field without `=` is dropped).
            "test31.curl\tFALSE\t/we/want\tFALSE\t0\t\tnodomainnovalue",
        ])
    }

    // curl: test8, "HTTP with cookie parsing from header file"
    @Test func test8() {
        let store = Self.store()
        let url = URL(string: "http://127.0.0.1/we/want/8")!
        var fields = [
            "foobar=name; domain=127.0.0.1; path=/;",
            "mismatch=this; domain=127.0.0.1; path=\"/silly/\";",
            "partmatch=present; domain=.0.0.1; path=/w;",
            "duplicate=test; domain=.0.0.1; domain=.0.0.1; path=/donkey;",
            "cookie=yes; path=/we;",
            "cookie=perhaps; path=/we/want;",
            "name with space=is weird but; path=/we/want;",
            "trailingspace    = removed; path=/we/want;",
            "nocookie=yes; path=/WE;",
            "blexp=yesyes; domain=127.0.0.1; domain=127.0.0.1; expiry=totally bad;",
            "partialip=nono; domain=.0.0.1;",
        ]
        // Control characters in a value: each of them ends the field for curl and for Courier but
        // the tab (cookie9).
        let controls: [UInt8] = Array(0x01...0x08) + [0x0B, 0x0C] + Array(0x0E...0x1F)
        for byte in controls { fields.append("cookie\(byte)=\(String(UnicodeScalar(byte)))-junk") }
        fields.append("cookie9=junk--\t")
        fields.append("cookie31=\u{7F}-junk")
        store.storeCookies(fromSetCookieFields: fields, for: url)
        // curl: "name with space=is weird but; trailingspace=removed; cookie=perhaps; cookie=yes;
        // foobar=name; blexp=yesyes; cookie9=junk--". The same cookies but one: `mismatch`'s
        // quoted path is `/silly/` to curl; to Courier it is no path, so the default, `/we/want`,
        // and the cookie is sent. The order is RFC 6265bis 5.8.3's: longer paths first, then the
        // earlier stored (curl orders by path length, then its hash).
        #expect(store.cookieHeader(for: url) == "mismatch=this; cookie=perhaps; name with space=is weird but; trailingspace=removed; blexp=yesyes; cookie9=junk--; cookie=yes; foobar=name")
    }

    // curl: test61, "HTTP with various cookies and custom Host:"
    @Test func test61() {
        let store = Self.store()
        store.storeCookies(fromSetCookieFields: [
            "test=yes; httponly; domain=foo.com; expires=Fri Feb 13 11:56:27 GMT 2037",
            "test2=yes; domain=host.foo.com; expires=Fri Feb 13 11:56:27 GMT 2037",
            "test3=maybe; domain=foo.com; path=/moo; secure",
            "test4=no; domain=nope.foo.com; path=/moo; secure",
            "test5=name; domain=anything.com; path=/ ; secure",
            "fake=fooledyou; domain=..com; path=/;",
            "supercookie=fooledyou; domain=.com; path=/;",
        ], for: URL(string: "http://www.host.foo.com/we/want/61")!)
        #expect(Self.jar(store) == [
            ".host.foo.com\tTRUE\t/we/want\tFALSE\t\(Self.in400Days)\ttest2\tyes",
            "#HttpOnly_.foo.com\tTRUE\t/we/want\tFALSE\t\(Self.in400Days)\ttest\tyes",
        ])
    }

    // curl: test1105, "HTTP POST with cookies"
    @Test func test1105() {
        let store = Self.store()
        store.storeCookies(fromSetCookieFields: [
            "foobar=name;",
            "mismatch=this; domain=127.0.0.1; path=\"/silly/\";",
            "partmatch=present; domain=.0.0.1; path=/;",
            "foo\tbar=barfoo", "bar\tfoo=", "bar=foo\tbar",
        ], for: URL(string: "http://127.0.0.1/we/want/1105?parm1=this*that/other/thing&parm2=foobar/1105")!)
        #expect(Self.jar(store) == [
            // curl: `/silly` (the quotes and the trailing `/` dropped).
            "127.0.0.1\tFALSE\t/we/want\tFALSE\t0\tmismatch\tthis",
            "127.0.0.1\tFALSE\t/we/want\tFALSE\t0\tfoobar\tname",
            // curl: not this one (a tab in a value). The two cookies with a tab in the name are
            // stored but left out of the file, which cannot tell their tab from a separator.
            "127.0.0.1\tFALSE\t/we/want\tFALSE\t0\tbar\tfoo\tbar",
        ])
        #expect(store.allCookies.count == 5)
    }

    // curl: test1216, "HTTP cookie domains tailmatching the hostname"
    @Test func test1216() {
        let store = Self.store()
        let file = NetscapeCookieFile.decode("""
            example.fake\tFALSE\t/a\tFALSE\t22139150993\tmooo\tindeed
            example.fake\tFALSE\t/b\tFALSE\t0\t\tmoo1\tindeed
            example.fake\tFALSE\t/c\tFALSE\t22139150993\tmoo2\tindeed
            example.fake\tTRUE\t/c\tFALSE\t22139150993\tmoo3\tindeed
            """, now: Date(timeIntervalSince1970: 1_700_000_000))
        #expect(file.invalidLines == [2])
        for cookie in file.cookies { store.setCookie(cookie) }
        // curl: "moo3=indeed; moo2=indeed" (the same two; Courier sends the older first).
        #expect(store.cookieHeader(for: URL(string: "http://example.fake/c/1216")!) == "moo2=indeed; moo3=indeed")
        #expect(store.cookieHeader(for: URL(string: "http://bexample.fake/c/1216")!) == nil)
    }

    // curl: test1218, "HTTP cookies and domains with same prefix"
    @Test func test1218() {
        let store = Self.store()
        store.storeCookies(fromSetCookieFields: ["bug=fixed; domain=.example.fake;"], for: URL(string: "http://example.fake/c/1218")!)
        #expect(store.cookieHeader(for: URL(string: "http://example.fake/c/1218")!) == "bug=fixed")
        #expect(store.cookieHeader(for: URL(string: "http://bexample.fake/c/1218")!) == nil)
    }

    // curl: test1228, "HTTP cookie path match"
    @Test func test1228() {
        let store = Self.store()
        store.storeCookies(fromSetCookieFields: [
            "path1=root; domain=.example.fake; path=/;", "path2=depth1; domain=.example.fake; path=/hoge;",
        ], for: URL(string: "http://example.fake/hoge/1228")!)
        #expect(store.cookieHeader(for: URL(string: "http://example.fake/hogege/")!) == "path1=root")
    }

    // curl: test1415, "Delete expired cookies"
    @Test func test1415() {
        let store = Self.store()
        var fields = ["test1value=test1; domain=example.com; path=/;"]
        for (index, future) in [2: true, 3: false, 4: true, 5: false, 6: false, 7: true, 8: false].sorted(by: { $0.key < $1.key }) {
            let date = future ? "Thursday, 31-Dec-2037 00:00:00 GMT" : "Monday, 13-Jun-1988 03:04:55 GMT"
            fields.append("test\(index)value=test\(index); expires=\(date); domain=example.com; path=/;")
        }
        store.storeCookies(fromSetCookieFields: fields + fields.dropFirst(), for: URL(string: "http://example.com/we/want/1415")!)
        #expect(Self.jar(store) == [
            ".example.com\tTRUE\t/\tFALSE\t\(Self.in400Days)\ttest7value\ttest7",
            ".example.com\tTRUE\t/\tFALSE\t\(Self.in400Days)\ttest4value\ttest4",
            ".example.com\tTRUE\t/\tFALSE\t\(Self.in400Days)\ttest2value\ttest2",
            ".example.com\tTRUE\t/\tFALSE\t0\ttest1value\ttest1",
        ])
    }

    // curl: test327, "HTTP with cookiejar without cookies left"
    @Test func test327() {
        let store = Self.store()
        let url = URL(string: "http://127.0.0.1/we/want/327")!
        store.storeCookies(fromSetCookieFields: ["foobar=name; expires=Thu, 22 Nov 2525 10:54:11 GMT;"], for: url)
        #expect(store.cookieHeader(for: URL(string: "http://127.0.0.1/we/want/3270002")!) == "foobar=name")
        store.storeCookies(fromSetCookieFields: ["foobar=name; expires=Thu, 01 Jan 1970 00:00:00 GMT;"], for: url)
        #expect(Self.jar(store).isEmpty)
    }

    // curl: test329, "HTTP cookie with Max-Age=0"
    @Test func test329() {
        let store = Self.store()
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        for text in [".host.foo.com\tTRUE\t/we/want/\tFALSE\t22147483647\ttest\tno", ".host.foo.com\tTRUE\t/we/want/\tFALSE\t22147483647\ttester\tyes"] {
            for cookie in NetscapeCookieFile.decode(text, now: now).cookies { store.setCookie(cookie) }
        }
        let url = URL(string: "http://host.foo.com/we/want/329")!
        // curl: "tester=yes; test=no" (the same two; Courier sends the older first).
        #expect(store.cookieHeader(for: url) == "test=no; tester=yes")
        store.storeCookies(fromSetCookieFields: [
            "testn1=yes; path=/we/want/; domain=.host.foo.com; Max-Age=-1;",
            "test=yes; path=/we/want/; domain=.host.foo.com; Max-Age=0;",
        ], for: url)
        #expect(store.cookieHeader(for: URL(string: "http://host.foo.com/we/want/3290002")!) == "tester=yes")
    }
}
