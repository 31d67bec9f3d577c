import HTTPTypes

/// The trailer fields the request-trailer tests send.
extension HTTPField.Name {
    static let courierChecksum = HTTPField.Name("Courier-Checksum")!
    static let serverTiming = HTTPField.Name("Server-Timing")!
}
