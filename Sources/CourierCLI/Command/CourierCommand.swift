import ArgumentParser

/// `courier`: the root command. `courier [METHOD] URL [ITEM ...]` runs ``RequestCommand`` (the
/// default subcommand); `courier demo` runs ``DemoCommand``.
struct CourierCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "courier",
        abstract: "An HTTP client for the command line, on the Courier library.",
        usage: "courier [METHOD] URL [ITEM ...] [<options>]   or   courier demo   or   courier ws URL",
        discussion: """
            Items (HTTPie's grammar):
              name==value         query parameter (name==@file: read from a file)
              name=value          data field (JSON by default, --form for a form)
              a[b][c]=1 a[]=x     nested JSON: objects, arrays ([0], [] appends)
              name:=json          raw JSON value
              name=@file          data field read from a file (name:=@file: raw JSON)
              Header:value        request header (Header; sends it empty, Header:@file reads it)
              field@path          file upload (with --form or --multipart); field@path;type=mime
              @path               the file is the whole body (Content-Type from its extension)
            A backslash makes a separator literal: a\\=b=c (field a=b), a=\\@b (value @b).

            All request flags: courier help request
            Exit status: 0 ok, 1 request failed, 2 timeout, 3/4/5 HTTP 3xx/4xx/5xx
            with --check-status or --download, 6 too many redirects, 64 bad command
            line, 66 unreadable file.
            """,
        version: CourierVersion.string,
        subcommands: [RequestCommand.self, DemoCommand.self, WebSocketCommand.self],
        defaultSubcommand: RequestCommand.self,
        helpNames: [.long]
    )
}

/// The version the command reports, and sends in `User-Agent`.
enum CourierVersion {
    static let string = "0.1.0"
    static let userAgent = "courier/" + string
}
