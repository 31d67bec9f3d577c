import Foundation

// Static members on the protocols (SE-0299), so that a call that takes a serializer, an encoder
// or an interceptor reads as Alamofire's does: `manager.response(for: request, serializer: .data)`,
// `Interceptor(retriers: [.retryPolicy(retryLimit: 3)])`. Each makes the type's value, as its
// initializer does.

extension ResponseSerializer where Self == DataResponseSerializer {
    /// A ``DataResponseSerializer``.
    public static var data: DataResponseSerializer { DataResponseSerializer() }
}

extension ResponseSerializer where Self == StringResponseSerializer {
    /// A ``StringResponseSerializer`` that reads the response's `charset` (UTF-8 without one).
    public static var string: StringResponseSerializer { StringResponseSerializer() }

    /// A ``StringResponseSerializer`` that decodes every body with `encoding`.
    public static func string(encoding: String.Encoding) -> StringResponseSerializer { StringResponseSerializer(encoding: encoding) }
}

extension ResponseSerializer where Self == JSONResponseSerializer {
    /// A ``JSONResponseSerializer`` (AFNetworking's default response serializer).
    public static var json: JSONResponseSerializer { JSONResponseSerializer() }
}

extension ResponseSerializer {
    /// A ``DecodableResponseSerializer`` of `type`, decoding with `decoder` (JSON by default)
    /// after `dataPreprocessor`, if any.
    public static func decodable<Value: Decodable & Sendable>(
        of type: Value.Type, decoder: any DataDecoder = JSONDecoder(), dataPreprocessor: (any DataPreprocessor)? = nil
    ) -> DecodableResponseSerializer<Value> where Self == DecodableResponseSerializer<Value> {
        DecodableResponseSerializer(type, decoder: decoder, dataPreprocessor: dataPreprocessor)
    }
}

extension DataStreamSerializer where Self == PassthroughStreamSerializer {
    /// A ``PassthroughStreamSerializer``: each chunk as `Data`.
    public static var passthrough: PassthroughStreamSerializer { PassthroughStreamSerializer() }
}

extension DataStreamSerializer where Self == StringStreamSerializer {
    /// A ``StringStreamSerializer``: the body as text, UTF-8 unless a byte-order mark says otherwise.
    public static var string: StringStreamSerializer { StringStreamSerializer() }
}

extension DataStreamSerializer {
    /// A ``DecodableStreamSerializer`` of `type`: one value a line, decoded with `decoder` (JSON by default).
    public static func decodable<Value: Decodable & Sendable>(
        of type: Value.Type, decoder: any DataDecoder = JSONDecoder()
    ) -> DecodableStreamSerializer<Value> where Self == DecodableStreamSerializer<Value> {
        DecodableStreamSerializer(type, decoder: decoder)
    }
}

extension ParameterEncoder where Self == JSONParameterEncoder {
    /// A ``JSONParameterEncoder`` with `encoder` (a plain `JSONEncoder` by default).
    public static func json(encoder: JSONEncoder? = nil) -> JSONParameterEncoder { JSONParameterEncoder(encoder: encoder) }
}

extension ParameterEncoder where Self == URLEncodedFormParameterEncoder {
    /// A ``URLEncodedFormParameterEncoder`` with `encoder` and `destination`.
    public static func urlEncodedForm(
        encoder: URLEncodedFormEncoder = URLEncodedFormEncoder(), destination: URLEncodedFormParameterEncoder.Destination = .methodDependent
    ) -> URLEncodedFormParameterEncoder {
        URLEncodedFormParameterEncoder(encoder: encoder, destination: destination)
    }
}

extension RequestAdapter where Self == Adapter {
    /// An ``Adapter`` that adapts with `body`.
    public static func adapter(using body: @escaping @Sendable (Request, AdaptationContext) async throws -> Request) -> Adapter {
        Adapter(body)
    }
}

extension RequestRetrier where Self == Retrier {
    /// A ``Retrier`` that decides with `body`.
    public static func retrier(using body: @escaping @Sendable (FailedAttempt) async throws -> RetryDecision) -> Retrier {
        Retrier(body)
    }
}

extension RequestInterceptor where Self == Interceptor {
    /// An ``Interceptor`` of `adapters`, `retriers` and `interceptors` (none by default: it
    /// changes nothing and retries nothing).
    public static func interceptor(
        adapters: [any RequestAdapter] = [], retriers: [any RequestRetrier] = [], interceptors: [any RequestInterceptor] = []
    ) -> Interceptor {
        Interceptor(adapters: adapters, retriers: retriers, interceptors: interceptors)
    }
}

extension RequestRetrier where Self == RetryPolicy {
    /// A ``RetryPolicy`` with its defaults.
    public static var retryPolicy: RetryPolicy { RetryPolicy() }

    /// A ``RetryPolicy`` with `retryLimit` and the other defaults.
    public static func retryPolicy(retryLimit: Int) -> RetryPolicy { RetryPolicy(retryLimit: retryLimit) }

    /// A ``RetryPolicy`` that retries only requests whose connection was lost
    /// (``CourierError/Code/connectionClosed``), whatever the status (Alamofire's
    /// `ConnectionLostRetryPolicy`): idempotent methods, `retryLimit` times, with the policy's backoff.
    public static func connectionLostRetryPolicy(retryLimit: Int = 2) -> RetryPolicy {
        var policy = RetryPolicy(retryLimit: retryLimit)
        policy.retryableStatusCodes = []
        policy.retryableErrorCodes = [.connectionClosed]
        return policy
    }
}
