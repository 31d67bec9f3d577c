/// The media type for a file name's extension, from a fixed table, so that it gives the same answer
/// on every platform (Linux has no UTType or MobileCoreServices to ask).
enum MIMEType {
    /// What a file with an unknown extension is sent as.
    static let fallback = "application/octet-stream"

    /// The media type for `pathExtension` (without the dot, any case), or ``fallback``.
    static func forPathExtension(_ pathExtension: String) -> String {
        Self.table[pathExtension.lowercased()] ?? Self.fallback
    }

    /// Common extensions, after the IANA registry and the types browsers send.
    private static let table: [String: String] = [
        // Text
        "txt": "text/plain", "text": "text/plain", "log": "text/plain", "md": "text/markdown",
        "markdown": "text/markdown", "csv": "text/csv", "tsv": "text/tab-separated-values",
        "html": "text/html", "htm": "text/html", "css": "text/css", "ics": "text/calendar",
        "vcf": "text/vcard", "rtf": "application/rtf", "xml": "application/xml",
        // Code and data
        "js": "text/javascript", "mjs": "text/javascript", "json": "application/json",
        "jsonld": "application/ld+json", "geojson": "application/geo+json", "yaml": "application/yaml",
        "yml": "application/yaml", "plist": "application/x-plist", "wasm": "application/wasm",
        "sh": "application/x-sh", "swift": "text/x-swift",
        // Images
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "jpe": "image/jpeg",
        "gif": "image/gif", "webp": "image/webp", "heic": "image/heic", "heif": "image/heif",
        "avif": "image/avif", "bmp": "image/bmp", "tif": "image/tiff", "tiff": "image/tiff",
        "ico": "image/vnd.microsoft.icon", "svg": "image/svg+xml", "svgz": "image/svg+xml",
        // Audio
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac", "wav": "audio/wav",
        "ogg": "audio/ogg", "oga": "audio/ogg", "opus": "audio/opus", "flac": "audio/flac",
        "mid": "audio/midi", "midi": "audio/midi", "aif": "audio/aiff", "aiff": "audio/aiff",
        // Video
        "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "webm": "video/webm",
        "ogv": "video/ogg", "avi": "video/x-msvideo", "mpeg": "video/mpeg", "mpg": "video/mpeg",
        "mkv": "video/x-matroska", "3gp": "video/3gpp",
        // Fonts
        "woff": "font/woff", "woff2": "font/woff2", "ttf": "font/ttf", "otf": "font/otf",
        // Documents
        "pdf": "application/pdf", "doc": "application/msword",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls": "application/vnd.ms-excel",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt": "application/vnd.ms-powerpoint",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt": "application/vnd.oasis.opendocument.text",
        "ods": "application/vnd.oasis.opendocument.spreadsheet",
        "odp": "application/vnd.oasis.opendocument.presentation",
        "epub": "application/epub+zip",
        // Archives
        "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip",
        "bz2": "application/x-bzip2", "xz": "application/x-xz", "zst": "application/zstd",
        "tar": "application/x-tar", "7z": "application/x-7z-compressed", "rar": "application/vnd.rar",
        // Binaries
        "bin": "application/octet-stream", "exe": "application/octet-stream",
        "dmg": "application/x-apple-diskimage", "apk": "application/vnd.android.package-archive",
        "der": "application/x-x509-ca-cert", "cer": "application/pkix-cert",
        "pem": "application/x-pem-file", "p12": "application/x-pkcs12",
    ]
}
