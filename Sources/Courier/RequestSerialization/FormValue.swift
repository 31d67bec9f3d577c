/// A JSON-like document: what ``URLEncodedFormEncoder``'s tree (``FormNode``) turns into before it
/// is written as pairs, and how `ParameterValue` reads an `Encodable` back from a `JSONEncoder`.
indirect enum FormValue: Decodable {
    case null
    case bool(Bool)
    /// A number's shortest text (`1`, `0.5`).
    case number(String)
    case string(String)
    case array([FormValue])
    /// Entries sorted by key.
    case object([(key: String, value: FormValue)])

    init(from decoder: any Decoder) throws {
        if let container = try? decoder.container(keyedBy: AnyCodingKey.self) {
            var entries: [(key: String, value: FormValue)] = []
            for key in container.allKeys {
                entries.append((key.stringValue, try container.decode(FormValue.self, forKey: key)))
            }
            self = .object(entries.sorted { $0.key.utf16.lexicographicallyPrecedes($1.key.utf16) })
            return
        }
        if var container = try? decoder.unkeyedContainer() {
            var elements: [FormValue] = []
            while !container.isAtEnd {
                elements.append(try container.decode(FormValue.self))
            }
            self = .array(elements)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let integer = try? container.decode(Int64.self) {
            self = .number(String(integer))
        } else if let integer = try? container.decode(UInt64.self) {
            self = .number(String(integer))
        } else if let double = try? container.decode(Double.self) {
            self = .number(ParameterValue.shortestText(double.description))
        } else {
            self = .string(try container.decode(String.self))
        }
    }
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
