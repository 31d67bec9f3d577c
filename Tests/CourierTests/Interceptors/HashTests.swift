import Testing

@testable import Courier

/// Digest authentication's MD5 and SHA-256 (swift-crypto's), against the published test vectors.
@Suite("Interceptors: MD5 (RFC 1321) and SHA-256 (FIPS 180-4) vectors")
struct HashTests {
    static func md5(_ text: String) -> String { HTTPAuthorization.DigestAlgorithm("MD5")!.digest(text) }
    static func sha256(_ text: String) -> String { HTTPAuthorization.DigestAlgorithm("SHA-256")!.digest(text) }

    @Test("MD5: the test suite of RFC 1321 appendix A.5")
    func md5() {
        let vectors: [(String, String)] = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
            ("12345678901234567890123456789012345678901234567890123456789012345678901234567890", "57edf4a22be3c955ac49da2e2107b67a"),
        ]
        for (input, digest) in vectors {
            #expect(Self.md5(input) == digest, "MD5(\"\(input)\")")
        }
    }

    @Test("SHA-256: the FIPS 180-4 examples (one block, two blocks, a million 'a')")
    func sha256() {
        let vectors: [(String, String)] = [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
            (
                "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
                "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
            ),
        ]
        for (input, digest) in vectors {
            #expect(Self.sha256(input) == digest, "SHA-256(\"\(input)\")")
        }
        #expect(Self.sha256(String(repeating: "a", count: 1_000_000))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("Both, at the lengths where padding spills into another block (55, 56, 63, 64, 65, 119, 120 bytes)")
    func paddingBoundaries() {
        // Expected values computed with Python's hashlib.
        let vectors: [(Int, String, String)] = [
            (55, "ef1772b6dff9a122358552954ad0df65", "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"),
            (56, "3b0c8ac703f828b04c6c197006d17218", "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"),
            (63, "b06521f39153d618550606be297466d5", "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"),
            (64, "014842d480b571495a4a0363793f7367", "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"),
            (65, "c743a45e0d2e6a95cb859adae0248435", "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"),
            (119, "8a7bd0732ed6a28ce75f6dabc90e1613", "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"),
            (120, "5f61c0ccad4cac44c75ff505e1f1e537", "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"),
        ]
        for (length, md5, sha256) in vectors {
            let input = String(repeating: "a", count: length)
            #expect(Self.md5(input) == md5, "MD5 of \(length) bytes")
            #expect(Self.sha256(input) == sha256, "SHA-256 of \(length) bytes")
        }
    }
}
