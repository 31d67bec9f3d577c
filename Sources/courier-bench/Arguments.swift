/// The command line of `courier-bench`, parsed by hand (the package takes no argument-parser
/// dependency for one tool).
struct Arguments: Sendable {
    enum Scenario: String, Sendable, CaseIterable {
        /// One request after another over one keep-alive connection.
        case sequential
        /// `concurrency` requests in flight at all times.
        case concurrent
    }

    enum ServerChoice: String, Sendable {
        case nginx, testserver, auto
    }

    enum ClientKind: String, Sendable, CaseIterable {
        /// Courier's async API: `HTTPSessionManager.response(method:urlString:serializer:)`.
        case courier
        /// Courier's AFNetworking-style API: `dataTask(method:urlString:success:failure:)`.
        case courierCallback = "courier-callback"
        /// AsyncHTTPClient's async `execute(_:timeout:)`, as a typical user calls it.
        case ahc
        /// FoundationNetworking's URLSession (libcurl).
        case urlsession
        /// `courier` on CourierURLSession's `URLSessionEngine` instead of `NIOEngine`: the same
        /// session on the other engine, beside `urlsession` (cleartext only, as `urlsession`).
        case courierURLSession = "courier-urlsession"
        /// `courier` with an empty interceptor (`Interceptor()`) and one event monitor that does
        /// nothing: the cost of the machinery when nothing is configured (issue 19: at most 3 %).
        case courierObserved = "courier-observed"
        /// `courier` with one adapter that changes nothing and one event monitor: what an adapter
        /// costs (each attempt adapts on a task of its own).
        case courierAdapted = "courier-adapted"
        /// `courier` without a response cache and without a cookie store: what the two stores the
        /// default configuration has cost a request that neither caches nor sets cookies.
        case courierNoStores = "courier-nostores"
        /// `courier` with `postsTaskNotifications` and `collectsTaskMetrics` off: what
        /// AFNetworking's notifications and the task metrics, on by default, cost a request.
        case courierLean = "courier-lean"
        /// Courier's `NIOEngine` alone, through the `Engine` seam with no session above it: what
        /// the layers above the engine cost (its ratio to `courier`), and the engine beside AHC.
        case courierEngine = "courier-engine"
        /// `courier` and `courier-engine` reaching nginx through its Unix-domain socket
        /// (`SessionConfiguration.unixSocketPaths` maps the URL's host to it) instead of loopback
        /// TCP: what the socket saves. Only with nginx started by the bench.
        case courierUnix = "courier-unix"
        case courierEngineUnix = "courier-engine-unix"
        /// A swift-openapi-generator client (`GET /small`, JSON decoded) on CourierOpenAPI's
        /// `CourierTransport` (issue 31).
        case openapiCourier = "openapi-courier"
        /// The same client on `CourierTransport` over a manager without task notifications and
        /// task metrics (`courier-lean`'s settings).
        case openapiCourierLean = "openapi-courier-lean"
        /// The same generated client on swift-openapi-async-http-client's `AsyncHTTPClientTransport`.
        case openapiAHC = "openapi-ahc"
        /// Go's net/http client (`Scripts/go-bench`, a process of its own; its own CPU is counted),
        /// when a `go` toolchain is on the PATH: measured by default then (issue 29).
        case go
    }

    var scenarios: [Scenario] = Scenario.allCases
    /// Measured requests per run; nil means the scenario's default (20,000 or 50,000).
    var requests: Int?
    var concurrency = 64
    /// A server to use instead of starting one; it must answer GET with 200.
    var url: String?
    var server = ServerChoice.auto
    var clients: [ClientKind] = [.courier, .courierCallback, .ahc, .urlsession]
    /// Unmeasured requests before each measured run.
    var warmup = 1000
    /// Measured runs per client and scenario; the clients take turns.
    var repeats = 1
    var json = false
    /// Serve HTTPS (nginx only, HTTP/1.1 over TLS 1.3 with CourierTesting's certificates).
    var tls = false
    /// Serve HTTPS with `h2` offered through ALPN (implies ``tls``); Courier and AHC both take it.
    var http2 = false

    func requestCount(for scenario: Scenario) -> Int {
        if let requests { return requests }
        switch scenario {
        case .sequential: return 20_000
        case .concurrent: return 50_000
        }
    }

    func concurrency(for scenario: Scenario) -> Int {
        scenario == .sequential ? 1 : self.concurrency
    }

