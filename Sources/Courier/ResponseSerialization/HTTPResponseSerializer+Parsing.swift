import Foundation
import HTTPTypes

extension HTTPResponseSerializer {
    /// AFNetworking's rule for the serializers that parse a body (JSON, XML parser, XML document,
    /// property list, image): validate, and parse unless the content type was refused.
    ///
    /// - A refused content type (alone, or chained under a refused status) stops there: the
    ///   validation error and no object.
    /// - A refused status with an acceptable content type (or any content type, when none is set)
    ///   does not stop the parse: the object comes beside the status error, as AFNetworking's
    ///   failure blocks get it (its `responseObjectForResponse:data:error:` returns `nil` only when
    ///   the error is, or wraps, `NSURLErrorCannotDecodeContentData`).
    /// - An empty body (`isEmpty`, or a 204 or 205) gives `.some(nil)` beside the validation
    ///   error, if any.
    /// - A `preprocessor` or a `parse` that fails gives its error, or the status error with that
    ///   error as its ``CourierError/underlyingError`` (AFNetworking chains them the other way
    ///   round; the status stays on top here so that `error.code` says what the server did).
    func serialize<Object>(
        _ response: HTTPResponse?, data: Data?, isEmpty: (Data) -> Bool = { $0.isEmpty },
        preprocessor: (any DataPreprocessor)? = nil, parse: (Data) throws(CourierError) -> Object
    ) -> (object: Object??, error: CourierError?) {
        var statusError: CourierError?
        do {
            try self.validate(response, data: data)
        } catch {
            guard error.code == .unacceptableStatusCode else { return (nil, error) }
            // A status-code failure that also had a bad content type: don't parse.
            if (error.underlyingError as? CourierError)?.code == .unacceptableContentType { return (nil, error) }
            statusError = error
        }
        guard var data, !Self.isEmptyStatus(response), !isEmpty(data) else { return (.some(nil), statusError) }
        do throws(CourierError) {
            data = try Self.preprocessed(data, by: preprocessor, response: response)
            return (.some(try parse(data)), statusError)
        } catch {
            guard var statusError else { return (nil, error) }
            statusError.underlyingError = error
            return (nil, statusError)
        }
    }

    /// What ``ResponseSerializer/responseObject(for:data:)`` makes of a serializer's
    /// ``ResponseSerializer/serialize(response:data:)``: the error thrown, else the object.
    static func objectOrError<Object>(_ result: (object: Object??, error: CourierError?)) throws(CourierError) -> Object? {
        if let error = result.error { throw error }
        // `.some(nil)` (validated, no object) becomes nil.
        return result.object ?? nil
    }
}
