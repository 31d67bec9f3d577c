import Foundation

/// The Public Suffix List (publicsuffix.org): the suffixes under which anyone may register a name
/// (`com`, `co.uk`, `github.io`), so that a cookie store can refuse `Domain=co.uk`, a cookie that
/// would be sent to every site under it.
///
/// ``system`` reads the copy Debian's `publicsuffix` package installs at ``systemListPath``
/// (`apt-get install publicsuffix`; `.ci/run` installs it). Without that file ``system`` is
/// ``implicitRuleOnly``: only the list's implicit rule `*` applies, so a single-label domain
/// (`Domain=com`, `Domain=localhost` from another host) is still refused, but a multi-label suffix
/// such as `co.uk` or `github.io` is not known and a cookie for it is accepted. A store says so
/// once in its log (``MemoryCookieStorage/init(limits:publicSuffixes:logger:clock:)``). Stores
/// read the system list when their first `Set-Cookie` arrives, not before.
///
/// Rules in both sections of the list (ICANN and private) apply. Unicode rules are matched in
/// their Punycode form, as hosts appear in URLs.
public struct PublicSuffixList: Sendable {
    /// Where Debian's `publicsuffix` package puts the list.
    public static let systemListPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    /// The system's list, read once on first use, or ``implicitRuleOnly`` when it cannot be read.
    public static let system: PublicSuffixList =
        (try? PublicSuffixList(contentsOf: URL(fileURLWithPath: systemListPath))) ?? .implicitRuleOnly

    /// No list: only the implicit `*` rule, which makes every top-level label a public suffix.
    public static let implicitRuleOnly = PublicSuffixList(rules: "")

    private var exact: Set<String> = []
    /// Rules `*.x`, stored as `x`.
    private var wildcards: Set<String> = []
    /// Rules `!x`, stored as `x`.
    private var exceptions: Set<String> = []

    /// How many rules the list holds (0 for ``implicitRuleOnly``).
    public var ruleCount: Int { self.exact.count + self.wildcards.count + self.exceptions.count }

    /// Whether the list holds no rule of its own (the system list was missing).
    public var isImplicitRuleOnly: Bool { self.ruleCount == 0 }

    /// A list from the text of a `public_suffix_list.dat`: one rule per line, `//` comments,
    /// `*.` wildcards and `!` exceptions.
    public init(rules text: String) {
        for line in text.split(whereSeparator: \.isNewline) {
            // A rule is the line up to its first white space.
            guard let rule = line.split(whereSeparator: \.isWhitespace).first, !rule.hasPrefix("//") else { continue }
            guard let ascii = Punycode.asciiHost(rule.hasPrefix("!") || rule.hasPrefix("*.") ? rule.drop(while: { $0 == "!" || $0 == "*" || $0 == "." }) : rule) else {
                continue
            }
            if rule.hasPrefix("!") {
                self.exceptions.insert(ascii)
            } else if rule.hasPrefix("*.") {
                self.wildcards.insert(ascii)
            } else {
                self.exact.insert(ascii)
            }
        }
    }

    /// Reads a list from a file.
    /// - Throws: ``CourierError`` with ``CourierError/Code/fileSystemFailure`` when the file
    ///   cannot be read.
    public init(contentsOf url: URL) throws {
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw CourierError(.fileSystemFailure, "cannot read the public suffix list at \(url.path)", underlyingError: error)
        }
        self.init(rules: text)
    }

    /// The public suffix of a domain: `co.uk` for `www.example.co.uk`, `com` for `example.com`,
    /// the last label when no rule matches.
    public func publicSuffix(of domain: String) -> String {
        let domain = domain.lowercased()
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count > 1 else { return domain }
        // The longest matching rule wins; an exception rule beats every other.
        for start in 0..<labels.count {
            let candidate = labels[start...].joined(separator: ".")
            if self.exceptions.contains(candidate) {
                return labels[(start + 1)...].joined(separator: ".")
            }
            if self.exact.contains(candidate) { return candidate }
            if start + 1 < labels.count, self.wildcards.contains(labels[(start + 1)...].joined(separator: ".")) {
                return candidate
            }
        }
        return String(labels[labels.count - 1])
    }

    /// Whether `domain` is itself a public suffix (`co.uk`, `com`, `github.io`).
    public func isPublicSuffix(_ domain: String) -> Bool {
        self.publicSuffix(of: domain) == domain.lowercased()
    }

    /// The public suffix plus one label (`example.co.uk` for `www.example.co.uk`), or nil when
    /// `domain` is a public suffix.
    public func registrableDomain(of domain: String) -> String? {
        let domain = domain.lowercased()
        let suffix = self.publicSuffix(of: domain)
        guard domain.count > suffix.count else { return nil }
        let head = domain.dropLast(suffix.count + 1)
        guard let label = head.split(separator: ".").last else { return nil }
        return "\(label).\(suffix)"
    }
}
