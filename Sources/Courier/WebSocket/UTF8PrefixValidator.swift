/// Checks UTF-8 a piece at a time (RFC 3629, section 4's table): whether the bytes seen so far can
/// still begin valid text. A text message that arrives in fragments is checked as each fragment
/// comes, so that the connection fails at the fragment that breaks it, as RFC 6455 8.1 prefers
/// ("fail fast"), not at the message's end. A pure value: bytes in, a verdict out.
///
/// A sequence cut at a fragment's end is not an error: the next fragment may finish it
/// (``isAtCharacterBoundary`` tells whether one is pending).
struct UTF8PrefixValidator: Equatable {
    /// Continuation bytes the current character still needs.
    private var pending: UInt8 = 0
    /// The range the next continuation byte must be in: narrower than 0x80...0xBF right after
    /// E0, ED, F0 and F4, which would otherwise begin an overlong form, a surrogate or a value
    /// past U+10FFFF.
    private var lower: UInt8 = 0x80
    private var upper: UInt8 = 0xBF

    /// Whether no character is cut open.
    var isAtCharacterBoundary: Bool { self.pending == 0 }

    /// Takes the next bytes; false when they cannot continue valid UTF-8 (the validator is then
    /// of no further use).
    mutating func take<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> Bool {
        for byte in bytes {
            if self.pending == 0 {
                switch byte {
                case 0x00...0x7F: continue
                case 0xC2...0xDF: self.expect(1)
                case 0xE0: self.expect(2, from: 0xA0)
                case 0xE1...0xEC, 0xEE...0xEF: self.expect(2)
                case 0xED: self.expect(2, through: 0x9F)
                case 0xF0: self.expect(3, from: 0x90)
                case 0xF1...0xF3: self.expect(3)
                case 0xF4: self.expect(3, through: 0x8F)
                default: return false  // 80...C1 (a continuation or an overlong lead), F5...FF
                }
            } else {
                guard byte >= self.lower, byte <= self.upper else { return false }
                self.pending -= 1
                self.lower = 0x80
                self.upper = 0xBF
            }
        }
        return true
    }

    private mutating func expect(_ count: UInt8, from lower: UInt8 = 0x80, through upper: UInt8 = 0xBF) {
        self.pending = count
        self.lower = lower
        self.upper = upper
    }
}
