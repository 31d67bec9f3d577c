# Sourced by .ci/run: HTTP servers nobody on the project wrote, for the interop tests
# (Tests/CourierTests/Interop/HTTPServerPeersTests.swift). Each has an HTTP/2 implementation of
# its own, none of them swift-nio-http2, Go's or nginx's (the other peers):
#   nghttpd    nghttp2's server (the library inside Apache's mod_http2, curl and Node): h2 over TLS only
#   h2o        its own HTTP/1.1 and HTTP/2 (Debian's h2o, with mruby)
#   lighttpd   its own HTTP/2 since 1.4.56 (Debian's lighttpd and lighttpd-mod-openssl); it closes
#              each HTTP/1.1 connection after seven requests
#   hypercorn  Python's h11 and h2 (PyPI hypercorn, in the CI's virtualenv)
#   apache     Apache httpd's mod_http2 (on nghttp2's frames, with its own streams, windows and
#              workers), the server most sites run beside nginx (Debian's apache2)
# Each serves the same routes: /files/{hello.txt,big.bin,text.txt} (a line, 4 MiB + 1 of a-z
# repeated, and 50,000 numbered lines), POST /echo (the request body back), and, where the server
# can send trailer fields, /trailers (nghttpd: every response). h2o and lighttpd compress
# text.txt when asked. Each listens in cleartext (HTTP/1.1) and over TLS (h2 and http/1.1 through
# ALPN), but nghttpd, which speaks only h2 over TLS; their certificate comes from a root made here
# with openssl. Installs what is missing (apt, and pip into $venv), and starts what it can: a
# server that does not start is reported and its tests say they were skipped.
# Exports COURIER_HTTP_PEERS_CA, COURIER_NGHTTPD_TLS_URL, COURIER_{H2O,LIGHTTPD,HYPERCORN,APACHE}_URL
# and COURIER_{H2O,LIGHTTPD,HYPERCORN,APACHE}_TLS_URL, and sets http_peers_pids for the cleanup.

