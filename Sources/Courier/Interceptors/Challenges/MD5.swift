import Foundation

/// MD5 (RFC 1321), for HTTP Digest authentication (RFC 7616), which still names it. Not for
/// anything that needs a secure hash.
struct MD5 {
    private var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476)
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    /// The per-round shift amounts.
    private static let shifts: [UInt32] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
        5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
        6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ]

    /// The constants: the integer part of 2^32 × |sin(i + 1)|.
    private static let constants: [UInt32] = (0..<64).map { UInt32(truncatingIfNeeded: Int64((abs(sin(Double($0 + 1))) * 4_294_967_296).rounded(.down))) }

    /// The digest of `bytes`.
    static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var md5 = MD5()
        md5.update(bytes)
        return md5.finalize()
    }

    mutating func update(_ bytes: some Sequence<UInt8>) {
        for byte in bytes {
            self.pending.append(byte)
            self.length &+= 1
            if self.pending.count == 64 {
                self.compress(self.pending)
                self.pending.removeAll(keepingCapacity: true)
            }
        }
    }

    mutating func finalize() -> [UInt8] {
        let bitLength = self.length &* 8
        var tail: [UInt8] = [0x80]
        while (self.pending.count + tail.count) % 64 != 56 { tail.append(0) }
        for index in 0..<8 { tail.append(UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(index)))) }
        let saved = self.length
        self.update(tail)
        self.length = saved
        var digest: [UInt8] = []
        for word in [self.state.0, self.state.1, self.state.2, self.state.3] {
            for index in 0..<4 { digest.append(UInt8(truncatingIfNeeded: word >> (8 * UInt32(index)))) }
        }
        return digest
    }

    private mutating func compress(_ block: [UInt8]) {
        var words = [UInt32](repeating: 0, count: 16)
        for index in 0..<16 {
            words[index] = UInt32(block[index * 4]) | UInt32(block[index * 4 + 1]) << 8 | UInt32(block[index * 4 + 2]) << 16
                | UInt32(block[index * 4 + 3]) << 24
        }
        var (a, b, c, d) = self.state
        for round in 0..<64 {
            var f: UInt32
            let g: Int
            switch round {
            case 0..<16: (f, g) = ((b & c) | (~b & d), round)
            case 16..<32: (f, g) = ((d & b) | (~d & c), (5 * round + 1) % 16)
            case 32..<48: (f, g) = (b ^ c ^ d, (3 * round + 5) % 16)
            default: (f, g) = (c ^ (b | ~d), (7 * round) % 16)
            }
            f = f &+ a &+ Self.constants[round] &+ words[g]
            a = d
            d = c
            c = b
            b = b &+ f.rotatedLeft(by: Self.shifts[round])
        }
        self.state = (self.state.0 &+ a, self.state.1 &+ b, self.state.2 &+ c, self.state.3 &+ d)
    }
}

extension UInt32 {
    func rotatedLeft(by count: UInt32) -> UInt32 { (self << count) | (self >> (32 - count)) }
    func rotatedRight(by count: UInt32) -> UInt32 { (self >> count) | (self << (32 - count)) }
}

extension Array where Element == UInt8 {
    /// Lower-case hexadecimal, two digits a byte.
    var lowercaseHex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(self.count * 2)
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
