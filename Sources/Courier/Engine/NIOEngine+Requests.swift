import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOFileSystem
import NIOPosix

extension NIOExchange {
    /// The AHC request for the current hop; files and streams are sent with back-pressure.
    func makeAHCRequest(_ request: Request) throws -> HTTPClient.Request {
        if request.options.cachePolicy == .returnCacheDataDontLoad {
            throw CourierError(
                .invalidRequest, "\(request.summary): the NIO engine keeps no cache, and the cache policy forbids loading",
                request: request)
        }
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count)
        for field in request.headerFields {
            headers.add(name: field.name.rawName, value: field.value)
        }
        let body = try self.makeBody(request)
        do {
            return try HTTPClient.Request(
                url: request.url,
                method: HTTPMethod(rawValue: request.method.rawValue),
                headers: headers,
                body: body
            )
        } catch let error as HTTPClientError {
            throw NIOEngine.courierError(from: error, request: request)
        }
    }

    private func makeBody(_ request: Request) throws -> HTTPClient.Body? {
        switch request.body.storage {
        case .empty:
            return nil
        case .data(let data):
            return .bytes(data)
        case .file(let url):
            guard let size = request.body.knownLength else {
                throw CourierError(.bodyReadFailed, "\(request.summary): cannot read body file \(url.path)", request: request)
            }
            let path = url.path
            return .stream(contentLength: size) { writer in
                let promise = self.eventLoop.makePromise(of: Void.self)
                promise.completeWithTask {
                    do {
                        try await FileSystem.shared.withFileHandle(forReadingAt: FilePath(path)) { handle in
                            for try await chunk in handle.readChunks(chunkLength: .kibibytes(64)) {
                                try await writer.write(.byteBuffer(chunk)).get()
                            }
                        }
                    } catch {
                        throw CourierError(.bodyReadFailed, "\(request.summary): reading \(path) failed", request: request, underlyingError: error)
                    }
                }
                return promise.futureResult
            }
        case .stream(let stream, let length):
            let contentLength: Int64? = if case .known(let n) = length { n } else { nil }
            return .stream(contentLength: contentLength) { writer in
                let promise = self.eventLoop.makePromise(of: Void.self)
                promise.completeWithTask {
                    do {
                        for try await chunk in stream {
                            try await writer.write(.byteBuffer(chunk)).get()
                        }
                    } catch let error as CourierError {
                        throw error
                    } catch {
                        throw CourierError(.bodyReadFailed, "\(request.summary): the body stream failed", request: request, underlyingError: error)
                    }
                }
                return promise.futureResult
            }
        }
    }
}
