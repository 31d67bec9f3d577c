import Foundation
import HTTPTypes

/// Encodes parameters into the query (GET, HEAD, DELETE) or a URL-encoded form body, and applies
/// default headers and request options (AFNetworking's `AFHTTPRequestSerializer`).
///
/// ```swift
/// var serializer = HTTPRequestSerializer()
/// serializer.setValue("abc", forHTTPHeaderField: "X-Api-Key")
/// serializer.timeoutInterval = 10
/// let get = try serializer.request(method: .get, urlString: "https://example.com/search",
///                                  parameters: ["q": "swift nio", "page": 2])
/// // GET https://example.com/search?page=2&q=swift%20nio
/// let post = try serializer.request(method: .post, urlString: "https://example.com/login",
///                                   parameters: ["user": "ann", "remember": true])
/// // body "remember=1&user=ann", Content-Type: application/x-www-form-urlencoded
/// ```
///
/// What it fixes relative to AFNetworking: the query goes before a URL's fragment (AFNetworking
/// appends it after `#…`); method names and header names compare without case; a form body that
/// ``stringEncoding`` cannot represent, a value it cannot encode, a top-level array or scalar, and
/// a malformed URL string fail with a ``CourierError`` naming the parameter, rather than a nil body,
/// a `(null)` key or an assertion.
public struct HTTPRequestSerializer: RequestSerializer {
    /// Header fields added to every request that does not already set them.
    ///
    /// By default `Accept-Language` (the preferred languages; on Linux, those of the environment's
    /// `LANGUAGE`, `LC_ALL`, `LC_MESSAGES` and `LANG`, as gettext reads them) and `User-Agent`
    /// (`name/version (platform; OS version)`).
    public var httpRequestHeaders: HTTPFields

    /// Methods whose parameters go into the query; the others put them in the body. Compared without
    /// case. By default GET, HEAD and DELETE.
    public var httpMethodsEncodingParametersInURI: Set<String> = ["GET", "HEAD", "DELETE"]

    /// The encoding of a form body (UTF-8 by default). The percent-escaped query is ASCII; this
    /// matters for encodings that are not ASCII-compatible and for a custom
    /// ``queryStringSerialization`` that returns unescaped text.
    public var stringEncoding: String.Encoding = .utf8

    /// Per-request options applied to each request; only those that are set are applied, and an
    /// option already set on a request passed to ``request(bySerializing:parameters:)`` wins.
    public var options = RequestOptions()

    /// The built-in query-string style, used when ``queryStringSerialization`` is nil.
    public var queryStringSerializationStyle: QueryStringSerializationStyle = .default

    /// A custom query-string builder that replaces the built-in style when set.
    public var queryStringSerialization: QueryStringSerialization?

    /// How deep parameters may nest: a value whose path (`a[b][0]`) has more keys and indexes than
    /// this fails with ``CourierError/Code/parameterEncodingFailed`` before anything is written.
    ///
    /// Every writer of parameters walks them recursively, and a tree some thousands of levels deep
    /// overflowed the stack; 512 is the nesting Foundation's JSON writer and reader allow. It holds
    /// for every serializer (query string, form body, JSON, property list, a multipart form's
    /// fields), for `Encodable` values among the parameters, and for ``URLEncodedFormEncoder``.
    public static let maximumParameterDepth = 512

    /// A serializer with AFNetworking's defaults: `Accept-Language` from `Locale.preferredLanguages`
    /// (on Linux, where Foundation gives `en-001` whatever the user chose, from the environment:
    /// `LANGUAGE`, else the first of `LC_ALL`, `LC_MESSAGES` and `LANG`, `de_DE.UTF-8` giving
    /// `de-DE`; `en` under the `C` or `POSIX` locale) and a `User-Agent` for this process.
    public init() {
        self.httpRequestHeaders = [:]
        if let acceptLanguage = DefaultHeaders.acceptLanguage(preferredLanguages: DefaultHeaders.preferredLanguages()) {
            self.httpRequestHeaders[.acceptLanguage] = acceptLanguage
        }
        self.httpRequestHeaders[.userAgent] = DefaultHeaders.currentUserAgent
    }

