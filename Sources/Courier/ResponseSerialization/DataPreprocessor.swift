import Foundation
import HTTPTypes

/// Prepares a non-empty body before a serializer decodes it (Alamofire's `DataPreprocessor`):
/// for example, strips the prefix some APIs put before JSON against cross-site script inclusion
/// (``GoogleXSSIPreprocessor``).
///
/// ``DataResponseSerializer``, ``StringResponseSerializer``, ``JSONResponseSerializer`` and
/// ``DecodableResponseSerializer`` run their `dataPreprocessor`, when they have one, after
/// validation and before decoding; an empty body is not preprocessed. An error it throws fails
/// serialization (a ``CourierError`` as it is, any other error as
/// ``CourierError/Code/responseSerializationFailed`` with the error underneath).
public protocol DataPreprocessor: Sendable {
    /// The data to decode instead of `data`.
    func preprocess(_ data: Data) throws -> Data
}

/// Returns the body as it is.
public struct PassthroughPreprocessor: DataPreprocessor {
    public init() {}

    public func preprocess(_ data: Data) throws -> Data { data }
}

/// Removes Google's `)]}',` line (`)]}',` and a newline) from the start of a body, when it is there.
public struct GoogleXSSIPreprocessor: DataPreprocessor {
    private static let prefix = Data(")]}',\n".utf8)

    public init() {}

    public func preprocess(_ data: Data) throws -> Data {
        data.starts(with: Self.prefix) ? data.dropFirst(Self.prefix.count) : data
    }
}

extension DataPreprocessor where Self == PassthroughPreprocessor {
    /// A ``PassthroughPreprocessor``.
    public static var passthrough: PassthroughPreprocessor { PassthroughPreprocessor() }
}

extension DataPreprocessor where Self == GoogleXSSIPreprocessor {
    /// A ``GoogleXSSIPreprocessor``.
    public static var googleXSSI: GoogleXSSIPreprocessor { GoogleXSSIPreprocessor() }
}

/// A serializer's preprocessor behind one reference, nil for none: the serializers stay within an
/// existential's inline buffer (three words), so a copy into `any ResponseSerializer` (the task's,
/// the notification's) allocates nothing. A preprocessor held inline would take five words.
final class PreprocessorReference: Sendable {
    let preprocessor: any DataPreprocessor

    init(_ preprocessor: any DataPreprocessor) {
        self.preprocessor = preprocessor
    }

    /// `preprocessor` behind a reference, or nil.
    static func make(_ preprocessor: (any DataPreprocessor)?) -> PreprocessorReference? {
        preprocessor.map(PreprocessorReference.init)
    }
}

extension HTTPResponseSerializer {
    /// `data` through `preprocessor`, its errors as serialization failures.
    static func preprocessed(_ data: Data, by preprocessor: (any DataPreprocessor)?, response: HTTPResponse?) throws(CourierError) -> Data {
        guard let preprocessor else { return data }
        do {
            return try preprocessor.preprocess(data)
        } catch let error as CourierError {
            throw error
        } catch {
            throw CourierError(
                .responseSerializationFailed, "the data preprocessor failed (\(type(of: preprocessor)))", response: response, data: data,
                underlyingError: error)
        }
    }
}
