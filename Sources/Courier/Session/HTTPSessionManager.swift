import Dispatch
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers

/// A session manager with a base URL and one method per HTTP verb (AFNetworking's
/// `AFHTTPSessionManager`).
///
/// Relative URL strings resolve against ``baseURL`` as `URL(string:relativeTo:)` does (RFC 3986);
/// a base URL with a path gets a trailing slash so that `users` lands under it:
///
/// | base URL              | URL string   | request              |
/// |-----------------------|--------------|----------------------|
/// | `http://h/v1`         | `users`      | `http://h/v1/users`  |
/// | `http://h/v1/`        | `/users`     | `http://h/users`     |
/// | `http://h/v1/`        | `users?a=1`  | `http://h/v1/users?a=1` |
/// | `http://h/v1/`        | `https://x/` | `https://x/`         |
/// | `http://h/v1/`        | (empty)      | `http://h/v1/`       |
///
/// ```swift
/// let manager = HTTPSessionManager(baseURL: URL(string: "https://api.example.com/v1"))
/// let response = try await manager.get("users", parameters: ["page": 2])
/// print(response.value ?? "no body")
/// ```
public final class HTTPSessionManager: SessionManager, @unchecked Sendable {
    // @unchecked: the request serializer lives in a lock; everything else is immutable or inherited.

    /// The URL relative URL strings resolve against; a path always ends in `/`.
    public let baseURL: URL?
    /// The policy that applies to ``baseURL``'s host: the manager's policy, or on a ``NIOEngine``
    /// made with ``ServerTrustPolicies`` the one for that host (a host's pinning policy on an
    /// `http` base URL would never be enforced, as the manager's own would not).
    private let baseURLSecurityPolicy: SecurityPolicy
    private let requestSerializerBox = NIOLockedValueBox(StoredRequestSerializer(HTTPRequestSerializer()))
    /// URL strings already resolved against ``baseURL``: an API client asks for the same paths
    /// over and over, and Foundation's parse and join cost about 3 % of a small request's CPU.
    private let resolvedURLStrings = NIOLockedValueBox<[String: ResolvedURL]>([:])

    /// A URL string resolved against ``baseURL``: the absolute string, and what
    /// ``HTTPRequestSerializer/url(from:)`` makes of it (the URL Courier's own serializers build
    /// requests from, or the error it throws), both worked out once per string.
    struct ResolvedURL {
        let string: String
        let parsed: Result<URL, CourierError>
    }
    /// How many resolved strings to keep before starting over.
    static let resolvedURLStringLimit = 256

    /// A manager with no base URL and the default configuration, for the whole process. It
    /// cannot be invalidated.
    public static let shared = HTTPSessionManager(shared: ())

    /// A manager on a new ``NIOEngine``.
    /// - Parameters:
    ///   - baseURL: The URL relative URL strings resolve against.
    ///   - configuration: Timeouts, limits, redirects, proxy.
    ///   - securityPolicy: Which servers to trust.
    public init(baseURL: URL? = nil, configuration: SessionConfiguration = .default, securityPolicy: SecurityPolicy = .default) {
        self.baseURL = baseURL.map(Self.normalizedBaseURL)
        self.baseURLSecurityPolicy = securityPolicy
        super.init(configuration: configuration, securityPolicy: securityPolicy)
    }

    /// A manager on the given engine.
    public init(baseURL: URL? = nil, engine: any Engine, configuration: SessionConfiguration = .default) {
        self.baseURL = baseURL.map(Self.normalizedBaseURL)
        self.baseURLSecurityPolicy = (engine as? NIOEngine)?.serverTrust.policy(forHost: baseURL?.host) ?? .default
        super.init(engine: engine, configuration: configuration)
    }

    private init(shared: Void) {
        self.baseURL = nil
        self.baseURLSecurityPolicy = .default
        super.init(configuration: .default, securityPolicy: .default)
        self.registry.withLockedValue { $0.isProcessWide = true }
        #if DEBUG
        // Alive for the whole process by design: not counted.
        LiveObjectCensus.died(self)
        LiveObjectCensus.died(self.engine as AnyObject)
        #endif
    }

    /// Builds requests from URL strings and parameters. ``HTTPRequestSerializer`` by default.
    public var requestSerializer: any RequestSerializer {
        get { self.requestSerializerBox.withLockedValue { $0.serializer } }
        set {
            let stored = StoredRequestSerializer(newValue)
            self.requestSerializerBox.withLockedValue { $0 = stored }
        }
    }

    /// The request serializer, and the same one as a ``ParsedURLRequestSerializer`` when it is one.
    /// The cast is made once, when the serializer is set: made per request, it copied the
    /// serializer into a new existential box (a malloc and a retain of each of its fields). One
    /// immutable object, so that a request takes it out of the lock with one retain, not a copy
    /// of both existentials (three).
    private final class StoredRequestSerializer: Sendable {
        let serializer: any RequestSerializer
        let parsing: (any ParsedURLRequestSerializer)?