    // MARK: Request options, as AFNetworking names them

    /// The request timeout in seconds; `nil` (the default) leaves the session's.
    public var timeoutInterval: TimeInterval? {
        get { self.options.timeoutInterval }
        set { self.options.timeoutInterval = newValue }
    }

    /// The cache policy; `nil` (the default) leaves the session's.
    public var cachePolicy: RequestOptions.CachePolicy? {
        get { self.options.cachePolicy }
        set { self.options.cachePolicy = newValue }
    }

    /// Whether to send and store cookies; `nil` (the default) leaves the session's (see
    /// ``RequestOptions/httpShouldHandleCookies``).
    public var httpShouldHandleCookies: Bool? {
        get { self.options.httpShouldHandleCookies }
        set { self.options.httpShouldHandleCookies = newValue }
    }

    /// Whether the request may use a cellular interface; `nil` (the default) leaves the session's
    /// (see ``RequestOptions/allowsCellularAccess``).
    public var allowsCellularAccess: Bool? {
        get { self.options.allowsCellularAccess }
        set { self.options.allowsCellularAccess = newValue }
    }

    /// Whether the request may be pipelined; `nil` (the default) never pipelines, and `true` is
    /// refused (see ``RequestOptions/httpShouldUsePipelining``).
    public var httpShouldUsePipelining: Bool? {
        get { self.options.httpShouldUsePipelining }
        set { self.options.httpShouldUsePipelining = newValue }
    }

    // MARK: Headers

    /// The value of a default header, or nil. The name is compared without case.
    public func value(forHTTPHeaderField name: String) -> String? {
        guard let fieldName = HTTPField.Name(name) else { return nil }
        return self.httpRequestHeaders[fieldName]
    }

    /// Sets or, with `nil`, removes a default header. An invalid field name (one that RFC 9110 does
    /// not allow, such as `"Bad Name"`) is ignored, as no request could carry it.
    public mutating func setValue(_ value: String?, forHTTPHeaderField name: String) {
        guard let fieldName = HTTPField.Name(name) else { return }
        self.httpRequestHeaders[fieldName] = value
    }

    /// Sets a Basic `Authorization` header (RFC 7617) from a user name and password, UTF-8 encoded.
    public mutating func setAuthorizationHeaderField(username: String, password: String) {
        let credentials = Data((username + ":" + password).utf8).base64EncodedString()
        self.httpRequestHeaders[.authorization] = "Basic " + credentials
    }

    /// Removes the `Authorization` header.
    public mutating func clearAuthorizationHeader() {
        self.httpRequestHeaders[.authorization] = nil
    }

    /// Uses a built-in query-string style and drops any custom ``queryStringSerialization``.
    public mutating func setQueryStringSerialization(with style: QueryStringSerializationStyle) {
        self.queryStringSerializationStyle = style
        self.queryStringSerialization = nil
    }

    /// Uses `serialization` to build query strings.
    public mutating func setQueryStringSerialization(_ serialization: @escaping QueryStringSerialization) {
        self.queryStringSerialization = serialization
    }

    // MARK: RequestSerializer

    /// Makes a request for `method` and `urlString`, with the serializer's options and headers, and
    /// `parameters` in the query or the body (AFNetworking's `requestWithMethod:URLString:parameters:error:`).
    ///
    /// - Throws: ``CourierError/Code/invalidURL`` when `urlString` is not an absolute URL with a
    ///   host; ``CourierError/Code/parameterEncodingFailed`` when a parameter cannot be encoded.
    public func request(method: HTTPRequest.Method, urlString: String, parameters: (any Sendable)?) throws(CourierError) -> Request {
        let url = try Self.url(from: urlString)
        return try self.serialized(Request(method: method, url: url), parameters: parameters)
    }

