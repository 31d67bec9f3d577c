import Foundation

/// The default `Accept-Language` and `User-Agent` values of ``HTTPRequestSerializer``.
enum DefaultHeaders {
    /// AFNetworking's `Accept-Language`: the preferred languages in order, with q-values falling by
    /// 0.1 from 1 and stopping after 0.5 (six languages at most): `en-GB;q=1, fr;q=0.9`.
    ///
    /// AFNetworking sets an empty header when there is no preferred language; we set none.
    static func acceptLanguage(preferredLanguages: [String]) -> String? {
        let components = preferredLanguages.prefix(6).enumerated().map { index, language in
            // q-values in tenths: `%0.1g` of 1.0 is `1`, of 0.9 is `0.9`.
            let tenths = 10 - index
            return language + ";q=" + (tenths == 10 ? "1" : "0.\(tenths)")
        }
        return components.isEmpty ? nil : components.joined(separator: ", ")
    }

    /// The user's preferred languages, most preferred first: Foundation's
    /// `Locale.preferredLanguages`, except on Linux, where Foundation answers `en-001` whatever
    /// the user chose: there, the languages of `environment`, as gettext reads them
    /// (``posixPreferredLanguages(environment:)``).
    static func preferredLanguages(environment: [String: String] = Self.languageEnvironment()) -> [String] {
        #if os(Linux)
        return Self.posixPreferredLanguages(environment: environment)
        #else
        return Locale.preferredLanguages
        #endif
    }

    /// The four variables ``posixPreferredLanguages(environment:)`` reads, from this process's
    /// environment: read one by one, not through `ProcessInfo`'s dictionary of every variable,
    /// which each serializer made would build.
    static func languageEnvironment() -> [String: String] {
        var environment: [String: String] = [:]
        for name in ["LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"] {
            if let value = getenv(name) { environment[name] = String(cString: value) }
        }
        return environment
    }

    /// The languages a POSIX program's messages are chosen by (gettext's rule), as language tags.
    /// The locale is the first of `LC_ALL`, `LC_MESSAGES` and `LANG` that is set and not empty
    /// (`de_DE.UTF-8` is `de-DE`). `LANGUAGE`, a list separated by colons (`fr_CA:fr`), comes
    /// instead of it when set, unless the locale is `C` or `POSIX` (or unset), under which gettext
    /// translates nothing: then English, `en`, alone. Names that are no language tag are skipped,
    /// and so are repeats.
    static func posixPreferredLanguages(environment: [String: String]) -> [String] {
        let locale = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
        guard let locale, let localeTag = Self.languageTag(posixLocale: Substring(locale)) else { return ["en"] }
        var languages: [String] = []
        var seen: Set<String> = []
        for name in (environment["LANGUAGE"] ?? "").split(separator: ":") {
            guard let tag = Self.languageTag(posixLocale: name), seen.insert(tag.lowercased()).inserted else { continue }
            languages.append(tag)
        }
        return languages.isEmpty ? [localeTag] : languages
    }

    /// A POSIX locale name as a language tag: `de_DE.UTF-8` and `de_DE@euro` are `de-DE`, `fr` is
    /// `fr`. Nil for `C` and `POSIX` (with or without a codeset: `C.UTF-8`), and for a name that is
    /// no tag: a language of 2 to 8 letters, then subtags of 1 to 8 letters or digits, after `_`
    /// or `-` (so nothing of it can break the header).
    static func languageTag(posixLocale name: Substring) -> String? {
        var name = name
        if let end = name.firstIndex(where: { $0 == "." || $0 == "@" }) { name = name[..<end] }
        guard name != "C", name != "POSIX" else { return nil }
        let subtags = name.split(omittingEmptySubsequences: false) { $0 == "_" || $0 == "-" }
        guard let language = subtags.first, (2...8).contains(language.count), language.allSatisfy({ $0.isASCII && $0.isLetter }),
            subtags.allSatisfy({ subtag in (1...8).contains(subtag.count) && subtag.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
        else { return nil }
        return subtags.joined(separator: "-")
    }

    /// AFNetworking's `User-Agent` form, `name/version (platform; OS version)`, made ASCII.
    ///
    /// - Parameters:
    ///   - name: The application's name (its bundle executable, else the process name).
    ///   - version: The application's version; `nil` leaves out `/version` (a product without a
    ///     version is valid per RFC 9110 §10.1.5, better than AFNetworking's `(null)`).
    ///   - platform: `Linux`, `iOS`, `macOS`…
    ///   - osVersion: The operating system's version string.
    static func userAgent(name: String, version: String?, platform: String, osVersion: String) -> String {
        var product = Self.ascii(name)
        if product.isEmpty { product = "Courier" }
        if let version = version.map(Self.ascii), !version.isEmpty { product += "/" + version }
        let comment = [platform, osVersion].map(Self.ascii).filter { !$0.isEmpty }.joined(separator: "; ")
        return comment.isEmpty ? product : product + " (" + comment + ")"
    }

    /// The user agent of this process, worked out once.
    static let currentUserAgent: String = Self.makeCurrentUserAgent()

    private static func makeCurrentUserAgent() -> String {
        let info = Bundle.main.infoDictionary ?? [:]
        let name = (info["CFBundleExecutable"] as? String) ?? (info["CFBundleIdentifier"] as? String) ?? ProcessInfo.processInfo.processName
        let version = (info["CFBundleShortVersionString"] as? String) ?? (info["CFBundleVersion"] as? String)
        #if os(Linux)
        let platform = "Linux"
        #elseif os(macOS)
        let platform = "macOS"
        #elseif os(iOS)
        let platform = "iOS"
        #elseif os(tvOS)
        let platform = "tvOS"
        #elseif os(watchOS)
        let platform = "watchOS"
        #elseif os(Windows)
        let platform = "Windows"
        #else
        let platform = "Unknown"
        #endif
        let os = ProcessInfo.processInfo.operatingSystemVersion
        let osVersion = ProcessInfo.processInfo.operatingSystemVersionString
        let fallback = "\(os.majorVersion).\(os.minorVersion).\(os.patchVersion)"
        return Self.userAgent(name: name, version: version, platform: platform, osVersion: osVersion.isEmpty ? fallback : osVersion)
    }

    /// `text` in printable ASCII: letters lose their accents (`é` → `e`), other characters go,
    /// and the parentheses and semicolons that structure the header are dropped from the parts.
    /// (AFNetworking transliterates with ICU's `Any-Latin; Latin-ASCII`, not available on Linux.)
    static func ascii(_ text: String) -> String {
        let decomposed = text.decomposedStringWithCanonicalMapping
        let scalars = decomposed.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F && !"();".unicodeScalars.contains($0) }
        return String(String.UnicodeScalarView(scalars)).trimmingCharacters(in: .whitespaces)
    }
}
