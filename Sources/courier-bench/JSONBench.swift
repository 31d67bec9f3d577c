import Courier
import Foundation

/// `courier-bench json`: decoding a ~10 MB JSON body, Courier's serializers against Foundation
/// alone on the same bytes, in one run. No server: this measures serialization only.
enum JSONBench {
    struct Item: Codable, Sendable {
        let id: Int
        let name: String
        let price: Double
        let tags: [String]
        let active: Bool
        let owner: Owner?
    }

    struct Owner: Codable, Sendable {
        let login: String
        let score: Int
    }

    static func run(_ arguments: [String]) {
        var megabytes = 10
        var rounds = 5
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "--megabytes": megabytes = Int(arguments[safe: index + 1] ?? "") ?? megabytes; index += 1
            case "--repeat": rounds = Int(arguments[safe: index + 1] ?? "") ?? rounds; index += 1
            default:
                FileHandle.standardError.write(Data("usage: courier-bench json [--megabytes N] [--repeat K]\n".utf8))
                exit(2)
            }
            index += 1
        }
        let data = Self.document(megabytes: megabytes)
        let response = HTTPResponse(status: .ok, headerFields: [.contentType: "application/json; charset=utf-8"])
        print("courier-bench json: \(data.count) bytes, \(rounds) rounds each, median ms")

        let (foundation, courierJSON) = Self.medians(rounds,
            { _ = try! JSONSerialization.jsonObject(with: data) },
            { _ = try! JSONResponseSerializer().responseObject(for: response, data: data) })
        let (decoder, courierDecodable) = Self.medians(rounds,
            { _ = try! JSONDecoder().decode([Item].self, from: data) },
            { _ = try! DecodableResponseSerializer([Item].self).responseObject(for: response, data: data) })
        print(String(format: "JSONSerialization            %8.1f", foundation))
        print(String(format: "JSONResponseSerializer       %8.1f   Courier/Foundation %.2f×", courierJSON, foundation / courierJSON))
        print(String(format: "JSONDecoder                  %8.1f", decoder))
        print(String(format: "DecodableResponseSerializer  %8.1f   Courier/Foundation %.2f×", courierDecodable, decoder / courierDecodable))
    }

    /// About `megabytes` MB of an array of items.
    static func document(megabytes: Int) -> Data {
        var items: [Item] = []
        var size = 0
        var id = 0
        while size < megabytes * 1_000_000 {
            let item = Item(
                id: id, name: "item \(id) ✓", price: Double(id) * 0.25, tags: ["a", "b\(id % 7)"], active: id % 2 == 0,
                owner: id % 3 == 0 ? nil : Owner(login: "user\(id % 100)", score: id % 1000))
            items.append(item)
            id += 1
            size += 130
        }
        return try! JSONEncoder().encode(items)
    }

    /// Median milliseconds of `first` and `second`, run in alternation (ABBA order) so that
    /// neither gains from going first.
    static func medians(_ rounds: Int, _ first: () -> Void, _ second: () -> Void) -> (Double, Double) {
        func time(_ body: () -> Void) -> Double {
            let start = DispatchTime.now().uptimeNanoseconds
            body()
            return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        }
        first()
        second()  // warm-up
        var a: [Double] = []
        var b: [Double] = []
        for round in 0..<max(1, rounds) {
            if round % 2 == 0 {
                a.append(time(first))
                b.append(time(second))
            } else {
                b.append(time(second))
                a.append(time(first))
            }
        }
        return (a.sorted()[a.count / 2], b.sorted()[b.count / 2])
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
