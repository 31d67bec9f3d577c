import CourierTesting
import Foundation

/// Certificates made by the `openssl` command-line tool when the tests run (no crypto library in
/// the build): a second CA with leaves for `localhost` and `127.0.0.1`, a wildcard leaf, an
/// IP-address-only leaf and a leaf that is not valid yet; under the second CA, an intermediate
/// with a leaf for `localhost` and one for another name, an *impostor* intermediate with the same
/// name and another key (its leaves name the intermediate as issuer: one with an authority key
/// identifier, one without), an expired intermediate with a leaf, and an intermediate whose name
/// constraints permit only `courier.test`, with a leaf inside them and one outside; an expired
/// leaf for `localhost` and `127.0.0.1` under the second CA; issuers that may not issue, each with
/// a leaf for `localhost`: an authority whose key usage lacks `keyCertSign`, the `localhost` leaf
/// itself (not an authority), and an authority under the path-length-0 intermediate; a leaf with
/// an unknown critical extension under the intermediate; the `localhost` leaf's key again, in a
/// certificate the intermediate issued (a re-issued certificate); intermediates with an extended
/// key usage, each with a leaf for `localhost`: for clients only, for servers, for any purpose.
/// EC P-256 keys.
struct GeneratedCertificates: Sendable {
    let secondCA: String
    let localhostLeaf: String, localhostKey: String
    /// The key of ``localhostLeaf`` in another certificate for the same names, issued by ``intermediate``.
    let localhostReissuedLeaf: String
    let wildcardLeaf: String, wildcardKey: String
    let ipOnlyLeaf: String, ipOnlyKey: String
    let notYetValidLeaf: String, notYetValidKey: String
    let intermediate: String
    let intermediateLeaf: String, intermediateLeafKey: String
    let intermediateOtherNameLeaf: String, intermediateOtherNameKey: String
    let impostorIntermediate: String
    let impostorLeaf: String, impostorLeafKey: String
    let impostorLeafWithoutKeyID: String, impostorLeafWithoutKeyIDKey: String
    let expiredIntermediate: String
    let expiredIntermediateLeaf: String, expiredIntermediateLeafKey: String
    let constrainedIntermediate: String
    let constrainedInsideLeaf: String, constrainedInsideKey: String
    let constrainedOutsideLeaf: String, constrainedOutsideKey: String
    let expiredLeaf: String, expiredKey: String
    let noCertSignIntermediate: String, noCertSignLeaf: String
    let leafIssuedByLeaf: String
    let pathLengthIntermediate: String, pathLengthLeaf: String
    let unknownCriticalLeaf: String
    let clientOnlyIntermediate: String, clientOnlyIntermediateLeaf: String
    let serverAuthIntermediate: String, serverAuthIntermediateLeaf: String
    let anyPurposeIntermediate: String, anyPurposeIntermediateLeaf: String

    /// Made once per test process. Async tests call ``prepared()`` first, so that the openssl
    /// script runs (and other first users wait) off the concurrency pool.
    static let shared: Result<GeneratedCertificates, any Error> = Result { try GeneratedCertificates.make() }

    /// ``shared``, made on a thread of its own the first time.
    @discardableResult
    static func prepared() async throws -> GeneratedCertificates {
        try await offThePools { try Self.shared.get() }
    }

