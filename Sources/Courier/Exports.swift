// Courier's currency types are swift-http-types values; re-export them so that `import Courier`
// is enough to read a response's status or build header fields.
@_exported import HTTPTypes