http_peers_pids=""

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Waits up to 10 s for `url` to answer /files/hello.txt (curl, trusting the peers' root, h2 where
# the URL is https); exports `variable`=url when it does.
await_peer() {
  local variable="$1" url="$2" name="$3" log_file="$4"
  for _ in $(seq 1 50); do
    if curl -sf -o /dev/null --max-time 1 --cacert "$dir/ca.pem" "$url/files/hello.txt"; then
      export "$variable=$url"
      echo "$name at $url"
      return 0
    fi
    sleep 0.2
  done
  echo "$name did not answer at $url: its interop tests will be skipped"
  tail -20 "$log_file" 2>/dev/null || true
}

start_http_peers() {
  local missing=""
  command -v curl >/dev/null 2>&1 || missing="$missing curl"
  command -v nghttpd >/dev/null 2>&1 || missing="$missing nghttp2-server"
  command -v h2o >/dev/null 2>&1 || missing="$missing h2o"
  [ -x /usr/sbin/lighttpd ] || missing="$missing lighttpd"
  [ -f /usr/lib/lighttpd/mod_openssl.so ] || missing="$missing lighttpd-mod-openssl"
  [ -x /usr/sbin/apache2 ] || missing="$missing apache2"
  if [ -n "$missing" ]; then
    log "HTTP peers (apt):$missing"
    # shellcheck disable=SC2086
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing) || true
  fi
  if ! "$venv/bin/python" -c "import hypercorn" 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check hypercorn || true
  fi

  local dir="$root/.build-ci-http-peers"
  rm -rf "$dir" && mkdir -p "$dir/www" "$dir/cgi"
  printf 'hello from a static file\n' > "$dir/www/hello.txt"
  python3 -c '
import sys
pattern = b"abcdefghijklmnopqrstuvwxyz"
count = (4 << 20) + 1
sys.stdout.buffer.write((pattern * (count // 26 + 1))[:count])' > "$dir/www/big.bin"
  python3 -c 'import sys; sys.stdout.write("".join(f"{i}\n" for i in range(50000)))' > "$dir/www/text.txt"

  # A root and a leaf for 127.0.0.1 and localhost.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 7 -subj "/CN=Courier CI HTTP peers root" \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
    -keyout "$dir/leaf.key" -out "$dir/leaf.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > "$dir/leaf.ext"
  openssl x509 -req -in "$dir/leaf.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 7 \
    -extfile "$dir/leaf.ext" -out "$dir/leaf.pem" 2>/dev/null
  export COURIER_HTTP_PEERS_CA="$dir/ca.pem"

  # The CGI behind lighttpd's and Apache's /echo: the body back. Apache passes a chunked body on
  # with no CONTENT_LENGTH (the CGI reads to the end of its input); lighttpd gathers it first.
  cat > "$dir/cgi/echo.py" <<'PY'
#!/usr/bin/env python3
import os, sys
length = os.environ.get("CONTENT_LENGTH")
body = sys.stdin.buffer.read(int(length)) if length else sys.stdin.buffer.read()
sys.stdout.buffer.write(b"Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
PY
  chmod +x "$dir/cgi/echo.py"

  local port tls
  # nghttpd: h2 over TLS only. --echo-upload answers a POST with its body; every response ends
  # with the trailer field given.
  if command -v nghttpd >/dev/null 2>&1; then
    tls=$(free_port)
    mkdir -p "$dir/nghttpd" && ln -s ../www "$dir/nghttpd/files"
    nghttpd -a 127.0.0.1 -d "$dir/nghttpd" --echo-upload --trailer="courier-trailer: yes" "$tls" "$dir/leaf.key" "$dir/leaf.pem" \
      > "$dir/nghttpd.log" 2>&1 &
    http_peers_pids="$http_peers_pids $!"
    await_peer COURIER_NGHTTPD_TLS_URL "https://127.0.0.1:$tls" nghttpd "$dir/nghttpd.log"
  fi

  # h2o: static files under /files/ (compressed when asked), an mruby /echo.
  if command -v h2o >/dev/null 2>&1; then
    port=$(free_port)
    tls=$(free_port)
    # As root h2o switches to nobody unless told otherwise, and nobody cannot read the CI's tree.
    local user=""
    if [ "$(id -u)" = 0 ]; then user="user: root"; fi
    cat > "$dir/h2o.conf" <<CONF
$user
error-log: $dir/h2o.log
access-log: /dev/null
listen:
  host: 127.0.0.1
  port: $port
listen:
  host: 127.0.0.1
  port: $tls
  ssl:
    certificate-file: $dir/leaf.pem
    key-file: $dir/leaf.key
    ocsp-update-interval: 0
hosts:
  default:
    paths:
      /files:
        file.dir: $dir/www
        compress: ON
      /echo:
        mruby.handler: |
          Proc.new do |env|
            body = env["rack.input"] ? env["rack.input"].read : ""
            [200, {"content-type" => "application/octet-stream", "content-length" => body.bytesize.to_s}, [body]]
          end
CONF
    h2o -c "$dir/h2o.conf" > "$dir/h2o.out" 2>&1 &
    http_peers_pids="$http_peers_pids $!"
    await_peer COURIER_H2O_URL "http://127.0.0.1:$port" h2o "$dir/h2o.log"
    await_peer COURIER_H2O_TLS_URL "https://127.0.0.1:$tls" "h2o over TLS" "$dir/h2o.log"
  fi

  # lighttpd: static files under /files/ (mod_deflate compresses when asked), a CGI /echo.
  if [ -x /usr/sbin/lighttpd ] && [ -f /usr/lib/lighttpd/mod_openssl.so ]; then
    port=$(free_port)
    tls=$(free_port)
    cat "$dir/leaf.pem" "$dir/leaf.key" > "$dir/leaf-and-key.pem"
    cat > "$dir/lighttpd.conf" <<CONF
server.modules = ("mod_openssl", "mod_alias", "mod_cgi", "mod_deflate")
server.document-root = "$dir"
server.bind = "127.0.0.1"
server.port = $port
server.errorlog = "$dir/lighttpd.log"
server.pid-file = "$dir/lighttpd.pid"
alias.url = ("/files/" => "$dir/www/", "/echo" => "$dir/cgi/echo.py")
cgi.assign = (".py" => "")
mimetype.assign = (".txt" => "text/plain", ".bin" => "application/octet-stream")
deflate.mimetypes = ("text/plain")
deflate.allowed-encodings = ("gzip", "deflate")
server.feature-flags += ("server.h2proto" => "enable")
# Seven requests an HTTP/1.1 connection (Connection: close on the seventh answer), while the tests
# keep up to 100 requests in flight; lighttpd 1.4.69 does not apply it to HTTP/2.
server.max-keep-alive-requests = 7
\$SERVER["socket"] == "127.0.0.1:$tls" {
    ssl.engine = "enable"
    ssl.pemfile = "$dir/leaf-and-key.pem"
}
CONF
    /usr/sbin/lighttpd -D -f "$dir/lighttpd.conf" > "$dir/lighttpd.out" 2>&1 &
    http_peers_pids="$http_peers_pids $!"
    await_peer COURIER_LIGHTTPD_URL "http://127.0.0.1:$port" lighttpd "$dir/lighttpd.out"
    await_peer COURIER_LIGHTTPD_TLS_URL "https://127.0.0.1:$tls" "lighttpd over TLS" "$dir/lighttpd.log"
  fi

  # Apache: static files under /files/ (mod_deflate compresses text when asked), the CGI /echo
  # (mod_cgid). Its children run as nobody, which reads the files and runs the CGI.
  if [ -x /usr/sbin/apache2 ]; then
    port=$(free_port)
    tls=$(free_port)
    local modules=/usr/lib/apache2/modules
    mkdir -p "$dir/apache"
    cat > "$dir/apache/apache.conf" <<CONF
ServerRoot $dir/apache
PidFile $dir/apache/apache.pid
ErrorLog $dir/apache/error.log
LogLevel warn
ServerName localhost
User nobody
Group nogroup
LoadModule mpm_event_module $modules/mod_mpm_event.so
LoadModule authz_core_module $modules/mod_authz_core.so
LoadModule mime_module $modules/mod_mime.so
LoadModule alias_module $modules/mod_alias.so
LoadModule ssl_module $modules/mod_ssl.so
LoadModule socache_shmcb_module $modules/mod_socache_shmcb.so
LoadModule http2_module $modules/mod_http2.so
LoadModule filter_module $modules/mod_filter.so
LoadModule deflate_module $modules/mod_deflate.so
LoadModule cgid_module $modules/mod_cgid.so
ScriptSock $dir/apache/cgid.sock
TypesConfig /etc/mime.types
Listen 127.0.0.1:$port
Listen 127.0.0.1:$tls
Protocols h2 http/1.1
SSLSessionCache shmcb:$dir/apache/ssl_scache(512000)
Alias /files/ $dir/www/
ScriptAlias /echo $dir/cgi/echo.py
<Directory $dir/www>
    Require all granted
</Directory>
<Directory $dir/cgi>
    Require all granted
</Directory>
AddOutputFilterByType DEFLATE text/plain
<VirtualHost 127.0.0.1:$tls>
    SSLEngine on
    SSLCertificateFile $dir/leaf.pem
    SSLCertificateKeyFile $dir/leaf.key
</VirtualHost>
CONF
    /usr/sbin/apache2 -f "$dir/apache/apache.conf" -DFOREGROUND > "$dir/apache/out.log" 2>&1 &
    http_peers_pids="$http_peers_pids $!"
    await_peer COURIER_APACHE_URL "http://127.0.0.1:$port" apache "$dir/apache/error.log"
    await_peer COURIER_APACHE_TLS_URL "https://127.0.0.1:$tls" "apache over TLS" "$dir/apache/error.log"
  fi

  # hypercorn: .ci/http_peer_app.py.
  if "$venv/bin/python" -c "import hypercorn" 2>/dev/null; then
    port=$(free_port)
    tls=$(free_port)
    # One process (no workers of its own), so that the cleanup's kill ends it.
    (cd "$root/.ci" && COURIER_PEER_FILES="$dir/www" exec "$venv/bin/hypercorn" --workers 0 \
      --insecure-bind "127.0.0.1:$port" --bind "127.0.0.1:$tls" --certfile "$dir/leaf.pem" --keyfile "$dir/leaf.key" \
      http_peer_app:app > "$dir/hypercorn.log" 2>&1) &
    http_peers_pids="$http_peers_pids $!"
    await_peer COURIER_HYPERCORN_URL "http://127.0.0.1:$port" hypercorn "$dir/hypercorn.log"
    await_peer COURIER_HYPERCORN_TLS_URL "https://127.0.0.1:$tls" "hypercorn over TLS" "$dir/hypercorn.log"
  fi
}