    private static let script = #"""
        set -e
        key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1.ec" && openssl pkcs8 -topk8 -nocrypt -in "$1.ec" -out "$1.key"; }
        key ca
        openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/O=Courier Generated/CN=Courier Second CA" \
          -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem
        leaf() { # name subject san
          key "$1"
          openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
          printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n' "$3" > "$1.ext"
        }
        leaf localhost "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
        openssl x509 -req -in localhost.csr -CA ca.pem -CAkey ca.key -set_serial 2 -days 3650 -sha256 -extfile localhost.ext -out localhost.pem
        leaf wildcard "/CN=*.courier.test" "DNS:*.courier.test"
        openssl x509 -req -in wildcard.csr -CA ca.pem -CAkey ca.key -set_serial 3 -days 3650 -sha256 -extfile wildcard.ext -out wildcard.pem
        leaf iponly "/O=Courier Generated" "IP:127.0.0.1"
        openssl x509 -req -in iponly.csr -CA ca.pem -CAkey ca.key -set_serial 4 -days 3650 -sha256 -extfile iponly.ext -out iponly.pem
        # Not valid before 2099: `openssl ca` is the 3.0 tool that sets a start date.
        leaf future "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
        mkdir -p db && : > db/index && echo 05 > db/serial
        printf '[ca]\ndefault_ca=c\n[c]\ndatabase=db/index\nserial=db/serial\nnew_certs_dir=db\ndefault_md=sha256\npolicy=p\ncopy_extensions=none\n[p]\ncommonName=supplied\n' > ca.cnf
        openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in future.csr -startdate 20990101000000Z \
          -enddate 21000101000000Z -extfile future.ext -notext -out future.pem 2>/dev/null
        authority() { # name common-name
          key "$1"
          openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
          printf 'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n' > "$1.ext"
        }
        authority inter "Courier Generated Intermediate"
        openssl x509 -req -in inter.csr -CA ca.pem -CAkey ca.key -set_serial 10 -days 3650 -sha256 -extfile inter.ext -out inter.pem
        # Same name as inter, another key.
        authority impostor "Courier Generated Intermediate"
        openssl x509 -req -in impostor.csr -CA ca.pem -CAkey ca.key -set_serial 11 -days 3650 -sha256 -extfile impostor.ext -out impostor.pem
        authority oldinter "Courier Expired Intermediate"
        openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in oldinter.csr -startdate 20200101000000Z \
          -enddate 20210101000000Z -extfile oldinter.ext -notext -out oldinter.pem 2>/dev/null
        signed() { # name issuer serial
          openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -set_serial "$3" -days 3650 -sha256 -extfile "$1.ext" -out "$1.pem"
        }
        leaf interleaf "/CN=localhost" "DNS:localhost,IP:127.0.0.1" && signed interleaf inter 20
        leaf interother "/CN=other.courier.test" "DNS:other.courier.test" && signed interother inter 21
        # The localhost leaf's key and names again, issued by the intermediate.
        openssl x509 -req -in localhost.csr -CA inter.pem -CAkey inter.key -set_serial 32 -days 3650 -sha256 -extfile localhost.ext -out reissued.pem
        leaf impostorleaf "/CN=localhost" "DNS:localhost,IP:127.0.0.1" && signed impostorleaf impostor 22
        leaf impostorbare "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
        printf 'authorityKeyIdentifier=none\n' >> impostorbare.ext && signed impostorbare impostor 23
        leaf oldinterleaf "/CN=localhost" "DNS:localhost,IP:127.0.0.1" && signed oldinterleaf oldinter 24
        authority constrained "Courier Constrained Intermediate"
        printf 'nameConstraints=critical,permitted;DNS:courier.test\n' >> constrained.ext
        openssl x509 -req -in constrained.csr -CA ca.pem -CAkey ca.key -set_serial 12 -days 3650 -sha256 -extfile constrained.ext -out constrained.pem
        leaf inside "/CN=api.courier.test" "DNS:api.courier.test" && signed inside constrained 25
        leaf outside "/CN=localhost" "DNS:localhost" && signed outside constrained 26
        # Expired; the database already holds a certificate for /CN=localhost.
        leaf oldleaf "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
        echo 'unique_subject = no' > db/index.attr
        openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in oldleaf.csr -startdate 20200101000000Z \
          -enddate 20210101000000Z -extfile oldleaf.ext -notext -out oldleaf.pem 2>/dev/null
        # Issuers that may not issue: no keyCertSign; a leaf; an authority below pathlen:0.
        authority nosign "Courier No-Certificate-Signing Intermediate"
        printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,digitalSignature,cRLSign\n' > nosign.ext
        openssl x509 -req -in nosign.csr -CA ca.pem -CAkey ca.key -set_serial 13 -days 3650 -sha256 -extfile nosign.ext -out nosign.pem
        leaf nosignleaf "/CN=localhost" "DNS:localhost,IP:127.0.0.1" && signed nosignleaf nosign 27
        leaf underleaf "/CN=localhost" "DNS:localhost,IP:127.0.0.1" && signed underleaf localhost 28
        authority subinter "Courier Intermediate Below Path Length 0"
        signed subinter inter 29
        leaf subleaf "/CN=localhost" "DNS:localhost,IP:127.0.0.1" && signed subleaf subinter 30
        leaf critical "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
        printf '1.3.6.1.4.1.55555.1=critical,ASN1:NULL\n' >> critical.ext && signed critical inter 31
        # Intermediates with an extended key usage, each with a leaf for localhost: for clients
        # only, for servers, for any purpose.
        eku() { # name common-name usage serial leaf-serial
          authority "$1" "$2"
          printf 'extendedKeyUsage=%s\n' "$3" >> "$1.ext"
          openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -set_serial "$4" -days 3650 -sha256 -extfile "$1.ext" -out "$1.pem"
          leaf "$1leaf" "/CN=localhost" "DNS:localhost,IP:127.0.0.1" && signed "$1leaf" "$1" "$5"
        }
        eku clientonly "Courier Client-Only Intermediate" clientAuth 14 33
        eku serverauth "Courier Server-Authentication Intermediate" serverAuth 15 34
        eku anypurpose "Courier Any-Purpose Intermediate" anyExtendedKeyUsage 16 35
        """#

    static func make() throws -> GeneratedCertificates {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-certs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let status = try ChildProcess.spawn("/bin/sh", ["-c", Self.script], directory: folder.path).waitForExit()
        guard status == 0 else {
            throw CocoaError(.featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "openssl failed (\(status))"])
        }
        func read(_ name: String) throws -> String { try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8) }
        return GeneratedCertificates(
            secondCA: try read("ca.pem"),
            localhostLeaf: try read("localhost.pem"), localhostKey: try read("localhost.key"),
            localhostReissuedLeaf: try read("reissued.pem"),
            wildcardLeaf: try read("wildcard.pem"), wildcardKey: try read("wildcard.key"),
            ipOnlyLeaf: try read("iponly.pem"), ipOnlyKey: try read("iponly.key"),
            notYetValidLeaf: try read("future.pem"), notYetValidKey: try read("future.key"),
            intermediate: try read("inter.pem"),
            intermediateLeaf: try read("interleaf.pem"), intermediateLeafKey: try read("interleaf.key"),
            intermediateOtherNameLeaf: try read("interother.pem"), intermediateOtherNameKey: try read("interother.key"),
            impostorIntermediate: try read("impostor.pem"),
            impostorLeaf: try read("impostorleaf.pem"), impostorLeafKey: try read("impostorleaf.key"),
            impostorLeafWithoutKeyID: try read("impostorbare.pem"), impostorLeafWithoutKeyIDKey: try read("impostorbare.key"),
            expiredIntermediate: try read("oldinter.pem"),
            expiredIntermediateLeaf: try read("oldinterleaf.pem"), expiredIntermediateLeafKey: try read("oldinterleaf.key"),
            constrainedIntermediate: try read("constrained.pem"),
            constrainedInsideLeaf: try read("inside.pem"), constrainedInsideKey: try read("inside.key"),
            constrainedOutsideLeaf: try read("outside.pem"), constrainedOutsideKey: try read("outside.key"),
            expiredLeaf: try read("oldleaf.pem"), expiredKey: try read("oldleaf.key"),
            noCertSignIntermediate: try read("nosign.pem"), noCertSignLeaf: try read("nosignleaf.pem"),
            leafIssuedByLeaf: try read("underleaf.pem"),
            pathLengthIntermediate: try read("subinter.pem"), pathLengthLeaf: try read("subleaf.pem"),
            unknownCriticalLeaf: try read("critical.pem"),
            clientOnlyIntermediate: try read("clientonly.pem"), clientOnlyIntermediateLeaf: try read("clientonlyleaf.pem"),
            serverAuthIntermediate: try read("serverauth.pem"), serverAuthIntermediateLeaf: try read("serverauthleaf.pem"),
            anyPurposeIntermediate: try read("anypurpose.pem"), anyPurposeIntermediateLeaf: try read("anypurposeleaf.pem")
        )
    }
}
