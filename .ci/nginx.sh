# Sourced by .ci/run: nginx from Debian's packages on 127.0.0.1 for the large-file tests.
# Serves `files/` (a generated 64 MiB file and a small text file; `/slow/` is the same folder at
# 4 MB/s) and accepts WebDAV PUTs into `uploads/`. For the HTTP cache's tests, `files/` is also
# served under `/cache/expires/` (fresh for an hour), `/cache/no-cache/` (always revalidated,
# by ETag), `/cache/last-modified/` (no ETag, no lifetime: the Last-Modified heuristic), and
# `/cache/vary` answers with the request's Accept-Language and a fresh request id, varying on it.
# The same server listens on a Unix-domain socket too. Exports COURIER_NGINX_URL,
# COURIER_NGINX_ROOT and COURIER_NGINX_SOCKET; the tests that need them say that they were
# skipped when they are missing.

start_nginx() {
  if [ ! -x /usr/sbin/nginx ]; then
    log "nginx (apt)"
    apt-get update -qq && apt-get install -y -qq nginx
  fi
  local dir="$root/.build-ci-nginx"
  rm -rf "$dir" && mkdir -p "$dir/files" "$dir/uploads" "$dir/client_body"
  head -c $((64 << 20)) /dev/urandom > "$dir/files/large.bin"
  printf 'a small file for the cache tests\n' > "$dir/files/small.txt"
  # Last modified a day ago, so that the heuristic gives it a lifetime of 2.4 hours.
  touch -d '1 day ago' "$dir/files/small.txt"
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  local user=""
  if [ "$(id -u)" = 0 ]; then user="user root;"; fi
  cat > "$dir/nginx.conf" <<CONF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
$user
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $dir/client_body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    server {
        listen 127.0.0.1:$port;
        listen unix:$dir/nginx.sock;
        location /files/ { alias $dir/files/; }
        location /slow/ { alias $dir/files/; limit_rate 4m; }
        location /cache/expires/ { alias $dir/files/; expires 1h; }
        location /cache/no-cache/ { alias $dir/files/; add_header Cache-Control "no-cache"; }
        location /cache/last-modified/ { alias $dir/files/; etag off; }
        location = /cache/vary {
            default_type text/plain;
            add_header Cache-Control "max-age=3600";
            add_header Vary "Accept-Language";
            return 200 "lang=\$http_accept_language id=\$request_id\n";
        }
        location /uploads/ {
            alias $dir/uploads/;
            dav_methods PUT DELETE;
            create_full_put_path on;
            client_max_body_size 0;
        }
    }
}
CONF
  /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" -g 'daemon off;' &
  nginx_pid=$!
  for _ in $(seq 1 50); do
    if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/files/large.bin', timeout=1).read(1)" 2>/dev/null; then
      export COURIER_NGINX_URL="http://127.0.0.1:$port"
      export COURIER_NGINX_ROOT="$dir"
      export COURIER_NGINX_SOCKET="$dir/nginx.sock"
      echo "nginx at $COURIER_NGINX_URL, serving $dir"
      return 0
    fi
    sleep 0.2
  done
  echo "nginx did not start: the nginx tests will be skipped"
  cat "$dir/error.log" || true
}
