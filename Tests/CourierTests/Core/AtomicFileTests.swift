@testable import Courier
import Foundation
import Testing

/// ``AtomicFile``'s whole-file writes on the real file system, now that each one syncs its
/// temporary file before the rename and its folder after it: the bytes, over an old file, through
/// a folder that is a symbolic link, no temporary file left. That they reach the disk before a
/// power loss no test can see.
@Suite("Core: atomic file writes")
struct AtomicFileTests {
    /// A fresh folder for one test, removed afterwards.
    static func withFolder(_ body: (URL) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-atomic-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try body(folder)
    }

    /// A new file, a shorter one over it, an empty one: each time the whole file is the last
    /// write's, owner-only, and the folder holds it alone.
    @Test func eachWriteLeavesTheWholeFileAndNothingElse() throws {
        try Self.withFolder { folder in
            let file = folder.appendingPathComponent("cookies.txt")
            for text in ["a longer first version\n", "second\n", ""] {
                try AtomicFile.write(Data(text.utf8), to: file)
                #expect(try Data(contentsOf: file) == Data(text.utf8))
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["cookies.txt"])
            }
            let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        }
    }

    /// A folder reached through a symbolic link (a cache folder linked to another disk): the file
    /// lands in the link's target, which is the folder synced, and the link stays a link.
    @Test func aWriteThroughAFolderThatIsASymbolicLinkLandsInItsTarget() throws {
        try Self.withFolder { folder in
            let real = folder.appendingPathComponent("real")
            try FileManager.default.createDirectory(at: real, withIntermediateDirectories: false)
            let link = folder.appendingPathComponent("link")
            try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
            let file = link.appendingPathComponent("entry.cache")
            try AtomicFile.write(Data("old".utf8), to: file)
            try AtomicFile.write(Data("new".utf8), to: file)
            #expect(try Data(contentsOf: real.appendingPathComponent("entry.cache")) == Data("new".utf8))
            #expect(try FileManager.default.contentsOfDirectory(atPath: real.path) == ["entry.cache"])
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == real.path)
        }
    }

    /// A folder that is not there fails as before: a file-system failure naming the file it
    /// could not make.
    @Test func aMissingFolderIsAFileSystemFailure() throws {
        try Self.withFolder { folder in
            let file = folder.appendingPathComponent("missing").appendingPathComponent("cookies.txt")
            let error = #expect(throws: CourierError.self) { try AtomicFile.write(Data("x".utf8), to: file) }
            #expect(error?.code == .fileSystemFailure)
            #expect(error?.message.hasPrefix("cannot create ") == true, "\(error.map { "\($0)" } ?? "")")
        }
    }
}
