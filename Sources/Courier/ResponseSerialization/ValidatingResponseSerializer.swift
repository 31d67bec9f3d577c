import Foundation
import HTTPTypes

/// A serializer with a check of yours: `base` validates the response as it does (status code,
/// content type), then `check` looks at the response and its body, then `base` decodes the body
/// (Alamofire's `validate { request, response, data in … }`). Made by
/// ``ResponseSerializer/validating(_:)``.
///
/// ```swift
/// let serializer = JSONResponseSerializer().validating { response, data in
///     guard response.headerFields[HTTPField.Name("X-Signature")!] != nil else { throw MissingSignature() }
/// }
/// let response = try await manager.response(for: request, serializer: serializer)
/// ```
///
/// A check that throws fails the task with ``CourierError/Code/responseValidationFailed`` and
/// what it threw as the ``CourierError/underlyingError`` (a ``CourierError`` it throws is the
/// task's error as it is). Checks chained with ``ResponseSerializer/validating(_:)`` run in the
/// order they were added; the first that throws is the error. A task that failed before a
/// response head arrived is not checked: its own error stands.
public struct ValidatingResponseSerializer<Base: ResponseSerializer>: ResponseSerializer {
    public typealias Output = Base.Output

    /// A check of a response and its body (absent when there was none): it throws to refuse them.
    public typealias Check = @Sendable (_ response: HTTPResponse, _ data: Data?) throws -> Void

    /// The serializer that validates first and decodes last.
    public var base: Base
    /// The checks, in the order they were added.
    private var checks: [Check]

    /// `base` with `check` between its validation and its decoding.
    public init(_ base: Base, check: @escaping Check) {
        self.base = base
        self.checks = [check]
    }

    /// `base`'s validation, then the checks.
    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        try self.base.validate(response, data: data)
        try self.runChecks(response, data: data)
    }

    /// ``validate(_:data:)``, then `base`'s decoding. Each check runs once; `base`'s own checks
    /// of status and content type run again inside its decoding (the protocol has no decoding
    /// without them), which costs a comparison or two.
    public func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> Base.Output {
        try self.validate(response, data: data)
        return try self.base.responseObject(for: response, data: data)
    }

    /// `base`'s value and error together, as AFNetworking's completion blocks get them, with the
    /// errors in the order ``responseObject(for:data:)`` meets them: `base`'s validation error as
    /// it is (the checks do not run); else the first check's error, if any, with the value `base`
    /// made; else `base`'s decoding error, if any.
    public func serialize(response: HTTPResponse?, data: Data?) -> (object: Base.Output?, error: CourierError?) {
        let (object, baseError) = self.base.serialize(response: response, data: data)
        if let baseError {
            // Refused by `base`'s validation, which comes before the checks: its error stands.
            // Validated again only on this path, to tell that from a body `base` could not decode,
            // which comes after them (a check refusing an HTML error page under a 200 is the
            // error, not the decoder's complaint about the page).
            do {
                try self.base.validate(response, data: data)
            } catch {
                return (object, baseError)
            }
        }
        do {
            try self.runChecks(response, data: data)
            return (object, baseError)
        } catch {
            return (object, error)
        }
    }

    /// This serializer with one more check, run after the others.
    public func validating(_ check: @escaping Check) -> ValidatingResponseSerializer<Base> {
        var copy = self
        copy.checks.append(check)
        return copy
    }

    private func runChecks(_ response: HTTPResponse?, data: Data?) throws(CourierError) {
        guard let response else { return }
        for check in self.checks {
            do {
                try check(response, data)
            } catch let error as CourierError {
                throw error
            } catch {
                throw CourierError(
                    .responseValidationFailed,
                    "the response (\(response.status.code) \(response.status.reasonPhrase)) failed a validation: \(error)",
                    response: response, data: data, underlyingError: error)
            }
        }
    }
}

extension ResponseSerializer {
    /// This serializer with `check` run after its own validation and before it decodes the body
    /// (Alamofire's custom `validate` closure): ``ValidatingResponseSerializer``.
    ///
    /// ```swift
    /// let serializer = DataResponseSerializer()
    ///     .validating { _, data in guard data != nil else { throw ValidationError.missingData } }
    /// ```
    public func validating(_ check: @escaping ValidatingResponseSerializer<Self>.Check) -> ValidatingResponseSerializer<Self> {
        ValidatingResponseSerializer(self, check: check)
    }
}

