import Courier
import Foundation
import HTTPTypes
import Testing

@Suite("DecodableResponseSerializer")
struct DecodableResponseSerializerTests {
    struct User: Decodable, Sendable, Equatable {
        var id: Int
        var name: String
    }

    struct Accepted: Decodable, EmptyResponse, Equatable {
        var id: Int?
        static func emptyValue() -> Accepted { Accepted(id: nil) }
    }

    @Test func decodesJSON() throws {
        let user = try DecodableResponseSerializer(User.self).responseObject(
            for: Fixture.json(), data: Fixture.data(#"{"id": 7, "name": "Ada"}"#))
        #expect(user == User(id: 7, name: "Ada"))
    }

    @Test func customDecoder() throws {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        struct Snake: Decodable, Sendable { var firstName: String }
        let value = try DecodableResponseSerializer(Snake.self, decoder: decoder).responseObject(
            for: Fixture.json(), data: Fixture.data(#"{"first_name": "Ada"}"#))
        #expect(value.firstName == "Ada")

        let plist = try PropertyListEncoder().encode(["id": 1])
        let fromPlist = try DecodableResponseSerializer([String: Int].self, decoder: PropertyListDecoder())
            .responseObject(for: Fixture.response(200, "application/x-plist"), data: plist)
        #expect(fromPlist == ["id": 1])
    }

    @Test func emptyBodyAllowedOnlyForEmptyResponseTypes() throws {
        for (status, body) in [(204, nil), (205, Data()), (200, Data()), (200, nil), (204, Fixture.data("ignored"))] as [(Int, Data?)] {
            #expect(try DecodableResponseSerializer(Empty.self).responseObject(for: Fixture.json(status), data: body) == Empty())
            #expect(try DecodableResponseSerializer(Accepted.self).responseObject(for: Fixture.json(status), data: body) == Accepted(id: nil))
            #expect {
                try DecodableResponseSerializer(User.self).responseObject(for: Fixture.json(status), data: body)
            } throws: { ($0 as? CourierError)?.code == .responseSerializationFailed }
        }
        // A body on a 200 is decoded even into an EmptyResponse type.
        #expect(try DecodableResponseSerializer(Accepted.self).responseObject(for: Fixture.json(), data: Fixture.data(#"{"id":3}"#)) == Accepted(id: 3))
    }

    @Test func malformedBodyKeepsDecodingErrorAndData() {
        for text in ["{", #"{"id": "seven", "name": "x"}"#, #"{"id": 1}"#, "[]", "<xml/>", "\u{00}"] {
            let body = Fixture.data(text)
            do {
                _ = try DecodableResponseSerializer(User.self).responseObject(for: Fixture.json(), data: body)
                Issue.record("expected failure for \(text)")
            } catch {
                #expect(error.code == .responseSerializationFailed)
                #expect(error.data == body)
                #expect(error.underlyingError is DecodingError)
            }
        }
    }

    @Test func validatesStatus() {
        #expect { try DecodableResponseSerializer(User.self).responseObject(for: Fixture.json(422), data: Fixture.data("{}")) } throws: {
            ($0 as? CourierError)?.code == .unacceptableStatusCode
        }
    }

    @Test func deepNestingIsAnError() {
        let body = Data((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
        #expect(throws: CourierError.self) { try DecodableResponseSerializer([AnyDecodable].self).responseObject(for: Fixture.json(), data: body) }
    }

    /// Decodes anything, recursively, to drive the decoder deep.
    struct AnyDecodable: Decodable, Sendable {
        init(from decoder: any Decoder) throws {
            if var array = try? decoder.unkeyedContainer() {
                while !array.isAtEnd { _ = try array.decode(AnyDecodable.self) }
            }
        }
    }
}

@Suite("StringResponseSerializer")
struct StringResponseSerializerTests {
    let text = "Grüße, 世界 😀"

    @Test func charsetFromContentType() throws {
        let cases: [(String, String.Encoding)] = [
            ("text/plain; charset=utf-8", .utf8), ("text/plain; charset=UTF-8", .utf8), ("text/plain;charset=\"utf-8\"", .utf8),
            ("text/plain; charset=utf-16le", .utf16LittleEndian), ("text/plain; charset=UTF-16BE", .utf16BigEndian),
            ("text/plain; charset=utf-32le", .utf32LittleEndian), ("TEXT/PLAIN; Charset=UTF-32BE", .utf32BigEndian),
            ("text/plain; format=flowed; charset=utf-8", .utf8),
        ]
        for (type, encoding) in cases {
            let body = try #require(self.text.data(using: encoding))
            #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, type), data: body) == self.text, "\(type)")
        }
        let latin = Data([0x47, 0x72, 0xFC, 0xDF, 0x65])  // "Grüße" in ISO-8859-1
        #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, "text/plain; charset=iso-8859-1"), data: latin) == "Grüße")
        #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, "text/plain; charset=latin1"), data: latin) == "Grüße")
        #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, "text/plain; charset=windows-1252"), data: Data([0x80])) == "€")
    }

    /// The WHATWG Encoding standard reads US-ASCII's labels as windows-1252, and windows-1252
    /// gives every byte a character: a curly quote in a body labelled ASCII is read, and the five
    /// bytes the code page leaves undefined (which Foundation refuses) are C1 controls.
    @Test func asciiLabelsAreWindows1252AndItNeverFails() throws {
        let quoted = Data([0x93, 0x68, 0x69, 0x94, 0x20, 0x80])  // “hi” €
        for label in ["us-ascii", "US-ASCII", "ascii", "windows-1252"] {
            #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, "text/plain; charset=\(label)"), data: quoted) == "\u{201C}hi\u{201D} \u{20AC}", "\(label)")
        }
        let undefined = Data([0x61, 0x81, 0x8D, 0x8F, 0x90, 0x9D])
        #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, "text/plain; charset=windows-1252"), data: undefined) == "a\u{81}\u{8D}\u{8F}\u{90}\u{9D}")
        #expect(try StringResponseSerializer(encoding: .windowsCP1252).responseObject(for: nil, data: undefined) == "a\u{81}\u{8D}\u{8F}\u{90}\u{9D}")
        // Every byte, and each the character the WHATWG index names (checked against
        // Foundation's where it has one).
        let all = Data(0...255)
        let text = try StringResponseSerializer(encoding: .windowsCP1252).responseObject(for: nil, data: all)
        #expect(text.unicodeScalars.count == 256)
        for byte in 0...255 where ![0x81, 0x8D, 0x8F, 0x90, 0x9D].contains(byte) {
            #expect(String(data: Data([UInt8(byte)]), encoding: .windowsCP1252)?.unicodeScalars.first == Array(text.unicodeScalars)[byte], "\(byte)")
        }
        // An ASCII encoding asked for by name stays strict.
        #expect(throws: CourierError.self) { try StringResponseSerializer(encoding: .ascii).responseObject(for: nil, data: quoted) }
    }

    /// The WHATWG Encoding standard reads ISO-8859-1's labels as windows-1252 too: bytes 80–9F in
    /// a body labelled Latin-1 are curly quotes, €, and so on. They were Foundation's ISO-8859-1,
    /// C1 controls there (`93` U+0093, not “).
    @Test func latin1LabelsAreWindows1252() throws {
        let quoted = Data([0x93, 0x68, 0x69, 0x94, 0x20, 0x80, 0x20, 0xE9])  // “hi” € é
        for label in ["iso-8859-1", "ISO-8859-1", "iso8859-1", "iso_8859-1", "latin1", "l1", "cp819", "\"ISO_8859-1:1987\""] {
            let response = Fixture.response(200, "text/plain; charset=\(label)")
            #expect(try StringResponseSerializer().responseObject(for: response, data: quoted) == "\u{201C}hi\u{201D} \u{20AC} \u{E9}", "\(label)")
        }
        // ISO-8859-1 asked for by name stays Foundation's: each byte the code point of its value.
        #expect(try StringResponseSerializer(encoding: .isoLatin1).responseObject(for: nil, data: Data([0x93, 0x80])) == "\u{93}\u{80}")
    }

    @Test func byteOrderMarkOutranksHeaderAndIsDropped() throws {
        let utf16 = Data([0xFF, 0xFE]) + self.text.data(using: .utf16LittleEndian)!
        #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, "text/plain; charset=iso-8859-1"), data: utf16) == self.text)
        let utf8 = Data([0xEF, 0xBB, 0xBF]) + Data(self.text.utf8)
        #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, "text/plain"), data: utf8) == self.text)
        let utf32 = Data([0x00, 0x00, 0xFE, 0xFF]) + self.text.data(using: .utf32BigEndian)!
        #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, nil), data: utf32) == self.text)
    }

    @Test func missingOrUnknownCharsetFallsBackToUTF8() throws {
        for type in [nil, "text/plain", "text/plain; charset=", "text/plain; charset=klingon", "text/plain; charset"] as [String?] {
            #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, type), data: Data(self.text.utf8)) == self.text)
        }
        var serializer = StringResponseSerializer()
        serializer.fallbackEncoding = .isoLatin1
        #expect(try serializer.responseObject(for: Fixture.response(200, "text/plain"), data: Data([0xE9])) == "é")
    }

    @Test func wrongCharsetIsATypedError() {
        let latin = Data([0x47, 0x72, 0xFC, 0xDF, 0x65])
        do {
            _ = try StringResponseSerializer().responseObject(for: Fixture.response(200, "text/plain; charset=utf-8"), data: latin)
            Issue.record("expected failure")
        } catch {
            #expect(error.code == .responseSerializationFailed)
            #expect(error.data == latin)
        }
    }

    /// The error keeps the body as it was received, not what the preprocessor made of it.
    @Test func invalidTextAfterAPreprocessorKeepsTheReceivedBody() {
        let body = Fixture.data(")]}',\n") + Data([0x47, 0x72, 0xFC])
        do {
            _ = try StringResponseSerializer(dataPreprocessor: .googleXSSI).responseObject(for: Fixture.response(200, "text/plain; charset=utf-8"), data: body)
            Issue.record("the body is not UTF-8")
        } catch {
            #expect(error.code == .responseSerializationFailed)
            #expect(error.data == body)
        }
    }

    /// A UTF-16 or UTF-32 body that ends in part of a code unit is invalid, whatever chose the
    /// encoding (the header, a byte-order mark, ``StringResponseSerializer/encoding``). Foundation
    /// on Linux dropped the partial unit: `A\0B` labelled UTF-16LE read as "A", a lone byte as "".
    @Test func aPartialLastCodeUnitIsATypedError() throws {
        let cases: [(String?, Data)] = [
            ("text/plain; charset=utf-16le", Data([0x41, 0x00, 0x42])),
            ("text/plain; charset=utf-16be", Data([0x00, 0x41, 0x00])),
            ("text/plain; charset=utf-16", Data([0x41])),
            ("text/plain; charset=utf-32le", Data([0x41, 0x00, 0x00, 0x00, 0x42])),
            ("text/plain; charset=utf-32", Data([0x41, 0x42, 0x43])),
            ("text/plain", Data([0xFF, 0xFE, 0x41, 0x00, 0x42])),  // UTF-16LE byte-order mark
            ("text/plain", Data([0x00, 0x00, 0xFE, 0xFF, 0x00, 0x00, 0x00, 0x41, 0x00, 0x00])),  // UTF-32BE mark
        ]
        for (type, body) in cases {
            do {
                let text = try StringResponseSerializer().responseObject(for: Fixture.response(200, type), data: body)
                Issue.record("\(type ?? "no type") \(Array(body)): read as \(Array(text.unicodeScalars))")
            } catch {
                #expect(error.code == .responseSerializationFailed)
                #expect(error.data == body)
            }
        }
        #expect(throws: CourierError.self) { try StringResponseSerializer(encoding: .utf16LittleEndian).responseObject(for: nil, data: Data([0x41, 0x00, 0x42])) }
        // Whole code units still read.
        #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, "text/plain; charset=utf-16le"), data: Data([0x41, 0x00, 0x42, 0x00])) == "AB")
        #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, "text/plain"), data: Data([0xFF, 0xFE, 0x41, 0x00])) == "A")
        #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200, "text/plain; charset=utf-32be"), data: Data([0x00, 0x00, 0x00, 0x41])) == "A")
    }

    @Test func explicitEncodingWins() throws {
        let latin = Data([0xE9])
        #expect(try StringResponseSerializer(encoding: .isoLatin1).responseObject(for: Fixture.response(200, "text/plain; charset=utf-8"), data: latin) == "é")
    }

    @Test func emptyGivesEmptyString() throws {
        #expect(try StringResponseSerializer().responseObject(for: Fixture.response(204), data: nil) == "")
        #expect(try StringResponseSerializer().responseObject(for: Fixture.response(200), data: Data()) == "")
    }
}

@Suite("DataResponseSerializer")
struct DataResponseSerializerTests {
    @Test func returnsBodyOrEmpty() throws {
        #expect(try DataResponseSerializer().responseObject(for: Fixture.response(), data: Fixture.data("x")) == Fixture.data("x"))
        #expect(try DataResponseSerializer().responseObject(for: Fixture.response(204), data: nil) == Data())
        #expect(throws: CourierError.self) { try DataResponseSerializer().responseObject(for: Fixture.response(500), data: nil) }
    }

    /// As AFNetworking's `AFHTTPResponseSerializer`: the body beside the validation error (it was
    /// dropped); an empty `Data` when there was none, as on success.
    @Test func serializeGivesTheBodyBesideTheError() {
        let body = Fixture.data("<html>oops</html>")
        let (object, error) = DataResponseSerializer().serialize(response: Fixture.response(500, "text/html"), data: body)
        #expect(object == body)
        #expect(error?.code == .unacceptableStatusCode)
        let (empty, emptyError) = DataResponseSerializer().serialize(response: Fixture.response(500), data: nil)
        #expect(empty == Data())
        #expect(emptyError?.code == .unacceptableStatusCode)
        let (success, noError) = DataResponseSerializer().serialize(response: Fixture.response(), data: nil)
        #expect(success == Data())
        #expect(noError == nil)
    }
}
