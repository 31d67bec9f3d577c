import Foundation
import HTTPTypes

/// Encodes parameters as a property-list body, XML or binary (AFNetworking's
/// `AFPropertyListRequestSerializer`); GET, HEAD and DELETE still use the query.
///
/// ```swift
/// var serializer = PropertyListRequestSerializer()
/// serializer.format = .binary
/// let request = try serializer.request(method: .put, urlString: "https://example.com/prefs",
///                                      parameters: ["volume": 7, "muted": false])
/// // Content-Type: application/x-plist
/// ```
///
/// A property list carries strings, numbers, booleans, dates, data, arrays and dictionaries with
/// string keys. Null, sets and other values fail with ``CourierError/Code/parameterEncodingFailed``
/// naming their path.
@dynamicMemberLookup
public struct PropertyListRequestSerializer: HTTPRequestSerializerWrapper {
    /// The formats a property list can be written in.
    public struct Format: Hashable, Sendable {
        fileprivate let foundation: PropertyListSerialization.PropertyListFormat

        /// XML (the default).
        public static let xml = Format(foundation: .xml)
        /// Apple's binary format, `bplist00`.
        public static let binary = Format(foundation: .binary)
    }

    /// The serializer that supplies headers, options and the query-string encoding.
    public var base = HTTPRequestSerializer()
    /// The format to write (XML by default).
    public var format: Format = .xml
    /// Foundation's write options (none are defined today; kept for AFNetworking's `writeOptions`).
    public var writeOptions: PropertyListSerialization.WriteOptions = 0

    /// A serializer with AFNetworking's defaults.
    public init() {}

    /// Applies the base serializer's options and headers; for methods that encode parameters in the
    /// URI, puts them in the query; else, when there are parameters, writes them as the body with
    /// `Content-Type: application/x-plist` unless the request has one.
    public func request(bySerializing request: Request, parameters: (any Sendable)?) throws(CourierError) -> Request {
        let prepared = try self.preparingBody(of: request, parameters: parameters)
        var request = prepared.request
        guard let parameters = prepared.bodyParameters else { return request }
        let plist: Any
        do {
            plist = try Self.foundationObject(ParameterValue(parameters), path: .root)
        } catch {
            throw error.adding(request: request)
        }
        let data: Data
        do {
            data = try PropertyListSerialization.data(fromPropertyList: plist, format: self.format.foundation, options: self.writeOptions)
        } catch {
            throw CourierError(.parameterEncodingFailed, "the parameters could not be written as a property list", request: request, underlyingError: error)
        }
        if !request.headerFields.contains(.contentType) {
            request.headerFields[.contentType] = "application/x-plist"
        }
        request.body = .data(data)
        return request
    }

    /// The tree as Foundation property-list objects.
    private static func foundationObject(_ value: ParameterValue, path: ParameterPath) throws(CourierError) -> Any {
        switch value {
        case .bool(let bool): return NSNumber(value: bool)
        case .number(let number): return number.foundation
        case .string(let string): return string
        case .date(let date): return date
        case .data(let data): return data
        case .array(let elements):
            var objects: [Any] = []
            for (index, element) in elements.enumerated() {
                objects.append(try Self.foundationObject(element, path: path.appending(index: index)))
            }
            return objects
        case .dictionary(let entries):
            var objects: [String: Any] = [:]
            for entry in entries {
                objects[entry.key] = try Self.foundationObject(entry.value, path: path.appending(key: entry.key))
            }
            return objects
        case .null, .set:
            throw CourierError(.parameterEncodingFailed, "the \(value.kind) at '\(path)' has no property-list form")
        }
    }
}
