import Courier
import Foundation
import Testing

/// The serializers a task keeps as `any ResponseSerializer` (the default data and JSON ones, and
/// the validation part) fit an existential's inline buffer of three words: putting one there
/// allocates nothing. A property held inline that did not fit (a preprocessor's existential, five
/// words) made every request allocate twice more.
@Suite("Response serializers' layout")
struct SerializerLayoutTests {
    static let inlineBuffer = 3 * MemoryLayout<Int>.size

    @Test func theDefaultSerializersFitAnExistentialsInlineBuffer() {
        #expect(MemoryLayout<HTTPResponseSerializer>.size <= Self.inlineBuffer)
        #expect(MemoryLayout<DataResponseSerializer>.size <= Self.inlineBuffer)
        #expect(MemoryLayout<JSONResponseSerializer>.size <= Self.inlineBuffer)
    }

    /// The settings behind references keep their values through copies and changes.
    @Test func theSettingsBehindReferencesKeepTheirValues() throws {
        var json = JSONResponseSerializer()
        #expect(json.dataPreprocessor == nil && !json.removesKeysWithNullValues)
        json.removesKeysWithNullValues = true
        json.dataPreprocessor = GoogleXSSIPreprocessor()
        let copy = json
        json.removesKeysWithNullValues = false
        #expect(copy.removesKeysWithNullValues && copy.dataPreprocessor is GoogleXSSIPreprocessor)
        #expect(!json.removesKeysWithNullValues && json.dataPreprocessor is GoogleXSSIPreprocessor)
        json.dataPreprocessor = nil
        #expect(json.dataPreprocessor == nil)
        let object = try copy.responseObject(for: nil, data: Data(")]}',\n{\"a\": null, \"b\": 1}".utf8)) as? [String: Any]
        #expect(object?.keys.sorted() == ["b"])

        var data = DataResponseSerializer()
        data.dataPreprocessor = GoogleXSSIPreprocessor()
        #expect(try data.responseObject(for: nil, data: Data(")]}',\nx".utf8)) == Data("x".utf8))
        data.dataPreprocessor = nil
        #expect(try data.responseObject(for: nil, data: Data(")]}',\nx".utf8)) == Data(")]}',\nx".utf8))
    }
}
