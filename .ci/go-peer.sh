# Sourced by .ci/run: Go's net/http server (.ci/go-peer/main.go) on 127.0.0.1 for the interop
# tests (Tests/CourierTests/Interop): HTTP/1.1 in cleartext, and h2 and http/1.1 over TLS with a
# root it makes at start. Builds it with Debian's Go (golang-go, installed when `go` is missing)
# and the standard library alone, offline. Exports COURIER_GO_PEER_URL, COURIER_GO_PEER_TLS_URL
# and COURIER_GO_PEER_CA; the tests say that they were skipped when they are missing. Sets
# go_peer_pid for the cleanup.

go_peer_pid=""

start_go_peer() {
  if ! command -v go >/dev/null 2>&1; then
    log "golang-go (apt)"
    apt-get update -qq && apt-get install -y -qq golang-go || true
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "no Go toolchain: the Go interop tests will be skipped"
    return 0
  fi
  local dir="$root/.build-ci-go-peer"
  rm -rf "$dir/run" && mkdir -p "$dir/run"
  # Its own build cache, and no module proxy: the peer needs nothing but the standard library.
  if ! (cd "$root/.ci/go-peer" && GOCACHE="$dir/cache" GOPATH="$dir/gopath" GOPROXY=off GOFLAGS=-mod=mod \
      go build -o "$dir/go-peer" .); then
    echo "the Go peer did not build: the Go interop tests will be skipped"
    return 0
  fi
  "$dir/go-peer" "$dir/run" > "$dir/go-peer.log" 2>&1 &
  go_peer_pid=$!
  for _ in $(seq 1 50); do
    if [ -s "$dir/run/urls" ]; then
      local plain secure
      read -r plain secure < "$dir/run/urls"
      export COURIER_GO_PEER_URL="$plain"
      export COURIER_GO_PEER_TLS_URL="$secure"
      export COURIER_GO_PEER_CA="$dir/run/ca.pem"
      echo "Go's net/http at $COURIER_GO_PEER_URL and $COURIER_GO_PEER_TLS_URL ($(go version | cut -d' ' -f3))"
      return 0
    fi
    sleep 0.2
  done
  echo "the Go peer did not start: the Go interop tests will be skipped"
  cat "$dir/go-peer.log" || true
}
