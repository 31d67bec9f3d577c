import Foundation
import NIOCore

/// The bytes of a multipart form, produced as they are sent: delimiters and header blocks from
/// memory, each file opened only when its turn comes and read in large chunks, each stream
/// pulled as it is needed.
///
/// Small pieces (delimiters, headers, form fields, short files) are gathered into one buffer of
/// up to ``chunkLength`` bytes, so a form of many fields is not sent one write per field; a large
/// file's chunks are handed on as they are read, without copying.
struct MultipartBodyStream: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    /// How many bytes a file chunk or a gathered buffer holds at most, unless set.
    static let defaultChunkLength = FileChunkReader.defaultChunkLength

    let parts: [MultipartPart]
    let boundary: MultipartBoundary
    let chunkLength: Int

    init(parts: [MultipartPart], boundary: MultipartBoundary, chunkLength: Int = Self.defaultChunkLength) {
        self.parts = parts
        self.boundary = boundary
        self.chunkLength = Swift.max(chunkLength, 1)
    }

    func makeAsyncIterator() -> Iterator { Iterator(self) }

    struct Iterator: AsyncIteratorProtocol {
        /// Where the iterator is in the form.
        private enum State {
            /// Next: part `index`'s delimiter and header block, or the close delimiter once
            /// `index` is past the last part.
            case head(index: Int)
            /// Sending part `index`'s body.
            case body(index: Int, BodyReader)
            /// Everything has been produced.
            case finished
        }

        /// Reads one part's body.
        private enum BodyReader {
            case data(Data, offset: Int)
            case file(FileChunkReader)
            case stream(any AsyncIteratorProtocol<ByteBuffer, any Error>, remaining: Int64)
        }

        private let form: MultipartBodyStream
        private var state: State = .head(index: 0)
        /// A chunk read while a gathered buffer was full, to hand out next.
        private var carried: ByteBuffer?

        init(_ form: MultipartBodyStream) { self.form = form }

        mutating func next() async throws -> ByteBuffer? {
            if let carried = self.carried {
                self.carried = nil
                return carried
            }
            var gathered = ByteBuffer()
            while true {
                switch self.state {
                case .finished:
                    return gathered.readableBytes > 0 ? gathered : nil

                case .head(let index):
                    guard index < self.form.parts.count else {
                        if !self.form.parts.isEmpty { gathered.writeBytes(self.form.boundary.closeDelimiter) }
                        self.state = .finished
                        continue
                    }
                    let part = self.form.parts[index]
                    gathered.writeBytes(index == 0 ? self.form.boundary.initialDelimiter : self.form.boundary.encapsulationDelimiter)
                    gathered.writeBytes(part.headerBlock)
                    self.state = .body(index: index, self.reader(for: part))

                case .body(let index, .data(let data, let offset)):
                    if offset == data.count {
                        self.state = .head(index: index + 1)
                        continue
                    }
                    let room = self.form.chunkLength - gathered.readableBytes
                    if room <= 0 { return gathered }
                    let end = offset + Swift.min(room, data.count - offset)
                    gathered.writeBytes(data[(data.startIndex + offset)..<(data.startIndex + end)])
                    self.state = .body(index: index, .data(data, offset: end))

                case .body(let index, .file(let reader)):
                    guard let chunk = try await reader.nextChunk() else {
                        self.state = .head(index: index + 1)
                        continue
                    }
                    if let ready = self.gather(chunk, into: &gathered) { return ready }

                case .body(let index, .stream(var iterator, let remaining)):
                    let chunk = try await self.nextChunk(of: &iterator, remaining: remaining, part: index)
                    guard let chunk else {
                        self.state = .head(index: index + 1)
                        continue
                    }
                    self.state = .body(index: index, .stream(iterator, remaining: remaining - Int64(chunk.readableBytes)))
                    if let ready = self.gather(chunk, into: &gathered) { return ready }
                }
            }
        }

        /// Adds a small `chunk` to `gathered` and returns nil to go on gathering; else returns
        /// what is ready to send now (`gathered`, keeping `chunk` for the next call, or `chunk`).
        private mutating func gather(_ chunk: ByteBuffer, into gathered: inout ByteBuffer) -> ByteBuffer? {
            if gathered.readableBytes == 0 {
                if chunk.readableBytes >= self.form.chunkLength { return chunk }
                gathered = chunk
                return nil
            }
            if gathered.readableBytes + chunk.readableBytes <= self.form.chunkLength {
                var chunk = chunk
                gathered.writeBuffer(&chunk)
                return nil
            }
            self.carried = chunk
            return gathered
        }

        private func reader(for part: MultipartPart) -> BodyReader {
            switch part.content {
            case .data(let data):
                .data(data, offset: 0)
            case .file(let url, let size):
                .file(FileChunkReader(
                    url: url, expectedSize: size, chunkLength: self.form.chunkLength, sizeTakenWhen: "when it was appended to the form"))
            case .stream(let makeStream, let length, _):
                .stream(makeStream().makeAsyncIterator(), remaining: length)
            }
        }

        /// The next chunk of a stream part, checked against the length declared for it.
        private func nextChunk(
            of iterator: inout any AsyncIteratorProtocol<ByteBuffer, any Error>,
            remaining: Int64,
            part index: Int
        ) async throws(CourierError) -> ByteBuffer? {
            let part = self.form.parts[index]
            let chunk: ByteBuffer?
            do {
                chunk = try await iterator.next()
            } catch {
                throw error.asCourierError(.bodyReadFailed, "the stream of \(part.summary) failed")
            }
            guard let chunk else {
                if remaining == 0 { return nil }
                throw CourierError(
                    .bodyReadFailed,
                    "the stream of \(part.summary) ended after \(part.bodyLength - remaining) of its declared \(part.bodyLength) bytes")
            }
            if Int64(chunk.readableBytes) > remaining {
                throw CourierError(.bodyReadFailed, "the stream of \(part.summary) gave more than its declared \(part.bodyLength) bytes")
            }
            return chunk
        }
    }
}