extension ResponseSerializer {
    /// This serializer, also refusing a body whose content type `request`'s `Accept` field does
    /// not take (the content-type half of Alamofire's automatic validation, `validate()`; the
    /// status codes are this serializer's own, 200–299 unless set otherwise).
    ///
    /// ```swift
    /// var request = Request(url: url)
    /// request.headerFields[.accept] = "application/json, text/*;q=0.5"
    /// let response = try await manager.response(for: request, serializer: DataResponseSerializer().validatingAccept(of: request))
    /// ```
    ///
    /// Each media range of the field counts, `*` standing for any type or subtype; parameters are
    /// ignored but `q=0`, which refuses its range. The most specific range that matches a type
    /// decides (RFC 9110, 12.5.1): `text/*, text/html;q=0` takes `text/plain`, not `text/html`,
    /// and `*/*, image/webp;q=0` any type but `image/webp`. A request without `Accept`, or whose
    /// `Accept` takes `*/*` and refuses nothing, takes any content type. An empty body is not
    /// checked; a body without a `Content-Type` is refused unless `*/*` is taken. A refusal is
    /// ``CourierError/Code/unacceptableContentType``, its message naming the type and the
    /// accepted ones. The field is read from `request` now: what an adapter or a redirect changes
    /// later is not seen.
    public func validatingAccept(of request: Request) -> ValidatingResponseSerializer<Self> {
        let ranges = AcceptedMediaRanges(request.headerFields[.accept])
        return self.validating { response, data throws(CourierError) in try ranges.validate(response, data: data) }
    }
}

/// The media ranges an `Accept` field takes (RFC 9110, 12.5.1), as a content-type check.
///
/// The most specific range that matches a type decides (`text/html`, then `text/*`, then
/// `*/*`): `*/*, image/webp;q=0` refuses `image/webp` and takes the rest, `text/*, text/html;q=0`
/// takes `text/plain` and refuses `text/html`. A range listed both with and without `q=0` counts
/// as taken.
struct AcceptedMediaRanges: Sendable {
    /// The taken ranges as an ``HTTPResponseSerializer``'s acceptable content types; nil takes any
    /// type (no field, or `*/*` taken and nothing refused).
    let check: HTTPResponseSerializer?
    /// The ranges taken, lower-cased.
    let taken: Set<String>
    /// The ranges refused (`q=0`) and not also taken, lower-cased.
    let refused: Set<String>

    init(_ field: String?) {
        let elements = WeightedList.elements(field ?? "")
        let taken = Set(elements.filter { !$0.refused }.map(\.value))
        self.taken = taken
        self.refused = Set(elements.filter(\.refused).map(\.value)).subtracting(taken)
        // No field (or an empty one) takes anything; a field whose every range is refused, nothing.
        if elements.isEmpty || (taken.contains("*/*") && self.refused.isEmpty) {
            self.check = nil
        } else {
            var check = HTTPResponseSerializer()
            check.acceptableContentTypes = taken
            self.check = check
        }
    }

    func validate(_ response: HTTPResponse, data: Data?) throws(CourierError) {
        // An empty body is not checked, as HTTPResponseSerializer checks none.
        guard let check = self.check, let data, !data.isEmpty else { return }
        // A body without a type is taken by `*/*` alone; no refusal names it.
        guard let mime = response.mimeType, let slash = mime.firstIndex(of: "/") else {
            if self.taken.contains("*/*") { return }
            if let error = check.contentTypeError(response, data: data) { throw error }
            return
        }
        // No taken range matches: refused, as an HTTPResponseSerializer refuses it.
        if let error = check.contentTypeError(response, data: data) { throw error }
        // A taken range matches; the most specific range that matches decides, and may refuse.
        guard !self.refused.isEmpty else { return }
        let matching = [mime, String(mime[..<slash]) + "/*", "*/*"]
        guard let decisive = matching.first(where: { self.taken.contains($0) || self.refused.contains($0) }),
              self.refused.contains(decisive)
        else { return }
        let accepted = HTTPResponseSerializer.acceptedList(self.taken, suffixes: [])
        throw CourierError(
            .unacceptableContentType, "unacceptable content type: \(mime) (refused by \(decisive);q=0; \(accepted))",
            response: response, data: data)
    }
}
