import CourierTesting
import Foundation
import Testing

/// `--resolve HOST:PORT:ADDRESS` (curl's): the addresses to connect to for a name, the URL keeping
/// the name; and `--curl` passing it on.
@Suite("CLI: --resolve")
struct CLIResolveTests {
    @Test func aNameGoesToTheAddressesGiven() async throws {
        var configuration = TestServer.Configuration()
        configuration.recordsRequests = true
        try await TestServer.withServer(configuration) { server in
            let port = server.port
            let result = try await CLIRunner.run(["--resolve", "api.courier.invalid:\(port):127.0.0.1", "http://api.courier.invalid:\(port)/get?via=resolve"])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try jsonObject(result)["args"] as? [String: String] == ["via": "resolve"])
            #expect(server.receivedRequests.map { $0.value(forHTTPHeaderField: "Host") } == ["api.courier.invalid:\(port)"])
            // `*` for every port; an entry for another port does not apply (the name then goes
            // to the system's resolver, which does not know it).
            let any = try await CLIRunner.run(["--resolve", "api.courier.invalid:*:[::1],127.0.0.1", "http://api.courier.invalid:\(port)/get"])
            #expect(any.status == 0, "\(any.standardError)")
            let other = try await CLIRunner.run(["--resolve", "api.courier.invalid:1:127.0.0.1", "http://api.courier.invalid:\(port)/get"])
            #expect(other.status != 0)
            #expect(other.standardError.contains("api.courier.invalid could not be resolved"), "\(other.standardError)")
        }
    }

    @Test func curlIsToldTheAddresses() async throws {
        let result = try await CLIRunner.run(["--curl", "--resolve", "api.example.com:443:10.0.0.7", "https://api.example.com/v1"])
        #expect(result.output == "curl --resolve api.example.com:443:10.0.0.7 https://api.example.com/v1 --header 'User-Agent: courier/0.1.0'\n", "\(result.output)")
    }
}
