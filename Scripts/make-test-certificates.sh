#!/usr/bin/env bash
# Makes the test certificates embedded in Sources/CourierTesting/TestCertificates.swift.
#
#   root CA ─┬─ intermediate CA ─┬─ localhost leaf      (DNS:localhost, IP:127.0.0.1, IP:::1)
#            │                   ├─ wrong-host leaf     (DNS:wrong.example only)
#            │                   └─ expired leaf        (localhost SANs, valid 2000-01-01..2000-01-02)
#            └─ client certificate (clientAuth, for mutual TLS)
#   self-signed localhost leaf (unrelated to the root)
#   self-signed leaf named only by its common name (CN=localhost, no subjectAltName)
#   self-signed leaf with no name at all (no CN, no subjectAltName)
#
# All keys are EC P-256; certificates are valid for ~100 years (except the expired one).
# Usage: Scripts/make-test-certificates.sh [output-dir]   (default: a temporary directory)
# Then:  Scripts/make-test-certificates.sh --swift > Sources/CourierTesting/TestCertificates+PEM.swift
set -euo pipefail

emit_swift=0
if [[ "${1:-}" == "--swift" ]]; then emit_swift=1; shift; fi
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
cd "$out"
days=36500

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }

# Root CA (self-signed).
key root
openssl req -x509 -new -key root.key -sha256 -days $days -subj "/O=Courier Tests/CN=Courier Test Root CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -addext "subjectKeyIdentifier=hash" -out root.pem

# Intermediate CA, signed by the root.
cat > ca.ext <<'X'
basicConstraints=critical,CA:TRUE,pathlen:0
keyUsage=critical,keyCertSign,cRLSign
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
X
key intermediate
openssl req -new -key intermediate.key -subj "/O=Courier Tests/CN=Courier Test Intermediate CA" -out intermediate.csr
openssl x509 -req -in intermediate.csr -CA root.pem -CAkey root.key -CAcreateserial -sha256 -days $days \
  -extfile ca.ext -out intermediate.pem 2>/dev/null

leaf_ext() { # $1 = subjectAltName, $2 = extendedKeyUsage
  cat <<X
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=$2
subjectAltName=$1
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
X
}

# Leaf for localhost, signed by the intermediate.
leaf_ext "DNS:localhost,IP:127.0.0.1,IP:::1" serverAuth > localhost.ext
key localhost
openssl req -new -key localhost.key -subj "/O=Courier Tests/CN=localhost" -out localhost.csr
openssl x509 -req -in localhost.csr -CA intermediate.pem -CAkey intermediate.key -CAcreateserial -sha256 \
  -days $days -extfile localhost.ext -out localhost.pem 2>/dev/null

# Leaf for wrong.example only, same chain.
leaf_ext "DNS:wrong.example" serverAuth > wrong.ext
key wronghost
openssl req -new -key wronghost.key -subj "/O=Courier Tests/CN=wrong.example" -out wronghost.csr
openssl x509 -req -in wronghost.csr -CA intermediate.pem -CAkey intermediate.key -CAcreateserial -sha256 \
  -days $days -extfile wrong.ext -out wronghost.pem 2>/dev/null

# Unrelated self-signed leaf for localhost.
key selfsigned
openssl req -x509 -new -key selfsigned.key -sha256 -days $days -subj "/O=Courier Tests/CN=localhost" \
  -addext "basicConstraints=critical,CA:FALSE" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1" \
  -addext "extendedKeyUsage=serverAuth" -out selfsigned.pem

# Self-signed leaf named only by its subject's common name, with no subjectAltName (AFNetworking's
# `foobar.com.cer`): a name check falls back to the common name when a certificate has no SAN.
key cnonly
openssl req -x509 -new -key cnonly.key -sha256 -days $days -subj "/O=Courier Tests/CN=localhost" \
  -addext "basicConstraints=critical,CA:FALSE" -addext "extendedKeyUsage=serverAuth" -out cnonly.pem

# Self-signed leaf with no name at all: no common name, no subjectAltName (AFNetworking's
# `NoDomains.cer`).
key noname
openssl req -x509 -new -key noname.key -sha256 -days $days -subj "/O=Courier Tests" \
  -addext "basicConstraints=critical,CA:FALSE" -addext "extendedKeyUsage=serverAuth" -out noname.pem

