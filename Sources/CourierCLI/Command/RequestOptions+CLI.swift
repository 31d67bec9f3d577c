import ArgumentParser

/// How `--auth`'s credentials are sent (HTTPie's `--auth-type`).
enum AuthType: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// `Authorization: Basic …` with the request, from the start.
    case basic
    /// In answer to the server's `WWW-Authenticate: Digest` challenge (RFC 7616), through the
    /// session's credential store (a Basic challenge is answered too); nothing before it.
    case digest
    /// `Authorization: Bearer …` with the request, `--auth` being the token (HTTPie's
    /// `-A bearer -a TOKEN`; `--bearer TOKEN` is the same).
    case bearer
}

/// How the output is dressed (HTTPie's `--pretty`).
enum PrettyOption: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// Colours and formatting.
    case all
    /// Colours only.
    case colors
    /// Formatting (indented JSON and XML) only.
    case format
    /// The bytes as they came.
    case none
}
