import Courier
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The validator of the representation a downloaded file holds (its strong `ETag`, else its
/// `Last-Modified`), kept with the file in the extended attribute `user.courier.validator`, so
/// that `--continue` can send it as `If-Range`: a server whose file changed since then sends the
/// whole new one (200) instead of the rest of it (206), which appended to the old bytes would
/// make a file that is neither. curl and wget keep none, and resume into such a file.
///
/// Linux only (other systems, and file systems without user attributes, keep nothing: the resume
/// then sends `Range` alone, as before). The attribute calls are looked up at run time: Swift's
/// Glibc module does not declare them.
enum PartialFileValidator {
    static let attribute = "user.courier.validator"

    /// The validator `response` gives for an `If-Range`: a strong entity tag, else a date (a
    /// weak tag may not be used there, RFC 9110 13.1.5).
    static func validator(of response: HTTPResponse) -> String? {
        if let tag = response.headerFields[.eTag], !tag.hasPrefix("W/") { return tag }
        return response.headerFields[.lastModified]
    }

    /// Keeps `validator` with `file`, or removes the one it had (nil); failures are ignored.
    static func store(_ validator: String?, for file: URL) {
        #if os(Linux)
        guard let calls = Calls.shared else { return }
        file.withUnsafeFileSystemRepresentation { path in
            guard let path else { return }
            if let validator {
                _ = validator.withCString { calls.set(path, Self.attribute, $0, strlen($0), 0) }
            } else {
                _ = calls.remove(path, Self.attribute)
            }
        }
        #endif
    }

    /// The validator kept with `file`, if any.
    static func stored(for file: URL) -> String? {
        #if os(Linux)
        guard let calls = Calls.shared else { return nil }
        return file.withUnsafeFileSystemRepresentation { path -> String? in
            guard let path else { return nil }
            var buffer = [UInt8](repeating: 0, count: 1024)
            let count = buffer.withUnsafeMutableBytes { calls.get(path, Self.attribute, $0.baseAddress, $0.count) }
            guard count > 0 else { return nil }
            return String(decoding: buffer[..<count], as: UTF8.self)
        }
        #else
        return nil
        #endif
    }

    #if os(Linux)
    /// `setxattr`, `getxattr` and `removexattr` from the C library.
    private struct Calls: Sendable {
        typealias Set = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32
        typealias Get = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int
        typealias Remove = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Int32
        let set: Set
        let get: Get
        let remove: Remove

        static let shared: Calls? = {
            guard let set = dlsym(nil, "setxattr"), let get = dlsym(nil, "getxattr"), let remove = dlsym(nil, "removexattr") else {
                return nil
            }
            return Calls(set: unsafeBitCast(set, to: Set.self), get: unsafeBitCast(get, to: Get.self), remove: unsafeBitCast(remove, to: Remove.self))
        }()
    }
    #endif
}
