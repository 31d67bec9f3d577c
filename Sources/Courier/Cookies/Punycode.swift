/// RFC 3492's Punycode, encoding only: how an internationalised label (`公司`) is written in a host
/// name (`xn--55qx5d`). The public suffix list names some suffixes in Unicode; URLs carry them encoded.
enum Punycode {
    private static let base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700, initialBias = 72, initialN = 0x80

    /// A host name with every non-ASCII label encoded as `xn--…`, lower-cased; nil when a label
    /// cannot be encoded.
    static func asciiHost(_ host: some StringProtocol) -> String? {
        var labels: [String] = []
        for label in host.split(separator: ".", omittingEmptySubsequences: false) {
            if label.utf8.allSatisfy({ $0 < 0x80 }) {
                labels.append(label.lowercased())
            } else {
                guard let encoded = self.encode(label.lowercased()) else { return nil }
                labels.append("xn--" + encoded)
            }
        }
        return labels.joined(separator: ".")
    }

    /// `host` in the form names compare in: lower-cased, its non-ASCII labels encoded (an ASCII
    /// host, the usual one, without splitting it); as it came, lower-cased, when a label cannot be
    /// encoded.
    static func comparableHost(_ host: some StringProtocol) -> String {
        if host.utf8.allSatisfy({ $0 < 0x80 }) { return host.lowercased() }
        return self.asciiHost(host) ?? host.lowercased()
    }

    /// The Punycode of `input` (without the `xn--` prefix), or nil on overflow.
    static func encode(_ input: String) -> String? {
        let scalars = input.unicodeScalars.map { Int($0.value) }
        var output = scalars.filter { $0 < 0x80 }.map { Character(Unicode.Scalar(UInt8($0))) }
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = self.initialN, delta = 0, bias = self.initialBias
        while handled < scalars.count {
            guard let next = scalars.filter({ $0 >= n }).min() else { return nil }
            let (product, overflow) = (next - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow else { return nil }
            delta += product
            n = next
            for scalar in scalars {
                if scalar < n { delta += 1 }
                if scalar == n {
                    var q = delta
                    var k = self.base
                    while true {
                        let t = k <= bias ? self.tMin : (k >= bias + self.tMax ? self.tMax : k - bias)
                        if q < t { break }
                        output.append(self.digit(t + (q - t) % (self.base - t)))
                        q = (q - t) / (self.base - t)
                        k += self.base
                    }
                    output.append(self.digit(q))
                    bias = self.adapt(delta, numPoints: handled + 1, firstTime: handled == basicCount)
                    delta = 0
                    handled += 1
                }
            }
            delta += 1
            n += 1
        }
        return String(output)
    }

    private static func digit(_ value: Int) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? value + 97 : value + 22)))
    }

    private static func adapt(_ delta: Int, numPoints: Int, firstTime: Bool) -> Int {
        var delta = firstTime ? delta / self.damp : delta / 2
        delta += delta / numPoints
        var k = 0
        while delta > ((self.base - self.tMin) * self.tMax) / 2 {
            delta /= self.base - self.tMin
            k += self.base
        }
        return k + (self.base - self.tMin + 1) * delta / (delta + self.skew)
    }
}
