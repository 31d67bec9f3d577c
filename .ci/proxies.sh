# Sourced by .ci/run: real proxies from Debian's packages on 127.0.0.1 for the proxy tests,
# tinyproxy (an HTTP proxy: CONNECT and absolute-form forwarding, Basic credentials
# courier:secret), stunnel in front of it (the same proxy over TLS: an https:// proxy, its
# certificate for localhost from a CA made here), squid (an HTTP proxy that wants Digest
# credentials, courier:digest-secret) and Dante's danted twice (SOCKS5: once without
# authentication, once wanting a user name and password, RFC 1929, checked against a system
# account). Exports COURIER_HTTP_PROXY_URL, COURIER_HTTPS_PROXY_URL and COURIER_HTTPS_PROXY_CA,
# COURIER_DIGEST_PROXY_URL and COURIER_DIGEST_PROXY_LOG (squid's access log),
# COURIER_SOCKS_PROXY_URL and COURIER_SOCKS_AUTH_PROXY_URL; the tests
# that need them say that they were skipped when they are missing. Sets proxies_pids for the
# cleanup.

proxies_pids=""

start_proxies() {
  if [ ! -x /usr/bin/tinyproxy ] || [ ! -x /usr/sbin/danted ] || [ ! -x /usr/sbin/squid ] || [ ! -x /usr/bin/stunnel4 ]; then
    log "tinyproxy, dante-server, squid, stunnel4 (apt)"
    apt-get update -qq && apt-get install -y -qq tinyproxy dante-server squid stunnel4 || true
  fi
  local dir="$root/.build-ci-proxies"
  rm -rf "$dir" && mkdir -p "$dir"

  if [ -x /usr/bin/tinyproxy ]; then
    local http_port user=""
    http_port=$(free_port)
    if [ "$(id -u)" = 0 ]; then user=$'User nobody\nGroup nogroup'; fi
    # No ConnectPort line: CONNECT to any port (the test servers listen on random ones).
    # MaxClients: the Transport suites run every test over its proxied routes in parallel; at
    # 64 tinyproxy left new connections unanswered in its backlog for seconds (an idle-timeout
    # test then timed out).
    cat > "$dir/tinyproxy.conf" <<CONF
$user
Port $http_port
Listen 127.0.0.1
Timeout 60
MaxClients 1024
Allow 127.0.0.1
BasicAuth courier secret
DisableViaHeader Yes
LogLevel Warning
CONF
    /usr/bin/tinyproxy -d -c "$dir/tinyproxy.conf" > "$dir/tinyproxy.log" 2>&1 &
    proxies_pids="$proxies_pids $!"
    if wait_for_port "$http_port"; then
      export COURIER_HTTP_PROXY_URL="http://courier:secret@127.0.0.1:$http_port"
      echo "tinyproxy at 127.0.0.1:$http_port"
      if [ -x /usr/bin/stunnel4 ]; then start_tls_front "$dir" "$http_port"; fi
    else
      echo "tinyproxy did not start: the real-proxy tests will be skipped"; cat "$dir/tinyproxy.log" || true
    fi
  fi

  if [ -x /usr/sbin/squid ]; then start_digest_squid "$dir"; fi

  if [ -x /usr/sbin/danted ]; then
    if start_danted "$dir" danted none; then
      export COURIER_SOCKS_PROXY_URL="socks5://127.0.0.1:$danted_port"
      echo "danted at 127.0.0.1:$danted_port"
    else
      echo "danted did not start: the real SOCKS5 tests will be skipped"
    fi
    start_authenticating_danted "$dir"
  fi
}

# Starts a danted on a free port of 127.0.0.1 that takes the SOCKS5 method $3 (`none`, or
# `username`: RFC 1929's, checked against the system's accounts), its files named $2 in $1, and
# connects out from 127.0.0.1 or ::1 (a target at an IPv6 literal is reached too). Sets
# danted_port and returns 0 once it listens; prints its logs and returns 1 if it does not.
start_danted() {
  local dir=$1 name=$2 method=$3 users="" v6_external="" v6_rule=""
  danted_port=$(free_port)
  if [ "$(id -u)" = 0 ]; then users=$'user.privileged: root\nuser.unprivileged: nobody'; fi
  # ::1 only where the kernel has it: danted does not start with an external address it lacks.
  if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
    v6_external="external: ::1"
    v6_rule="socks pass { from: 127.0.0.0/8 to: ::/0 command: connect }"
  fi
  cat > "$dir/$name.conf" <<CONF
logoutput: $dir/$name.log
internal: 127.0.0.1 port = $danted_port
external: 127.0.0.1
$v6_external
clientmethod: none
socksmethod: $method
$users
client pass { from: 127.0.0.0/8 to: 0.0.0.0/0 }
socks pass { from: 127.0.0.0/8 to: 0.0.0.0/0 command: connect }
$v6_rule
CONF
  /usr/sbin/danted -f "$dir/$name.conf" -p "$dir/$name.pid" > "$dir/$name.out" 2>&1 &
  proxies_pids="$proxies_pids $!"
  wait_for_port "$danted_port" && return 0
  cat "$dir/$name.out" "$dir/$name.log" 2>/dev/null || true
  return 1
}

