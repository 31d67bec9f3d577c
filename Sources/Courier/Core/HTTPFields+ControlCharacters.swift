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

extension Request {
    /// Refuses a request whose header or trailer field value holds a control character other
    /// than tab, before anything is sent: what an ``Engine`` calls first.
    ///
    /// `HTTPField(name:lenientValue:)` keeps such characters (it turns only CR, LF and NUL into
    /// spaces), and HTTP lets no sender put them in a value (RFC 9110 5.5). Over HTTP/1.1
    /// swift-nio refuses the head only once it is written, and over HTTP/2 it is sent. ``NIOEngine``
    /// and `URLSessionEngine` call this before they use a connection; an engine of your own should.
    /// - Throws: ``CourierError/Code/invalidRequest`` naming the field and the byte.
    public func checkFieldValues() throws(CourierError) {
        // The fields are read where they are, not copied into a list of both: every request pays
        // for this check.
        if let (name, byte) = self.headerFields.firstValueWithControlCharacter {
            throw self.controlCharacter(byte, in: "header", name)
        }
        if let trailers = self.body.trailers, let (name, byte) = trailers.firstValueWithControlCharacter {
            throw self.controlCharacter(byte, in: "trailer", name)
        }
    }

    private func controlCharacter(_ byte: UInt8, in kind: String, _ name: HTTPField.Name) -> CourierError {
        let hex = String(byte, radix: 16, uppercase: true)
        return CourierError(
            .invalidRequest,
            "\(self.summary): the value of the \(kind) field \(name.rawName) holds the control character 0x\(hex.count == 1 ? "0" + hex : hex), which HTTP forbids in a field value (RFC 9110 5.5); nothing was sent",
            request: self)
    }
}
