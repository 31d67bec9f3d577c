/// A JSON-like document: what the tree of ``FormNode``s an `Encodable` value wrote turns into,
/// for ``URLEncodedFormEncoder`` to write as pairs and for `ParameterValue` to read.
indirect enum FormValue {
    case null
    case bool(Bool)
    /// A number's shortest text (`1`, `0.5`).
    case number(String)
    case string(String)
    case array([FormValue])
    /// Entries sorted by key (or, for a form encoder that does not alphabetize, in the order written).
    case object([(key: String, value: FormValue)])
}

/// A coding key made from any string or integer.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}
