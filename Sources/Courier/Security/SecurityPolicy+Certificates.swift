import Foundation

extension SecurityPolicy {
    /// Every certificate in the files of a folder (AFNetworking's `certificatesInBundle:`): files
    /// named `*.cer`, `*.der`, `*.crt` or `*.pem`, PEM or DER. Subfolders are not searched.
    /// - Parameter directory: The folder, for example a resource folder of your bundle.
    /// - Throws: ``CourierError/Code/fileSystemFailure`` when the folder cannot be read,
    ///   ``CourierError/Code/invalidRequest`` when a file is not a certificate.
    public static func certificates(in directory: URL) throws(CourierError) -> Set<Certificate> {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw CourierError(.fileSystemFailure, "cannot list certificates in \(directory.path)", underlyingError: error)
        }
        var result: Set<Certificate> = []
        for name in names.sorted() where Self.certificateExtensions.contains((name as NSString).pathExtension.lowercased()) {
            result.formUnion(try Certificate.certificates(contentsOf: directory.appendingPathComponent(name)))
        }
        return result
    }

    static let certificateExtensions: Set<String> = ["cer", "der", "crt", "pem"]
}
