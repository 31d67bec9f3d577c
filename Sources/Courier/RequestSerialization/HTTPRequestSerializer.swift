import Foundation
import HTTPTypes

/// Encodes parameters into the query (GET, HEAD, DELETE) or a URL-encoded form body
/// (AFNetworking's `AFHTTPRequestSerializer`).
public struct HTTPRequestSerializer: RequestSerializer {
    /// Header fields added to every request that does not already set them.
    public var httpRequestHeaders: HTTPFields = [:]
    /// Methods whose parameters go into the query; the others put them in the body.
    public var httpMethodsEncodingParametersInURI: Set<String> = ["GET", "HEAD", "DELETE"]
    /// Per-request options applied to every request (only those that are set).
    public var options = RequestOptions()

    /// A serializer with AFNetworking's defaults.
    public init() {}

    public func request(method: HTTPRequest.Method, urlString: String, parameters: (any Sendable)?) throws(CourierError) -> Request {
        guard let url = URL(string: urlString), url.scheme != nil else {
            throw CourierError(.invalidURL, "'\(urlString)' is not an absolute URL")
        }
        var request = Request(method: method, url: url)
        request.options = self.options
        return try self.request(bySerializing: request, parameters: parameters)
    }

    public func request(bySerializing request: Request, parameters: (any Sendable)?) throws(CourierError) -> Request {
        var request = request
        for field in self.httpRequestHeaders where request.headerFields[field.name] == nil {
            request.headerFields.append(field)
        }
        guard let parameters else { return request }
        let query = try Self.queryString(from: parameters)
        if self.httpMethodsEncodingParametersInURI.contains(request.method.rawValue.uppercased()) {
            guard !query.isEmpty else { return request }
            guard var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false) else {
                throw CourierError(.invalidURL, "cannot add a query to \(request.url)", request: request)
            }
            let existing = components.percentEncodedQuery
            components.percentEncodedQuery = (existing?.isEmpty == false) ? existing! + "&" + query : query
            guard let url = components.url else {
                throw CourierError(.invalidURL, "cannot add a query to \(request.url)", request: request)
            }
            request.url = url
        } else {
            if request.headerFields[.contentType] == nil {
                request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            }
            request.body = .data(Data(query.utf8))
        }
        return request
    }

    /// The query string for `parameters`: nested dictionaries become `key[sub]`, arrays `key[]`,
    /// keys sorted, values percent-escaped.
    public static func queryString(from parameters: any Sendable) throws(CourierError) -> String {
        var pairs: [String] = []
        func add(_ value: Any, key: String?) throws(CourierError) {
            switch value {
            case let dictionary as [String: Any]:
                for nestedKey in dictionary.keys.sorted() {
                    try add(dictionary[nestedKey]!, key: key.map { "\($0)[\(nestedKey)]" } ?? nestedKey)
                }
            case let array as [Any]:
                guard let key else { throw CourierError(.parameterEncodingFailed, "a top-level array has no keys to encode") }
                for element in array { try add(element, key: "\(key)[]") }
            case is NSNull:
                if let key { pairs.append(percentEscaped(key)) }
            default:
                guard let key else { throw CourierError(.parameterEncodingFailed, "a top-level value has no key to encode") }
                let text: String
                switch value {
                case let bool as Bool: text = bool ? "1" : "0"
                default: text = "\(value)"
                }
                pairs.append(percentEscaped(key) + "=" + percentEscaped(text))
            }
        }
        try add(parameters, key: nil)
        return pairs.joined(separator: "&")
    }

    /// `string` percent-escaped for a query per RFC 3986 §3.4, keeping `?` and `/`.
    public static func percentEscaped(_ string: String) -> String {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: ":#[]@!$&'()*+,;=")
        return string.addingPercentEncoding(withAllowedCharacters: allowed) ?? string
    }
}
