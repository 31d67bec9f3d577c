import Foundation
import HTTPTypes

/// Validates the status code and the content type of a response and returns the body as it came
/// (AFNetworking's `AFHTTPResponseSerializer`); ``serialize(response:data:)`` returns it beside
/// the validation error too, as AFNetworking does.
///
/// Every other serializer in Courier keeps one of these in its `http` property and validates
/// through it, so the rules below hold for all of them:
///
/// - The status code must be in ``acceptableStatusCodes`` (200–299 by default).
/// - When ``acceptableContentTypes`` is set, the MIME type of `Content-Type` (compared without
///   parameters and case-insensitively) must be in it, or end in one of
///   ``acceptableStructuredSyntaxSuffixes`` (`+json`). The check is skipped when the body is
///   empty, whatever the `Content-Type` says (as in AFNetworking: a 200 with `text/html` and no
///   body is no error). A body without a `Content-Type` is refused.
/// - A failure is a ``CourierError`` with code ``CourierError/Code/unacceptableContentType`` (its
///   message names the type and lists the acceptable ones, sorted) or
///   ``CourierError/Code/unacceptableStatusCode`` that keeps the response and the data. When both
///   checks fail, the status-code error is thrown and wraps the content-type error in
///   ``CourierError/underlyingError``, as AFNetworking chains them.
///
/// A `nil` response (a task that failed before a head arrived) passes validation.
public struct HTTPResponseSerializer: ResponseSerializer {
    /// Acceptable status codes; 200–299 by default.
    public var acceptableStatusCodes: IndexSet {
        get { self.rules.statusCodes ?? Self.successfulStatusCodes }
        set { self.rules = Rules(statusCodes: newValue, contentTypes: self.rules.contentTypes, suffixes: self.rules.suffixes) }
    }

    /// Acceptable MIME types (`application/json`, no parameters); `nil`, the default, accepts any.
    ///
    /// Compared case-insensitively. A `*` stands for any type or subtype, as in `Accept`:
    /// `text/*` takes `text/plain` and `text/html`, `*/json` takes `application/json`, and `*/*`
    /// any body that has a `Content-Type` (Alamofire's wildcards; AFNetworking compares names).
    public var acceptableContentTypes: Set<String>? {
        get { self.rules.contentTypes }
        set {
            self.rules = Rules(
                statusCodes: self.rules.statusCodes, contentTypes: newValue.map { Set($0.map(\.lowercasedASCII)) },
                suffixes: self.rules.suffixes)
        }
    }

    /// Structured-syntax suffixes (RFC 6839) accepted on any type, without the `+`: with `["json"]`,
    /// `application/problem+json` is accepted. Only consulted when ``acceptableContentTypes`` is set.
    public var acceptableStructuredSyntaxSuffixes: Set<String> {
        get { self.rules.suffixes }
        set { self.rules = Rules(statusCodes: self.rules.statusCodes, contentTypes: self.rules.contentTypes, suffixes: newValue) }
    }

    /// The rules, in one immutable object that copies share: a serializer is one reference wide,
    /// so copying it (into the `any ResponseSerializer` a task keeps, into a notification's user
    /// info) retains one object and boxes nothing, where three sets and an index set retained
    /// four and did not fit an existential's inline buffer. A setter makes new rules.
    private var rules: Rules

    /// What ``validate(_:data:)`` checks. Immutable, hence `Sendable`.
    final class Rules: Sendable {
        /// nil: 200–299, checked without an `IndexSet`.
        let statusCodes: IndexSet?
        /// Lower-cased; nil accepts any.
        let contentTypes: Set<String>?
        let suffixes: Set<String>
        /// The patterns of ``contentTypes`` with a `*` (`*/*`, `text/*`, `*/json`) as type and
        /// subtype, nil for a `*`; empty, and never looked at, without any.
        let wildcards: [(type: Substring?, subtype: Substring?)]

        init(statusCodes: IndexSet?, contentTypes: Set<String>?, suffixes: Set<String>) {
            self.statusCodes = statusCodes
            self.contentTypes = contentTypes
            self.suffixes = suffixes
            self.wildcards = (contentTypes ?? []).compactMap { pattern in
                let parts = pattern.split(separator: "/", omittingEmptySubsequences: false)
                guard parts.count == 2, parts[0] == "*" || parts[1] == "*", !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
                return (parts[0] == "*" ? nil : parts[0], parts[1] == "*" ? nil : parts[1])
            }
        }

        /// AFNetworking's defaults: 200–299, any content type. Shared by every serializer made
        /// with them.
        static let any = Rules(statusCodes: nil, contentTypes: nil, suffixes: [])

        /// 200–299 and the given content types (already lower-cased) and suffixes, for the
        /// serializers that share one set of defaults (JSON, XML, property lists).
        static func successful(contentTypes: Set<String>, suffixes: Set<String> = []) -> Rules {
            Rules(statusCodes: nil, contentTypes: contentTypes, suffixes: suffixes)
        }

