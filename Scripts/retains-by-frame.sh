#!/usr/bin/env bash
# Where a request's retains go: Swift retains of objects a request, each charged to the innermost
# Courier function on its stack (or, when none, to the function that called swift_retain, marked
# "other:"), in courier-bench's own process (nginx, its child, is left out).
#
# Counted as Scripts/count-per-request.sh counts them: nil and tagged values (small strings, whose
# retain returns at once) are left out. A profile that counts every call of swift_retain charges a
# field's name and value to the code that copies them even when both are small strings; this one
# does not, so its totals agree with count-per-request.sh's.
#
# Usage (root: uprobes; perf from Debian's linux-perf):
#   Scripts/retains-by-frame.sh [--bench PATH] [--requests N] [--top K] -- [courier-bench options]
#   Scripts/retains-by-frame.sh -- --clients courier --scenario sequential
# Give courier-bench one client and one scenario. It runs twice, with N and 2N measured requests
# (default N = 3000) after the same warm-up; each frame's difference divided by N is its count a
# request, so start-up and warm-up cancel out. Compare two clients (courier against
# courier-engine) or two builds by running it for each.
set -euo pipefail

bench=".build/release/courier-bench"
requests=3000
top=40
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) bench="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --top) top="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (courier-bench's options go after --)" >&2; exit 2 ;;
  esac
done
[ -x "$bench" ] || { echo "no courier-bench at $bench (swift build -c release --product courier-bench)" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 2; }
command -v swift >/dev/null || { echo "swift is not on the PATH (swift demangle names the frames)" >&2; exit 2; }

core=$(ldd "$bench" | awk '/libswiftCore.so/ {print $3}')
[ -n "$core" ] || { echo "cannot find libswiftCore.so of $bench" >&2; exit 2; }

work=$(mktemp -d)
added=false
cleanup() {
  if $added; then perf probe -q --del probe_libswiftCore:swift_retain >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
if ! perf probe -l 2>/dev/null | grep -q "probe_libswiftCore:swift_retain "; then
  perf probe -q -x "$core" --add 'swift_retain obj=%di:u64' >/dev/null
  added=true
fi

# Retains of one run by frame: "count mangled-name" lines.
frames() { # measured requests, then courier-bench's options
  local measured=$1
  shift
  perf record -q -g -o "$work/perf.data" \
    -e probe_libswiftCore:swift_retain --filter 'obj != 0 && obj < 0x8000000000000000' \
    -- "$bench" "$@" --requests "$measured" >/dev/null 2>"$work/bench.err" \
    || { cat "$work/bench.err" >&2; exit 1; }
  perf script -i "$work/perf.data" -F comm,ip,sym --no-demangle 2>/dev/null | awk '
    function flush() { if (started && !skip) n[(found != "") ? found : "other:" first]++ }
    /^[^ \t]/ { flush(); started = 1; found = ""; first = ""; depth = 0; skip = ($1 == "nginx"); next }
    NF > 0 { depth++; if (depth == 2) first = $2; if (found == "" && depth >= 2 && $2 ~ /7Courier/) found = $2 }
    END { flush(); for (k in n) print n[k], k }'
}
frames "$requests" "$@" > "$work/first"
frames $((requests * 2)) "$@" > "$work/second"

echo "courier-bench $* (retains a request by innermost Courier frame: ($((requests * 2)) requests - $requests) / $requests)"
awk -v n="$requests" '
  NR == FNR { a[$2] = $1; next }
  { b[$2] = $1 }
  END {
    for (k in b) { d = (b[k] - a[k]) / n; if (d >= 0.5 || d <= -0.5) printf "%8.1f %s\n", d, k }
    for (k in a) if (!(k in b) && a[k] / n >= 0.5) printf "%8.1f %s\n", -a[k] / n, k
  }' "$work/first" "$work/second" | sort -rn | head -n "$top" > "$work/rows"
total=$(awk -v n="$requests" 'NR == FNR { a += $1; next } { b += $1 } END { printf "%.1f", (b - a) / n }' "$work/first" "$work/second")
# Names demangled in one pass (swift demangle rewrites the mangled names in its input).
awk '{ printf "%8s  %s\n", $1, $2 }' "$work/rows" | sed 's/  other:/  other: /' | swift demangle --simplified | cut -c1-160
printf '%8s  %s\n' "$total" "in all"