    /// ``request(method:urlString:parameters:)`` for a URL already parsed.
    func request(method: HTTPRequest.Method, parsedURL url: URL, parameters: (any Sendable)?) throws(CourierError) -> Request {
        try self.serialized(Request(method: method, url: url), parameters: parameters)
    }

    /// Applies the serializer's options and headers to `request` (the request's own win) and
    /// encodes `parameters` into its query or body.
    ///
    /// For methods in ``httpMethodsEncodingParametersInURI`` a non-empty query is appended to the
    /// URL's query with `&` (or starts one), before any fragment. For the others the query string is
    /// the body, in ``stringEncoding``, with `Content-Type: application/x-www-form-urlencoded`
    /// unless the request has one; `nil` parameters give an empty body.
    public func request(bySerializing request: Request, parameters: (any Sendable)?) throws(CourierError) -> Request {
        try self.serialized(request, parameters: parameters)
    }

    /// ``request(bySerializing:parameters:)`` on a request the caller hands over: a request made for
    /// the call (the verbs') is changed in place instead of copied.
    func serialized(_ request: consuming Request, parameters: (any Sendable)?) throws(CourierError) -> Request {
        var request = request
        request.options = self.options.merging(request.options)
        var query: String?
        if let parameters {
            // Before the default headers are added: a custom builder sees the request as
            // AFNetworking's block does.
            query = try self.queryString(for: request, parameters: parameters)
        }
        request = self.applyingDefaultHeaders(to: consume request)
        if self.encodesParametersInURI(request.method) {
            if let query, !query.isEmpty {
                request.url = try Self.url(request.url, appendingQuery: query)
            }
        } else {
            let body = query ?? ""
            guard let data = body.data(using: self.stringEncoding, allowLossyConversion: false) else {
                throw Self.unrepresentableError(body: body, parameters: parameters, encoding: self.stringEncoding)
                    .adding(request: request)
            }
            if !request.headerFields.contains(.contentType) {
                request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            }
            request.body = .data(data)
        }
        return request
    }

    // MARK: Internals shared with the JSON and property-list serializers

    /// Whether `method`'s parameters go in the query.
    func encodesParametersInURI(_ method: HTTPRequest.Method) -> Bool {
        let raw = method.rawValue
        // Exact names first (the defaults are upper case): no new strings for the usual case.
        if self.httpMethodsEncodingParametersInURI.contains(raw) { return true }
        let name = raw.uppercased()
        return self.httpMethodsEncodingParametersInURI.contains { $0.uppercased() == name }
    }

    /// `request` with the serializer's options (where the request has none) and headers (where the
    /// request has none of that name).
    func applyingDefaults(to request: consuming Request) -> Request {
        var request = request
        request.options = self.options.merging(request.options)
        return self.applyingDefaultHeaders(to: request)
    }

    /// `request` with the serializer's headers where it has none of that name (its options left
    /// as they are).
    func applyingDefaultHeaders(to request: consuming Request) -> Request {
        var request = request
        if request.headerFields.isEmpty {
            // The common case (a request the verbs made): the serializer's fields as they are,
            // shared until one of them changes, instead of a new storage filled field by field.
            request.headerFields = self.httpRequestHeaders
            return request
        }
        // Whether the request had a name is asked of the request as it came: a name the
        // serializer holds twice (a `Cookie` set as `a=1; b=2` is two fields) is added whole.
        let own = request.headerFields
        for field in self.httpRequestHeaders where !own.contains(field.name) {
            request.headerFields.append(field)
        }
        return request
    }

    /// The query string for `parameters`, from the custom closure when set.
    func queryString(for request: Request, parameters: any Sendable) throws(CourierError) -> String {
        guard let serialization = self.queryStringSerialization else {
            return try Self.queryString(from: parameters, style: self.queryStringSerializationStyle)
        }
        do {
            return try serialization(request, parameters)
        } catch {
            throw error.asCourierError(.parameterEncodingFailed, "the custom query-string serialization failed: \(error)", request: request)
        }
    }