# Expired leaf (localhost SANs), signed by the intermediate with `openssl ca` and dates in the past.
key expired
openssl req -new -key expired.key -subj "/O=Courier Tests/CN=localhost" -out expired.csr
mkdir -p ca-db && : > ca-db/index.txt && echo 1000 > ca-db/serial
cat > ca.cnf <<X
[ ca ]
default_ca = test
[ test ]
database = ca-db/index.txt
serial = ca-db/serial
new_certs_dir = ca-db
default_md = sha256
policy = anything
copy_extensions = none
x509_extensions = leaf
[ anything ]
organizationName = optional
commonName = supplied
[ leaf ]
$(leaf_ext "DNS:localhost,IP:127.0.0.1,IP:::1" serverAuth)
X
openssl ca -batch -config ca.cnf -cert intermediate.pem -keyfile intermediate.key -in expired.csr \
  -startdate 20000101000000Z -enddate 20000102000000Z -notext -out expired.pem 2>/dev/null

# Client certificate, signed by the root.
leaf_ext "DNS:courier-test-client" clientAuth > client.ext
key client
openssl req -new -key client.key -subj "/O=Courier Tests/CN=Courier Test Client" -out client.csr
openssl x509 -req -in client.csr -CA root.pem -CAkey root.key -CAcreateserial -sha256 -days $days \
  -extfile client.ext -out client.pem 2>/dev/null

# Sanity checks.
openssl verify -CAfile root.pem -untrusted intermediate.pem localhost.pem wronghost.pem >/dev/null
openssl verify -CAfile root.pem client.pem >/dev/null

# PKCS#8 keys ("BEGIN PRIVATE KEY") for every leaf.
for k in root intermediate localhost wronghost selfsigned cnonly noname expired client; do
  openssl pkey -in "$k.key" -out "$k.p8.key"
done

if [[ $emit_swift == 1 ]]; then
  constant() { # $1 = Swift name, $2 = file, $3 = doc line
    printf '    /// %s\n    public static let %s = """\n%s\n"""\n\n' "$3" "$1" "$(cat "$2")"
  }
  echo "// Generated by Scripts/make-test-certificates.sh --swift; do not edit by hand."
  echo "// Test-only keys and certificates: never trust them outside tests."
  echo
  echo "extension TestCertificates {"
  constant rootCA root.pem "The root CA certificate (PEM). Trust it to accept the server's chains."
  constant rootCAKey root.p8.key "The root CA's private key (PEM, PKCS#8)."
  constant intermediateCA intermediate.pem "The intermediate CA certificate (PEM), signed by ``rootCA``."
  constant intermediateCAKey intermediate.p8.key "The intermediate CA's private key (PEM, PKCS#8)."
  constant localhostLeaf localhost.pem "The leaf for \`localhost\`, \`127.0.0.1\` and \`::1\` (PEM), signed by ``intermediateCA``."
  constant localhostKey localhost.p8.key "The private key of ``localhostLeaf`` (PEM, PKCS#8)."
  constant wrongHostLeaf wronghost.pem "A leaf whose only name is \`wrong.example\` (PEM), signed by ``intermediateCA``."
  constant wrongHostKey wronghost.p8.key "The private key of ``wrongHostLeaf`` (PEM, PKCS#8)."
  constant selfSignedLeaf selfsigned.pem "A self-signed leaf for \`localhost\` and \`127.0.0.1\` (PEM), unrelated to ``rootCA``."
  constant selfSignedKey selfsigned.p8.key "The private key of ``selfSignedLeaf`` (PEM, PKCS#8)."
  constant selfSignedCommonNameLeaf cnonly.pem "A self-signed leaf named only by its subject's common name \`localhost\`, with no subjectAltName (PEM)."
  constant selfSignedCommonNameKey cnonly.p8.key "The private key of ``selfSignedCommonNameLeaf`` (PEM, PKCS#8)."
  constant selfSignedNoNameLeaf noname.pem "A self-signed leaf with no name at all: no common name, no subjectAltName (PEM)."
  constant selfSignedNoNameKey noname.p8.key "The private key of ``selfSignedNoNameLeaf`` (PEM, PKCS#8)."
  constant expiredLeaf expired.pem "A leaf for \`localhost\` that expired on 2000-01-02 (PEM), signed by ``intermediateCA``."
  constant expiredKey expired.p8.key "The private key of ``expiredLeaf`` (PEM, PKCS#8)."
  constant clientCertificate client.pem "A client certificate (PEM, extended key usage clientAuth), signed by ``rootCA``."
  constant clientKey client.p8.key "The private key of ``clientCertificate`` (PEM, PKCS#8)."
  echo "}"
else
  echo "$out"
fi
