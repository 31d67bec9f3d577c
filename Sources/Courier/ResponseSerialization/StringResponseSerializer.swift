import Foundation
import HTTPTypes

/// Validates a response and decodes its body as text.
///
/// The encoding is chosen in this order, and the first that applies wins:
/// 1. ``encoding``, when you set it;
/// 2. a byte-order mark at the start of the body (UTF-8, UTF-16 or UTF-32, either byte order),
///    which is then not part of the string — a mark outranks the header, as in browsers;
/// 3. the `charset` parameter of `Content-Type`, when Courier knows the name (UTF-8/16/32,
///    US-ASCII, ISO-8859-1/2, windows-1250…1254, Shift_JIS, EUC-JP, ISO-2022-JP, macintosh and
///    their common aliases, in any letter case, quoted or not; Foundation on Linux cannot decode
///    EUC-JP, so such a body fails there). US-ASCII's and ISO-8859-1's labels are read as
///    windows-1252, as the WHATWG Encoding standard and browsers read them: a byte past 7F in a
///    body labelled ASCII is a character, not an error, and bytes 80–9F in one labelled
///    ISO-8859-1 are windows-1252's characters (`93`/`94` curly quotes, `80` €), not C1 controls;
/// 4. otherwise ``fallbackEncoding``, UTF-8 by default (RFC 9110 no longer makes ISO-8859-1 the
///    default for `text/*`, and JSON, HTML5 and most APIs are UTF-8).
///
/// windows-1252 is decoded as the WHATWG standard decodes it (every byte a character), so it
/// never fails. A body that is not valid in another chosen encoding throws
/// ``CourierError/Code/responseSerializationFailed`` with the body kept. An absent or empty body,
/// and a 204 or 205 response, give `""`.
public struct StringResponseSerializer: ResponseSerializer {
    /// The validation part; accepts any content type by default.
    public var http = HTTPResponseSerializer()
    /// An encoding that overrides the byte-order mark and the header; `nil` by default. A
    /// byte-order mark of this same encoding at the start of the body is dropped, as one that
    /// chose the encoding is (for `.utf16` and `.utf32`, either byte order's).
    public var encoding: String.Encoding?
    /// The encoding used when there is neither a byte-order mark nor a known `charset`; UTF-8.
    public var fallbackEncoding: String.Encoding = .utf8
    /// Prepares a non-empty body before it is decoded (``DataPreprocessor``); none by default.
    public var dataPreprocessor: (any DataPreprocessor)? {
        get { self.preprocessorReference?.preprocessor }
        set { self.preprocessorReference = .make(newValue) }
    }
    private var preprocessorReference: PreprocessorReference?

    /// A serializer that detects the encoding as described above.
    public init() {}

    /// A serializer that always decodes with `encoding`.
    public init(encoding: String.Encoding) {
        self.encoding = encoding
    }

    /// A serializer that runs `dataPreprocessor` over a non-empty body, then detects the encoding.
    public init(dataPreprocessor: any DataPreprocessor) {
        self.dataPreprocessor = dataPreprocessor
    }

    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.http.validate(response, data: data)
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> String {
        try self.validate(response, data: data)
        guard let data, !data.isEmpty, !HTTPResponseSerializer.isEmptyStatus(response) else { return "" }
        let prepared = try HTTPResponseSerializer.preprocessed(data, by: self.preprocessorReference?.preprocessor, response: response)
        let (text, encoding) = self.decodedText(prepared, response: response)
        guard let text else {
            // The body as received in the error, not what the preprocessor made of it.
            throw CourierError(
                .responseSerializationFailed, "the body is not valid \(encoding)", response: response, data: data)
        }
        return text
    }

    /// `data` as text in the encoding ``encoding(for:data:)`` chooses, without the byte-order mark
    /// that chose it, and that encoding; nil text when the bytes are not valid in it (windows-1252,
    /// which US-ASCII's and ISO-8859-1's labels also choose, is decoded as the WHATWG standard
    /// decodes it, and never fails). No validation, no preprocessing.
    func decodedText(_ data: Data, response: HTTPResponse?) -> (text: String?, encoding: String.Encoding) {
        let (encoding, skip) = self.encoding(for: response, data: data)
        let body = skip == 0 ? data : data.dropFirst(skip)
        let text: String? =
            if encoding == .windowsCP1252 {
                TextEncoding.windows1252(body)
            } else if let unit = TextEncoding.codeUnitSize(encoding), !body.count.isMultiple(of: unit) {
                // A partial last code unit is invalid UTF-16 or UTF-32; Foundation on Linux drops
                // it (and decodes a lone byte as "") instead of failing.
                nil
            } else {
                String(data: body, encoding: encoding)
            }
        return (text, encoding)
    }

    /// The encoding to decode with, and how many bytes of byte-order mark to skip.
    func encoding(for response: HTTPResponse?, data: Data) -> (String.Encoding, Int) {
        let mark = TextEncoding.byteOrderMark(in: data)
        if let encoding {
            // The encoding's own mark is not text either (Foundation keeps a UTF-16 or UTF-32
            // one as U+FEFF); `.utf16` and `.utf32` take either byte order's.
            if let mark, mark.encoding == encoding || TextEncoding.byteOrderFree(mark.encoding) == encoding {
                return (mark.encoding, mark.length)
            }
            return (encoding, 0)
        }
        if let mark { return (mark.encoding, mark.length) }
        if let name = response?.textEncodingName, let encoding = TextEncoding.encoding(forCharset: name) {
            return (encoding, 0)
        }
        return (self.fallbackEncoding, 0)
    }
}
