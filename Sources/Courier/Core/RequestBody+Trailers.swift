import HTTPTypes

extension RequestBody {
    /// The fields a request may not carry in its trailer section, refused before anything is sent
    /// (``trailers``): RFC 9110 6.5.1's kinds, named.
    ///
    /// - Framing: `Content-Length`, `Transfer-Encoding`, `Trailer`.
    /// - Routing: `Host`.
    /// - Request modifiers: `Cache-Control`, `Expect`, `Max-Forwards`, `Pragma`, `Range`, `TE`,
    ///   the conditionals (`If-Match`, `If-None-Match`, `If-Modified-Since`,
    ///   `If-Unmodified-Since`, `If-Range`), and `Cookie`.
    /// - Authentication: `Authorization`, `Proxy-Authorization` (and the response's challenges,
    ///   `WWW-Authenticate`, `Proxy-Authenticate`, `Authentication-Info`).
    /// - How to process the body: `Content-Encoding`, `Content-Type`, `Content-Range`.
    /// - HTTP/1.1's connection fields: `Connection`, `Keep-Alive`, `Proxy-Connection`, `Upgrade`.
    ///
    /// Names compare without regard to case. Pseudo-header fields (`:path`…) cannot be put in
    /// `HTTPFields` at all.
    public static let forbiddenTrailerFieldNames: Set<HTTPField.Name> = [
        .contentLength, .transferEncoding, .trailer,
        HTTPField.Name("Host")!,
        .cacheControl, .expect, .maxForwards, HTTPField.Name("Pragma")!, .range, .te,
        .ifMatch, .ifNoneMatch, .ifModifiedSince, .ifUnmodifiedSince, .ifRange, .cookie,
        .authorization, .proxyAuthorization, .wwwAuthenticate, .proxyAuthenticate, .authenticationInfo,
        .contentEncoding, .contentType, .contentRange,
        .connection, HTTPField.Name("Keep-Alive")!, HTTPField.Name("Proxy-Connection")!, .upgrade,
    ]

    /// The trailer fields to send after `request`'s body: nil when there are none.
    /// - Throws: ``CourierError/Code/invalidRequest`` naming the first field HTTP forbids in a
    ///   trailer (``forbiddenTrailerFieldNames``).
    static func checkedTrailers(of request: Request) throws(CourierError) -> HTTPFields? {
        guard let trailers = request.body.trailers, !trailers.isEmpty else { return nil }
        if let field = trailers.first(where: { Self.forbiddenTrailerFieldNames.contains($0.name) }) {
            throw CourierError(
                .invalidRequest,
                "\(request.summary): the body's trailer fields include \(field.name.rawName), which HTTP forbids in a trailer (RFC 9110 6.5.1); nothing was sent",
                request: request)
        }
        return trailers
    }
}
