import Courier
import CourierTesting
import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import Testing

/// ``ValidatingResponseSerializer``, without I/O: the base's validation, then the checks in the
/// order they were added (each once), then the base's decoding; the errors they make.
@Suite("Validating response serializer")
struct ValidatingResponseSerializerTests {
    struct Refused: Error, Equatable {
        var reason: String
    }

    /// Records the checks' order, then refuses or not.
    static func recording(_ log: NIOLockedValueBox<[String]>, _ name: String, refuses: Bool = false) -> ValidatingResponseSerializer<JSONResponseSerializer>.Check {
        { _, _ in
            log.withLockedValue { $0.append(name) }
            if refuses { throw Refused(reason: name) }
        }
    }

    @Test func theChecksRunOnceEachInOrderBetweenValidationAndDecoding() throws {
        let log = NIOLockedValueBox<[String]>([])
        let serializer = JSONResponseSerializer()
            .validating(Self.recording(log, "first"))
            .validating(Self.recording(log, "second"))
        let value = try serializer.responseObject(for: Fixture.json(), data: Fixture.data(#"{"a": 1}"#))
        #expect((value as? [String: any Sendable])?["a"] as? Int == 1)
        #expect(log.withLockedValue { $0 } == ["first", "second"])

        // The base's validation comes first: a 404 is the base's error, and no check ran.
        log.withLockedValue { $0 = [] }
        do {
            _ = try serializer.responseObject(for: Fixture.json(404), data: Fixture.data("{}"))
        } catch {
            #expect(error.code == .unacceptableStatusCode)
        }
        #expect(log.withLockedValue { $0 }.isEmpty)

        // A check refuses before the body is decoded: its error, not the decoder's.
        let refusing = JSONResponseSerializer().validating(Self.recording(log, "refusing", refuses: true))
        do {
            _ = try refusing.responseObject(for: Fixture.json(), data: Fixture.data("not json"))
            Issue.record("the check refuses")
        } catch {
            #expect(error.code == .responseValidationFailed)
            #expect(error.underlyingError as? Refused == Refused(reason: "refusing"))
            #expect(error.response?.status.code == 200)
            #expect(error.data == Fixture.data("not json"), "the body stays with the error")
            #expect(error.message.contains("failed a validation"))
        }
        // A check that passes leaves the decoder's error.
        do {
            _ = try JSONResponseSerializer().validating { _, _ in }.responseObject(for: Fixture.json(), data: Fixture.data("not json"))
            Issue.record("the body is not JSON")
        } catch {
            #expect(error.code == .responseSerializationFailed)
        }
    }

    @Test func aCourierErrorFromACheckIsTheErrorAsItIs() {
        let serializer = DataResponseSerializer().validating { response, data in
            throw CourierError(.unacceptableStatusCode, "teapots only", response: response, data: data)
        }
        do {
            _ = try serializer.responseObject(for: Fixture.response(200, "text/plain"), data: Fixture.data("x"))
            Issue.record("the check refuses")
        } catch {
            #expect(error.code == .unacceptableStatusCode)
            #expect(error.message == "teapots only")
        }
    }

    @Test func noResponseIsNotChecked() throws {
        let log = NIOLockedValueBox<[String]>([])
        let serializer = JSONResponseSerializer().validating(Self.recording(log, "check", refuses: true))
        try serializer.validate(nil, data: nil)
        #expect(log.withLockedValue { $0 }.isEmpty)
    }

    /// AFNetworking's form, the value and the error together: the base's decoded value with the
    /// check's error; the base's error as it is, without running the check.
    @Test func serializeKeepsTheValueBesideTheCheckError() {
        let log = NIOLockedValueBox<[String]>([])
        let serializer = JSONResponseSerializer().validating(Self.recording(log, "check", refuses: true))
        let (object, error) = serializer.serialize(response: Fixture.json(), data: Fixture.data(#"{"a": 1}"#))
        #expect((object as? [String: any Sendable])?["a"] as? Int == 1)
        #expect(error?.code == .responseValidationFailed)
        #expect(log.withLockedValue { $0 } == ["check"])
        let (_, statusError) = serializer.serialize(response: Fixture.json(500), data: Fixture.data(#"{"a": 1}"#))
        #expect(statusError?.code == .unacceptableStatusCode)
        #expect(log.withLockedValue { $0 } == ["check"], "not run after the base's error")
    }

    /// The value-and-error form meets the errors in the throwing form's order: a check that
    /// refuses a body the base cannot decode (an HTML page under a 200) is the error, not the
    /// decoder's. It was the decoder's, so a `failure` block, a notification and a retrier that
    /// wants `.responseValidationFailed` saw another error than an `async` call.
    @Test func serializeReportsACheckBeforeTheDecodersError() {
        let log = NIOLockedValueBox<[String]>([])
        let serializer = JSONResponseSerializer().validating(Self.recording(log, "check", refuses: true))
        let page = Fixture.data("<html>down for maintenance</html>")
        let (object, error) = serializer.serialize(response: Fixture.json(), data: page)
        #expect(object == nil)
        #expect(error?.code == .responseValidationFailed)
        #expect(error?.underlyingError as? Refused == Refused(reason: "check"))
        #expect(error?.data == page)
        #expect(log.withLockedValue { $0 } == ["check"])
        #expect { try serializer.responseObject(for: Fixture.json(), data: page) } throws: {
            ($0 as? CourierError)?.code == .responseValidationFailed
        }
        // A check that passes leaves the decoder's error.
        let passing = JSONResponseSerializer().validating { _, _ in }
        #expect(passing.serialize(response: Fixture.json(), data: page).error?.code == .responseSerializationFailed)
        // The base's validation still comes first, the checks not run: a refused status
        // alone, or with a body that does not parse under it.
        log.withLockedValue { $0 = [] }
        #expect(serializer.serialize(response: Fixture.json(500), data: page).error?.code == .unacceptableStatusCode)
        #expect(serializer.serialize(response: Fixture.json(200, "text/html"), data: page).error?.code == .unacceptableContentType)
        #expect(log.withLockedValue { $0 }.isEmpty)
    }

    /// Through a manager's callback API (AFNetworking's `responseSerializer`): the check's error
    /// is the task's failure.
    @Test func aManagersResponseSerializerCanBeOne() async throws {
        try await withTestServer { server in
            let manager = HTTPSessionManager(baseURL: server.baseURL)
            manager.completionQueue = TestQueues.completion
            manager.responseSerializer = JSONResponseSerializer().validating { _, _ in throw Refused(reason: "no") }
            let error: CourierError? = await withCheckedContinuation { continuation in
                manager.get("get", success: { _, _ in
                    continuation.resume(returning: nil)
                }, failure: { _, error in
                    continuation.resume(returning: error)
                })
            }
            await manager.invalidate(cancelingTasks: true)
            #expect(error?.code == .responseValidationFailed)
            #expect(error?.underlyingError as? Refused == Refused(reason: "no"))
        }
    }
}
