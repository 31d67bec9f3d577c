/// SHA-256 (FIPS 180-4), for HTTP Digest authentication (RFC 7616) without swift-crypto.
struct SHA256 {
    private var state: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    /// The round constants: the first 32 bits of the fractional parts of the cube roots of the first 64 primes.
    private static let constants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// The digest of `bytes`.
    static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var sha = SHA256()
        sha.update(bytes)
        return sha.finalize()
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
        for index in (0..<8).reversed() { tail.append(UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(index)))) }
        self.update(tail)
        var digest: [UInt8] = []
        for word in self.state {
            for index in (0..<4).reversed() { digest.append(UInt8(truncatingIfNeeded: word >> (8 * UInt32(index)))) }
        }
        return digest
    }

    private mutating func compress(_ block: [UInt8]) {
        var schedule = [UInt32](repeating: 0, count: 64)
        for index in 0..<16 {
            schedule[index] = UInt32(block[index * 4]) << 24 | UInt32(block[index * 4 + 1]) << 16 | UInt32(block[index * 4 + 2]) << 8
                | UInt32(block[index * 4 + 3])
        }
        for index in 16..<64 {
            let s0 = schedule[index - 15].rotatedRight(by: 7) ^ schedule[index - 15].rotatedRight(by: 18) ^ (schedule[index - 15] >> 3)
            let s1 = schedule[index - 2].rotatedRight(by: 17) ^ schedule[index - 2].rotatedRight(by: 19) ^ (schedule[index - 2] >> 10)
            schedule[index] = schedule[index - 16] &+ s0 &+ schedule[index - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, h) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
        for index in 0..<64 {
            let s1 = e.rotatedRight(by: 6) ^ e.rotatedRight(by: 11) ^ e.rotatedRight(by: 25)
            let choice = (e & f) ^ (~e & g)
            let temp1 = h &+ s1 &+ choice &+ Self.constants[index] &+ schedule[index]
            let s0 = a.rotatedRight(by: 2) ^ a.rotatedRight(by: 13) ^ a.rotatedRight(by: 22)
            let majority = (a & b) ^ (a & c) ^ (b & c)
            let temp2 = s0 &+ majority
            (h, g, f, e, d, c, b, a) = (g, f, e, d &+ temp1, c, b, a, temp1 &+ temp2)
        }
        let added = [a, b, c, d, e, f, g, h]
        for index in 0..<8 { self.state[index] = self.state[index] &+ added[index] }
    }
}