        init(_ serializer: any RequestSerializer) {
            self.serializer = serializer
            self.parsing = serializer as? any ParsedURLRequestSerializer
        }
    }

    /// `url` with a trailing slash when its path is not empty (AFNetworking's rule).
    static func normalizedBaseURL(_ url: URL) -> URL {
        // `URL.path` drops a trailing slash, so look at the encoded path of the components.
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            !components.percentEncodedPath.isEmpty, !components.percentEncodedPath.hasSuffix("/")
        else { return url }
        components.percentEncodedPath += "/"
        return components.url ?? url
    }

    /// The absolute URL string for `urlString`: resolved against ``baseURL``, checked for a scheme
    /// Courier serves and a host.
    public func absoluteURLString(for urlString: String) throws(CourierError) -> String {
        try self.resolved(urlString).string
    }

    private func resolved(_ urlString: String) throws(CourierError) -> ResolvedURL {
        // A pinning policy needs an https base URL (AFNetworking raised an exception there).
        try self.baseURLSecurityPolicy.validate(baseURL: self.baseURL)
        if let resolved = self.resolvedURLStrings.withLockedValue({ $0[urlString] }) {
            return resolved
        }
        let string = try self.resolveURLString(urlString)
        let resolved = ResolvedURL(string: string, parsed: Result { () throws(CourierError) in try HTTPRequestSerializer.url(from: string) })
        self.resolvedURLStrings.withLockedValue { cache in
            if cache.count >= Self.resolvedURLStringLimit { cache.removeAll(keepingCapacity: true) }
            cache[urlString] = resolved
        }
        return resolved
    }

    /// The URL ``HTTPRequestSerializer/url(from:)`` makes of `urlString`'s absolute string (and
    /// the error it throws), parsed once per string.
    private func parsedURL(for urlString: String) throws(CourierError) -> URL {
        try self.resolved(urlString).parsed.get()
    }

    private func resolveURLString(_ urlString: String) throws(CourierError) -> String {
        let url: URL
        if let baseURL {
            if urlString.isEmpty {
                url = baseURL
            } else if let resolved = URL(string: URLText.normalized(urlString), relativeTo: baseURL)?.absoluteURL {
                url = resolved
            } else {
                throw CourierError(.invalidURL, "'\(URLText.redacted(urlString))' is not a valid URL relative to \(Request.redacted(baseURL))")
            }
        } else {
            guard let parsed = URL(string: URLText.normalized(urlString)), !urlString.isEmpty else {
                throw CourierError(.invalidURL, "'\(URLText.redacted(urlString))' is not a valid URL")
            }
            guard parsed.scheme != nil else {
                throw CourierError(.missingBaseURL, "'\(URLText.redacted(urlString))' is relative and the manager has no base URL")
            }
            url = parsed
        }
        guard let scheme = url.scheme, URL.isRequestableScheme(scheme) else {
            throw CourierError(.unsupportedScheme, "\(Request.redacted(url)): only http, https, http+unix and https+unix are supported")
        }
        guard let host = url.host, !host.isEmpty else {
            let missing = URL.unixSocketSchemeUsesTLS(scheme) == nil ? "no host" : "no socket path (its host, percent-encoded)"
            throw CourierError(.invalidURL, "\(Request.redacted(url)) has \(missing)")
        }
        return url.absoluteString
    }

    /// Builds the request for a verb: resolves the URL, serializes the parameters, adds `headers`
    /// (which win over the serializer's).
    public func request(
        method: HTTPRequest.Method,
        urlString: String,
        parameters: (any Sendable)?,
        headers: HTTPFields = [:]
    ) throws(CourierError) -> Request {
        let stored = self.requestSerializerBox.withLockedValue { $0 }
        var request: Request
        if let parsing = stored.parsing {
            request = try parsing.request(method: method, parsedURL: try self.parsedURL(for: urlString), parameters: parameters)
        } else {
            request = try stored.serializer.request(
                method: method, urlString: try self.absoluteURLString(for: urlString), parameters: parameters)
        }
        request.headerFields.replaceFields(named: headers)
        return request
    }
}

extension HTTPFields {
    /// Replaces every field that has a name among `fields`' with all of `fields`' fields of that
    /// name, in their order: a verb's `headers` win over the serializer's, and a name given twice
    /// (two `Accept` fields, a `Cookie` split in two) is sent twice. Setting each field by name
    /// kept only the last of a name given more than once.
    mutating func replaceFields(named fields: HTTPFields) {
        for index in fields.indices where !fields[..<index].contains(where: { $0.name == fields[index].name }) {
            self[fields: fields[index].name] = fields[fields: fields[index].name]
        }
    }
}