        /// ``JSONResponseSerializer``'s: `application/json`, `text/json`, `text/javascript`, `+json`.
        static let json = successful(contentTypes: ["application/json", "text/json", "text/javascript"], suffixes: ["json"])
        /// The XML serializers': `application/xml`, `text/xml`, `+xml`.
        static let xml = successful(contentTypes: ["application/xml", "text/xml"], suffixes: ["xml"])
        /// ``PropertyListResponseSerializer``'s: `application/x-plist`.
        static let propertyList = successful(contentTypes: ["application/x-plist"])
        /// ``ImageResponseSerializer``'s image types.
        static let image = successful(contentTypes: [
            "image/tiff", "image/jpeg", "image/gif", "image/png", "image/ico", "image/x-icon", "image/bmp",
            "image/x-bmp", "image/x-xbitmap", "image/x-win-bitmap", "image/webp", "image/vnd.microsoft.icon",
        ])
    }

    /// 200–299 as an `IndexSet`, made once, for the getter of ``acceptableStatusCodes``.
    private static let successfulStatusCodes = IndexSet(integersIn: 200..<300)

    /// A serializer with AFNetworking's defaults: status 200–299, any content type.
    public init() {
        self.rules = .any
    }

    /// A serializer with shared rules (``Rules/json`` and the like).
    init(rules: Rules) {
        self.rules = rules
    }

    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        // Read where it lies, not bound: a binding is a retain of each of the response's storages,
        // on every response, and most pass.
        guard response != nil else { return }
        let contentTypeError = self.contentTypeError(response!, data: data)
        let code = response!.status.code
        let acceptableCode = self.rules.statusCodes.map { $0.contains(code) } ?? (200..<300).contains(code)
        if !acceptableCode {
            throw CourierError(
                .unacceptableStatusCode,
                "unacceptable status code: \(code) \(response!.status.reasonPhrase)",
                response: response, data: data, underlyingError: contentTypeError)
        }
        if let contentTypeError { throw contentTypeError }
    }

    /// What a refused content type's message says is accepted: the types in alphabetical order,
    /// then the suffixes (`+json`), or that none is.
    static func acceptedList(_ contentTypes: Set<String>, suffixes: Set<String>) -> String {
        let accepted = contentTypes.sorted() + suffixes.sorted().map { "+" + $0 }
        return accepted.isEmpty ? "no content type is acceptable" : "acceptable: " + accepted.joined(separator: ", ")
    }

    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> Data? {
        try self.validate(response, data: data)
        return data
    }

    /// The body as it came, beside the validation error if any: AFNetworking's
    /// `responseObjectForResponse:data:error:` validates, then returns `data` whatever it found,
    /// so an error page under a 500 reaches a completion handler with the status error.
    /// ``responseObject(for:data:)`` throws that error instead.
    public func serialize(response: HTTPResponse?, data: Data?) -> (object: Data??, error: CourierError?) {
        do {
            try self.validate(response, data: data)
        } catch {
            return (.some(data), error)
        }
        return (.some(data), nil)
    }

    /// The content-type half of ``validate(_:data:)``: the error for a body whose type is not
    /// acceptable, nil when it is (or when any type is, or there is no body).
    func contentTypeError(_ response: HTTPResponse, data: Data?) -> CourierError? {
        guard let acceptable = self.rules.contentTypes else { return nil }
        let mime = response.mimeType
        // A Content-Type describes a body; with none there is nothing to refuse (httpbin's
        // /status/200 and /status/204 say text/html and send nothing). AFNetworking reports no
        // error there either.
        guard data.map({ !$0.isEmpty }) ?? false, !self.accepts(mime ?? "", in: acceptable) else { return nil }
        let accepted = Self.acceptedList(acceptable, suffixes: self.rules.suffixes)
        return CourierError(
            .unacceptableContentType, "unacceptable content type: \(mime ?? "(none)") (\(accepted))", response: response, data: data)
    }

    /// Whether `mime` (lower-cased, without parameters) is acceptable: named, with an acceptable
    /// suffix, or matched by a pattern with a `*`.
    private func accepts(_ mime: String, in acceptable: Set<String>) -> Bool {
        if mime.isEmpty { return false }
        if acceptable.contains(mime) { return true }
        if !self.rules.suffixes.isEmpty, let plus = mime.lastIndex(of: "+"),
           self.rules.suffixes.contains(String(mime[mime.index(after: plus)...])) {
            return true
        }
        guard !self.rules.wildcards.isEmpty, let slash = mime.firstIndex(of: "/") else { return false }
        let type = mime[..<slash], subtype = mime[mime.index(after: slash)...]
        return self.rules.wildcards.contains { ($0.type == nil || $0.type == type) && ($0.subtype == nil || $0.subtype == subtype) }
    }
}

extension HTTPResponseSerializer {
    /// Whether a status code means the body is empty by definition: 204 No Content, 205 Reset Content.
    static func isEmptyStatus(_ response: HTTPResponse?) -> Bool {
        guard let code = response?.status.code else { return false }
        return code == 204 || code == 205
    }

    /// Whether a body is absent, empty, or only JSON/XML white space (space, tab, CR, LF), after
    /// a UTF-8 byte-order mark if it starts with one (the mark is no text: a body of a mark alone
    /// says nothing, as an empty one).
    static func isBlank(_ data: Data?) -> Bool {
        guard let data else { return true }
        return data.withUnsafeBytes { bytes in
            let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
            for byte in bytes[start...] where !(byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D) { return false }
            return true
        }
    }
}