    static let usage = """
        usage: courier-bench [--scenario sequential|concurrent|all] [--requests N] [--concurrency N]
                             [--url URL] [--server nginx|testserver|auto]
                             [--clients courier,courier-callback,ahc,urlsession,courier-observed,courier-adapted,courier-nostores,courier-lean,courier-engine,courier-unix,courier-engine-unix,openapi-courier,openapi-courier-lean,openapi-ahc,go]
                             [--warmup N] [--repeat K] [--json] [--tls] [--http2]

          --scenario     which work to run (default: all)
          --requests     measured requests per run (default: 20000 sequential, 50000 concurrent)
          --concurrency  requests in flight and connections per client in the concurrent scenario (default: 64)
          --url          use this server instead of starting one (loopback only; https when its chain
                         comes from CourierTesting's root CA, as TestCertificates' localhost chain does)
          --server       the server to start: nginx, testserver, or auto = nginx when installed (default: auto)
          --clients      comma-separated clients to measure (default: the first four); courier-observed
                         and courier-adapted are courier with an empty interceptor and one no-op event
                         monitor, and with one no-op adapter and the monitor; courier-nostores is
                         courier without the default response cache and cookie store; courier-lean
                         is courier without task notifications and task metrics; courier-engine
                         is Courier's NIOEngine alone, through the Engine seam with no session;
                         courier-unix and courier-engine-unix are the two reaching nginx through
                         its Unix-domain socket instead of loopback TCP, with nginx started by the
                         bench (their ratios to courier are printed); openapi-courier and openapi-ahc are one
                         swift-openapi-generator client on CourierOpenAPI and on AsyncHTTPClient
                         (openapi-courier-lean: on CourierOpenAPI with courier-lean's settings);
                         go is Go's net/http (Scripts/go-bench, its own process and CPU), added to
                         the default clients when a go toolchain is on the PATH
          --warmup       unmeasured requests before each measured run (default: 1000)
          --repeat       measured runs per client and scenario, taken in turns (default: 1)
          --json         print the results as JSON instead of a table
          --tls          nginx serves HTTPS (HTTP/1.1 over TLS, CourierTesting's localhost certificate);
                         Courier and AHC trust its root CA; URLSession is left out (on Linux it
                         cannot be told to trust a private root)
          --http2        as --tls, and nginx offers h2 through ALPN: Courier and AHC speak HTTP/2
        """

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Parses `arguments` (without the program name).
    static func parse(_ arguments: [String]) throws(Failure) -> Arguments {
        var parsed = Arguments()
        var clientsGiven = false
        var remaining = arguments[...]
        func value(for option: String) throws(Failure) -> String {
            guard let value = remaining.popFirst(), !value.hasPrefix("--") else {
                throw Failure(description: "\(option) needs a value")
            }
            return value
        }
        func positive(_ text: String, for option: String, allowZero: Bool = false) throws(Failure) -> Int {
            guard let number = Int(text), number > 0 || (allowZero && number == 0) else {
                throw Failure(description: "\(option) needs a \(allowZero ? "non-negative" : "positive") integer, not '\(text)'")
            }
            return number
        }
        while let argument = remaining.popFirst() {
            // `--option=value` is accepted as well as `--option value`.
            let option: String
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                option = String(argument[..<equals])
                remaining.insert(String(argument[argument.index(after: equals)...]), at: remaining.startIndex)
            } else {
                option = argument
            }
            switch option {
            case "--scenario":
                let text = try value(for: option)
                if text == "all" {
                    parsed.scenarios = Scenario.allCases
                } else if let scenario = Scenario(rawValue: text) {
                    parsed.scenarios = [scenario]
                } else {
                    throw Failure(description: "unknown scenario '\(text)' (sequential, concurrent or all)")
                }
            case "--requests":
                parsed.requests = try positive(try value(for: option), for: option)
            case "--concurrency":
                parsed.concurrency = try positive(try value(for: option), for: option)
            case "--url":
                parsed.url = try value(for: option)
            case "--server":
                let text = try value(for: option)
                guard let server = ServerChoice(rawValue: text) else {
                    throw Failure(description: "unknown server '\(text)' (nginx, testserver or auto)")
                }
                parsed.server = server
            case "--clients":
                parsed.clients = try Self.clients(from: try value(for: option))
                clientsGiven = true
            case "--warmup":
                parsed.warmup = try positive(try value(for: option), for: option, allowZero: true)
            case "--repeat":
                parsed.repeats = try positive(try value(for: option), for: option)
            case "--json":
                parsed.json = true
            case "--tls":
                parsed.tls = true
            case "--http2":
                parsed.tls = true
                parsed.http2 = true
            case "--help", "-h":
                throw Failure(description: "")
            default:
                throw Failure(description: "unknown option '\(argument)'")
            }
        }
        // Every sitting reports Go's client too, when it can be built here.
        if !clientsGiven, GoClient.toolchain != nil { parsed.clients.append(.go) }
        return parsed
    }

    private static func clients(from text: String) throws(Failure) -> [ClientKind] {
        var kinds: [ClientKind] = []
        for name in text.split(separator: ",").map({ $0.lowercased() }) where !name.isEmpty {
            guard let kind = ClientKind(rawValue: name) else {
                throw Failure(description: "unknown client '\(name)' (\(ClientKind.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            if !kinds.contains(kind) { kinds.append(kind) }
        }
        guard !kinds.isEmpty else { throw Failure(description: "--clients needs at least one client") }
        return kinds
    }
}
