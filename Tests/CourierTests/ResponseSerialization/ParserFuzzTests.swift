import CourierTesting
@testable import Courier
import Foundation
import HTTPTypes
import Testing

/// Bounded fuzzing of the hand-written parsers: image headers and the charset handling.
///
/// Each test runs a fixed number of iterations from a fixed seed (so failures reproduce) and stops
/// early at a time budget, so the suite stays fast on a loaded machine, but never before its first
/// ``minimumRuns`` inputs (a count the clock does not decide: two cores busy with the whole suite
/// can leave a two-second budget too little time for a thousand). Set `COURIER_FUZZ_SECONDS`
/// (default 2), `COURIER_FUZZ_ITERATIONS` (default 200,000; the charset test runs half) and
/// `COURIER_FUZZ_SEED` to run longer or elsewhere. What passes: no trap, and every result is
/// either a value or a typed ``CourierError`` that keeps the body.
///
/// The loops give their thread up every ``yieldEvery`` inputs: the suite's tests share the
/// cooperative pool (two threads on two cores), and the two loops held both for their whole
/// budget as the suite started, when every other test's `await`s waited for a thread.
@Suite("Parser fuzzing")
struct ParserFuzzTests {
    static let budget = Duration.seconds(Double(ProcessInfo.processInfo.environment["COURIER_FUZZ_SECONDS"] ?? "") ?? 2)
    static let maxRuns = Int(ProcessInfo.processInfo.environment["COURIER_FUZZ_ITERATIONS"] ?? "") ?? 200_000
    static let seed = UInt64(ProcessInfo.processInfo.environment["COURIER_FUZZ_SEED"] ?? "") ?? 0xC0FFEE
    /// Run whatever the budget says (unless `COURIER_FUZZ_ITERATIONS` asks for fewer).
    static let minimumRuns = 1_001
    /// Inputs between two `Task.yield()`s.
    static let yieldEvery = 200

    /// Mutates a valid header: flips, sets interesting values, truncates, extends, splices.
    static func mutate(_ input: [UInt8], _ rng: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            switch Int.random(in: 0..<6, using: &rng) {
            case 0 where !bytes.isEmpty:
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng))
            case 1 where !bytes.isEmpty:
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] = [0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE].randomElement(using: &rng)!
            case 2:
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
            case 3:
                bytes += (0..<Int.random(in: 1...16, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            case 4 where bytes.count > 4:
                let at = Int.random(in: 0..<(bytes.count - 4), using: &rng)
                bytes.replaceSubrange(at..<(at + 4), with: [0xFF, 0xFF, 0xFF, 0xFF])
            default:
                bytes.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...bytes.count, using: &rng))
            }
        }
        return bytes
    }

    @Test func imageHeaders() async {
        var rng = SeededGenerator(seed: Self.seed)
        let seeds = ImageFixture.all.map(\.1)
        let serializer = ImageResponseSerializer()
        let response = Fixture.response(200, "image/png")
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: Self.budget)
        var runs = 0
        var parsed = 0
        while runs < Self.maxRuns, runs < Self.minimumRuns || clock.now < deadline {
            if runs % Self.yieldEvery == 0 { await Task.yield() }
            let bytes: [UInt8]
            if runs % 10 == 0 {
                bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            } else {
                bytes = Self.mutate(seeds[runs % seeds.count], &rng)
            }
            let body = Data(bytes)
            do {
                if let image = try serializer.responseObject(for: response, data: body) {
                    #expect(image.pixelWidth > 0 && image.pixelHeight > 0)
                    parsed += 1
                }
            } catch {
                #expect(error.code == .responseSerializationFailed && error.data == body)
            }
            runs += 1
        }
        print("image-header fuzz: \(runs) inputs (seed \(Self.seed)), \(parsed) parsed as images")
    }

    @Test func charsetsAndText() async {
        var rng = SeededGenerator(seed: Self.seed &+ 1)
        let names = ["utf-8", "UTF-16LE", "utf-16be", "utf-16", "utf-32", "iso-8859-1", "latin1", "windows-1252", "shift_jis", "euc-jp", "us-ascii", "klingon", ""]
        let pieces = [";", "=", "\"", " ", "charset", "CHARSET", "text/plain", "\u{0}", "é", ",", "\t", "'"]
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: Self.budget)
        var runs = 0
        while runs < Self.maxRuns / 2, runs < Self.minimumRuns || clock.now < deadline {
            if runs % Self.yieldEvery == 0 { await Task.yield() }
            var type = ""
            for _ in 0..<Int.random(in: 0...8, using: &rng) {
                type += Bool.random(using: &rng) ? pieces.randomElement(using: &rng)! : names.randomElement(using: &rng)!
            }
            let body = Data((0..<Int.random(in: 0...24, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
            // Header values must be valid field values; skip what HTTPFields would refuse.
            var fields = HTTPFields()
            if let name = HTTPField.Name("Content-Type") { fields.append(HTTPField(name: name, value: type)) }
            let response = HTTPResponse(status: .ok, headerFields: fields)
            _ = response.textEncodingName.flatMap { TextEncoding.encoding(forCharset: $0) }
            do {
                _ = try StringResponseSerializer().responseObject(for: response, data: body)
            } catch {
                #expect(error.code == .responseSerializationFailed && error.data == body)
            }
            runs += 1
        }
        print("charset fuzz: \(runs) Content-Type/body pairs (seed \(Self.seed &+ 1))")
    }
}
