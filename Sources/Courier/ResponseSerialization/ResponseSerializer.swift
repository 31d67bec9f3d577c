import Foundation
import HTTPTypes

/// Validates a response and turns its body into a value (AFNetworking's
/// `AFURLResponseSerialization`).
///
/// Courier calls serializers off the engine's threads, once per task, with the whole body, through
/// ``serialize(response:data:)``: the callback APIs hand on the object and the error together, the
/// async APIs throw the error (the object of a refused body still reaches the event monitors and
/// the ``Foundation/NSNotification/Name/taskDidComplete`` notification).
///
/// Courier's serializers are `Sendable` structs configured with `var`s; each validates through an
/// ``HTTPResponseSerializer`` kept in its `http` property. When `Output` is itself optional
/// (`(any Sendable)?`), ``serialize(response:data:)`` returns a double optional: `.some(nil)` means
/// "validated, no object" (an empty body). Unwrap it with `object ?? nil`, never by converting it to
/// `any Sendable`, which would box the inner `nil` as a value.
public protocol ResponseSerializer<Output>: Sendable {
    /// What the serializer produces.
    associatedtype Output: Sendable

    /// Validates the response and decodes `data` (AFNetworking's
    /// `responseObjectForResponse:data:error:`).
    func responseObject(for response: HTTPResponse?, data: Data?) throws(CourierError) -> Output

    /// Checks the response without decoding it: status code, content type.
    func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError)

    /// The value and the error together, as AFNetworking's completion blocks get them: the JSON,
    /// XML, property-list and image serializers decode the body even when the status code fails
    /// validation (an error body with a 4xx status), though not when the content type does;
    /// ``HTTPResponseSerializer`` and ``DataResponseSerializer`` return the body whatever the
    /// validation found. An error fails the task whether or not an object comes with it. The
    /// default calls ``responseObject(for:data:)``: an error and no object.
    func serialize(response: HTTPResponse?, data: Data?) -> (object: Output?, error: CourierError?)
}

extension ResponseSerializer {
    /// Validates nothing. Courier's serializers all override it; a serializer of your own that keeps
    /// an ``HTTPResponseSerializer`` should forward to it.
    public func validate(_ response: HTTPResponse?, data: Data?) throws(CourierError) {}

    public func serialize(response: HTTPResponse?, data: Data?) -> (object: Output?, error: CourierError?) {
        do {
            return (try self.responseObject(for: response, data: data), nil)
        } catch {
            return (nil, error)
        }
    }
}