# A second danted that wants RFC 1929's username/password. Dante checks them against the
# system's accounts (its `username` method reads /etc/shadow, so it runs as root), so this makes
# a locked-down account for it: no home, no shell, its password hashed with SHA-512 at the
# fewest rounds (Debian's default, yescrypt, would cost tens of milliseconds a connection). Only
# as root; otherwise the tests that need it are skipped.
start_authenticating_danted() {
  local dir=$1 user=courier-socks password=socks-secret
  if [ "$(id -u)" != 0 ]; then
    echo "not root: no account for the authenticating danted; its tests will be skipped"
    return
  fi
  if ! id "$user" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$user" || { echo "useradd failed: the authenticating danted's tests will be skipped"; return; }
  fi
  echo "$user:$password" | chpasswd --crypt-method SHA512 --sha-rounds 1000
  if start_danted "$dir" danted-auth username; then
    export COURIER_SOCKS_AUTH_PROXY_URL="socks5h://$user:$password@127.0.0.1:$danted_port"
    echo "danted (username/password) at 127.0.0.1:$danted_port"
  else
    echo "the authenticating danted did not start: its tests will be skipped"
  fi
}

# stunnel on a free port of 127.0.0.1, TLS in front of the proxy at 127.0.0.1:$2: an https://
# proxy. Its certificate names localhost (and 127.0.0.1), issued by a CA made here with openssl,
# whose PEM file COURIER_HTTPS_PROXY_CA names for the tests to trust.
start_tls_front() {
  local dir=$1/stunnel upstream=$2 port
  mkdir -p "$dir"
  port=$(free_port)
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=Courier CI proxy CA" \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null || { echo "openssl failed: the https:// proxy tests will be skipped"; return; }
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
    -keyout "$dir/proxy.key" -out "$dir/proxy.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$dir/ext.cnf"
  openssl x509 -req -in "$dir/proxy.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
    -extfile "$dir/ext.cnf" -out "$dir/proxy.pem" 2>/dev/null
  cat > "$dir/stunnel.conf" <<CONF
foreground = yes
pid =
[https-proxy]
accept = 127.0.0.1:$port
connect = 127.0.0.1:$upstream
cert = $dir/proxy.pem
key = $dir/proxy.key
CONF
  /usr/bin/stunnel4 "$dir/stunnel.conf" > "$dir/stunnel.log" 2>&1 &
  proxies_pids="$proxies_pids $!"
  if wait_for_port "$port"; then
    export COURIER_HTTPS_PROXY_URL="https://courier:secret@localhost:$port"
    export COURIER_HTTPS_PROXY_CA="$dir/ca.pem"
    echo "stunnel (an https:// proxy in front of tinyproxy) at localhost:$port"
  else
    echo "stunnel did not start: the https:// proxy tests will be skipped"; cat "$dir/stunnel.log" || true
  fi
}

# squid as an HTTP proxy that wants Digest credentials (RFC 7616, MD5, qop=auth) for CONNECT
# and forwarded requests: its digest_file_auth helper reads them from a file. Nothing is cached.
# A second user, `refused`, is the one the wrong-password test names: squid keeps credential state
# per user, and the other tests authenticate `courier` at the same moment.
# Its 407s leave the connection open, with an error page for a body.
start_digest_squid() {
  local dir=$1/squid port
  mkdir -p "$dir" && chmod 777 "$dir"
  port=$(free_port)
  printf 'courier:digest-secret\nrefused:refused-secret\n' > "$dir/passwd" && chmod 644 "$dir/passwd"
  cat > "$dir/squid.conf" <<CONF
http_port 127.0.0.1:$port
pid_filename $dir/squid.pid
cache deny all
cache_dir null /tmp
access_log stdio:$dir/access.log
cache_log $dir/cache.log
coredump_dir $dir
auth_param digest program /usr/lib/squid/digest_file_auth $dir/passwd
auth_param digest realm courier-digest
auth_param digest children 2 startup=1
acl authenticated proxy_auth REQUIRED
http_access allow authenticated
http_access deny all
shutdown_lifetime 0 seconds
CONF
  /usr/sbin/squid -f "$dir/squid.conf" -N > "$dir/squid.out" 2>&1 &
  proxies_pids="$proxies_pids $!"
  if wait_for_port "$port"; then
    export COURIER_DIGEST_PROXY_URL="http://courier:digest-secret@127.0.0.1:$port"
    export COURIER_DIGEST_PROXY_LOG="$dir/access.log"
    echo "squid (Digest) at 127.0.0.1:$port"
  else
    echo "squid did not start: the Digest proxy tests will be skipped"; cat "$dir/squid.out" "$dir/cache.log" 2>/dev/null || true
  fi
}

# A port of 127.0.0.1 free now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Waits up to 10 s for something to listen on 127.0.0.1:$1.
wait_for_port() {
  python3 - "$1" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY
}
