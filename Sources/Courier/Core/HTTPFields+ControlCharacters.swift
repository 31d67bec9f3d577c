import HTTPTypes

extension HTTPFields {
    /// The first field whose value holds a byte HTTP lets no sender generate in a value, and
    /// that byte: a control character other than horizontal tab (RFC 9110 5.5: a value is
    /// visible characters, `obs-text`, spaces and tabs; RFC 9113 8.2.1 and RFC 9112 5.1 make CR,
    /// LF and NUL fatal). Nil when every value may be sent.
    ///
    /// `HTTPField(name:value:)` and ``Request/setValue(_:forHTTPHeaderField:)`` make every value
    /// legal; `HTTPField(name:lenientValue:)` turns CR, LF and NUL into spaces and keeps the
    /// other controls, which a server or proxy may read as the end of the field.
    var firstValueWithControlCharacter: (name: HTTPField.Name, byte: UInt8)? {
        for field in self {
            let byte = field.withUnsafeBytesOfValue { bytes in
                bytes.first { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
            }
            if let byte { return (field.name, byte) }
        }
        return nil
    }
}
