import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix

extension NIOExchange {
    /// The AHC request for the current hop, sent through the pool whose policy is `trust`; files
    /// and streams are sent with back-pressure.
    func makeAHCRequest(_ request: Request, trust: ServerTrustEvaluator) throws -> HTTPClient.Request {
        if request.url.scheme?.lowercased() == "https", let policyError = trust.policyError {
            // A policy that breaks AFNetworking's rules trusts no server: fail before connecting.
            throw NIOEngine.courierError(from: policyError.underlyingError ?? policyError, request: request, policy: trust.policy)
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
        switch try OutgoingBody(request) {
        case .empty: nil
        case .data(let data): .bytes(data)
        case .stream(let stream, let length): self.streamedBody(stream, length: length, request: request)
        }
    }

    /// A body that writes the stream's chunks as AHC asks for them.
    private func streamedBody(_ stream: RequestBody.Stream, length: RequestBody.Length, request: Request) -> HTTPClient.Body {
        let contentLength: Int64? = if case .known(let n) = length { n } else { nil }
        return .stream(contentLength: contentLength) { writer in
            let promise = self.eventLoop.makePromise(of: Void.self)
            promise.completeWithTask {
                do {
                    try await Self.pump(stream, into: writer)
                } catch {
                    throw Self.bodyStreamFailure(error, request: request)
                }
            }
            return promise.futureResult
        }
    }

    /// What a failed request body stream ends the exchange with: Courier's errors (and the
    /// HTTP/1.1 path's length check) as they are, anything the stream threw as
    /// ``CourierError/Code/bodyReadFailed``.
    static func bodyStreamFailure(_ error: any Error, request: Request) -> any Error {
        if error is CourierError || error is HTTP1PoolError { return error }
        return CourierError(.bodyReadFailed, "\(request.summary): the body stream failed", request: request, underlyingError: error)
    }

    /// Writes each chunk of `chunks` as AHC accepts it. Only a failure to read a chunk is thrown.
    ///
    /// A write AHC refuses ends the body quietly: either the server has already answered (a
    /// status of 300 or more stops the upload, and the response is the outcome, as for a 307
    /// that is followed or a 413), or the request failed, and then AHC's task carries that error.
    static func pump(_ chunks: some AsyncSequence<ByteBuffer, any Error>, into writer: HTTPClient.Body.StreamWriter) async throws {
        var iterator = chunks.makeAsyncIterator()
        while let chunk = try await iterator.next() {
            do {
                try await writer.write(.byteBuffer(chunk)).get()
            } catch {
                return
            }
        }
    }
}