    /// Parses an absolute URL string with a host and, if any, a port in 0...65535.
    ///
    /// Characters a URL cannot hold are percent-encoded (`/a b` becomes `/a%20b`, as
    /// `URL(string:)` does on Apple platforms since macOS 14), so such strings are accepted, and
    /// `%XX` escapes already there are kept (``URLText/normalized(_:)``: Foundation's parser
    /// encoded them again when the same component held a `[` or a space, so `?c=%5B&a=[1]` went
    /// out as `c=%255B`).
    static func url(from urlString: String) throws(CourierError) -> URL {
        guard let url = URL(string: URLText.normalized(urlString)), url.scheme != nil, let host = url.host, !host.isEmpty else {
            throw CourierError(.invalidURL, "'\(URLText.redacted(urlString))' is not an absolute URL with a host")
        }
        if let port = url.port, !(0...65_535).contains(port) {
            throw CourierError(.invalidURL, "'\(URLText.redacted(urlString))' has the port \(port), outside 0...65535")
        }
        return url
    }

    /// `url` with `query` added to its query (after `&`), or as its query, before any fragment.
    ///
    /// The result is normalized as ``url(from:)`` normalizes a URL string (``URLText/normalized(_:)``):
    /// a custom query-string builder's `c=%5B&a=[1]` keeps its `%5B` and has its brackets encoded,
    /// where Foundation's parser encoded the whole query again (`c=%255B`). A `#` in `query` is
    /// data and is written `%23`: left as it is, it began a fragment, and what followed it (the
    /// rest of the parameters) was never sent.
    static func url(_ url: URL, appendingQuery query: String) throws(CourierError) -> URL {
        let query = query.utf8.contains(UInt8(ascii: "#")) ? query.replacingOccurrences(of: "#", with: "%23") : query
        let string = url.absoluteString
        var base = Substring(string)
        var fragment: Substring = ""
        if let hash = string.firstIndex(of: "#") {
            base = string[..<hash]
            fragment = string[hash...]
        }
        let separator: String
        if let questionMark = base.firstIndex(of: "?") {
            // An empty query (`…?`) takes the parameters as they are; AFNetworking writes `?&…`.
            separator = base.index(after: questionMark) == base.endIndex ? "" : "&"
        } else {
            separator = "?"
        }
        let combined = base + separator + query + fragment
        guard let result = URL(string: URLText.normalized(String(combined))) else {
            throw CourierError(.invalidURL, "cannot add the query '\(query)' to \(Request.redacted(url))")
        }
        return result
    }

    /// The error for a form body that `encoding` cannot represent, naming the first parameter key or
    /// value that is at fault when there is one.
    static func unrepresentableError(body: String, parameters: (any Sendable)?, encoding: String.Encoding) -> CourierError {
        if let parameters, let tree = try? ParameterValue(parameters),
            let path = tree.firstPath(where: { !$0.canBeConverted(to: encoding) })
        {
            return CourierError(.parameterEncodingFailed, "the parameter at '\(path)' cannot be represented in the string encoding \(encoding)")
        }
        return CourierError(.parameterEncodingFailed, "the form body cannot be represented in the string encoding \(encoding)")
    }
}

extension ParameterValue {
    /// The path of the first key or string value (depth first, in order) that `isBad` accepts.
    func firstPath(where isBad: (String) -> Bool, path: ParameterPath = .root) -> ParameterPath? {
        switch self {
        case .string(let string):
            return isBad(string) ? path : nil
        case .dictionary(let entries):
            for entry in entries {
                let nested = path.appending(key: entry.key)
                if isBad(entry.key) { return nested }
                if let found = entry.value.firstPath(where: isBad, path: nested) { return found }
            }
            return nil
        case .array(let elements), .set(let elements):
            for (index, element) in elements.enumerated() {
                if let found = element.firstPath(where: isBad, path: path.appending(index: index)) { return found }
            }
            return nil
        case .null, .bool, .number, .date, .data:
            return nil
        }
    }
}
