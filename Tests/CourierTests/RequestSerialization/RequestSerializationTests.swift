/// The namespace of the request-serialization suites, so `swift test --filter RequestSerialization`
/// selects them all.
enum RequestSerializationTests {}
