// swift-tools-version:6.1
import PackageDescription

/// Settings every target of ours shares: Swift 6 mode is the tools-version default; these keep
/// the public surface honest.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "Courier",
    // The Synchronization module's `Atomic` and `Mutex` (the engine's pool and connections, each
    // task's state) need these releases; Linux has them with Swift 6.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11)],
    products: [
        .library(name: "Courier", targets: ["Courier"]),
        .library(name: "CourierTesting", targets: ["CourierTesting"]),
        // A swift-openapi-runtime `ClientTransport` on Courier (issue 31): a product of its own, so
        // that users of `Courier` alone never resolve the runtime.
        .library(name: "CourierOpenAPI", targets: ["CourierOpenAPI"]),
        // An `Engine` on Foundation's URLSession (FoundationNetworking, libcurl, on Linux): a
        // product of its own, so that users of `Courier` alone never link libcurl.
        .library(name: "CourierURLSession", targets: ["CourierURLSession"]),
        .executable(name: "courier-bench", targets: ["courier-bench"]),
        // The command-line client; its module is `CourierCLI` so that no module differs from
        // `Courier` by case alone (macOS file systems).
        .executable(name: "courier", targets: ["CourierCLI"]),
    ],
    dependencies: [
        // courier-bench compares with it, and CourierTestingTests use it as an independent client.
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        // zlib's deflate and inflate as streams over ByteBuffers: request body compression, response
        // decompression on both protocols, permessage-deflate, the test server's gzip and deflate.
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // Tracing spans per hop and trace-context propagation (issue 19).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // `swift package generate-documentation --target Courier` (or CourierTesting); no target
        // depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
        // Chain building and verification for SecurityPolicy on Courier's own TLS connections
        // (swift-nio-ssl has no chain verifier of its own); brings swift-crypto, a second BoringSSL.
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        // Digest authentication's MD5 and SHA-256 (swift-certificates builds it already).
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        // CourierOpenAPI's `ClientTransport` protocol and `HTTPBody` (depends on swift-http-types only).
        // The generator is not in the graph: the test client is generated once and committed.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.0"),
        // courier-bench's openapi-ahc client only: the generated client on AsyncHTTPClient, beside
        // the same client on CourierOpenAPI.
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
        // courier-bench's `ws` only: swift-websocket's WSClient on the same work as WebSocketTask.
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
    ],
    targets: [
        .target(
            name: "Courier",
            dependencies: [
                "CCourierNetlink",
                "CCourierPKCS12",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "NIOSOCKS", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "CourierTesting",
            dependencies: [
                "Courier",
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSOCKS", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // TestProxy's Digest check (MD5), its own code beside the client's.
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "CourierOpenAPI",
            dependencies: [
                "Courier",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "CourierURLSession",
            dependencies: [
                "Courier",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                // Streamed bodies are written to a file before URLSession sends them.
                .product(name: "_NIOFileSystem", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        // Routing netlink (socket, dump requests, message walk, setns) for the reachability monitor on Linux.
        .target(name: "CCourierNetlink"),
        // A PKCS#12 bundle checked with swift-nio-ssl's BoringSSL before swift-nio-ssl reads it
        // (it ends the process on a bundle without a key or without the key's certificate).
        .target(name: "CCourierPKCS12"),
        .executableTarget(
            name: "courier-bench",
            dependencies: [
                "Courier",
                "CourierTesting",
                "CourierOpenAPI",
                "CourierURLSession",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            // The document the committed client was generated from (for people, not a resource).
            exclude: ["OpenAPI/Generated/openapi.yaml", "OpenAPI/Generated/openapi-generator-config.yaml"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "CourierCLI",
            dependencies: [
                "Courier",
                "CourierTesting",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CourierCLITests",
            dependencies: [
                "CourierCLI",
                "Courier",
                "CourierTesting",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "CompressNIO", package: "compress-nio"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CourierTests",
            dependencies: [
                "Courier",
                "CourierTesting",
                "CourierURLSession",
                "CCourierNetlink",
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSOCKS", package: "swift-nio-extras"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            // The list of transport cases that fail on main today, for people (not a resource).
            exclude: ["Transport/PENDING.md"],
            // The HTTP caching test suite's definitions (Conformance/CacheTests).
            resources: [.copy("Conformance/CacheTests/cache-tests.json")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CourierOpenAPITests",
            dependencies: [
                "CourierOpenAPI",
                "Courier",
                "CourierTesting",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            // The document the committed client was generated from, and how (for people, not a resource).
            exclude: ["Generated/openapi.yaml", "Generated/openapi-generator-config.yaml", "Generated/README.md"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CourierTestingTests",
            dependencies: [
                "Courier",
                "CourierTesting",
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
