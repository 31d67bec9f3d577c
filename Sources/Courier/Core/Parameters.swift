/// Parameters as AFNetworking takes them: a dictionary whose values are strings, numbers,
/// booleans, `nil`-like nulls (`NSNull`), arrays, sets and nested dictionaries.
///
/// `[String: any Sendable]` lets a mixed literal such as `["q": "swift", "page": 2]` type-check.
public typealias Parameters = [String: any Sendable]
