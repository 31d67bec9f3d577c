#!/usr/bin/env bash
# Counts what a request costs in units that do not move with the machine's noise: Swift retains
# of objects (nil excluded) and malloc calls, per request, in courier-bench's own process (nginx,
# its child, is left out), split between the event-loop threads and the callers' threads (Swift's
# cooperative pool and Dispatch's workers).
#
# Timing figures on this kind of VM move by 20-30 % between runs; these counts move by well under
# 1 %, so an A/B of two builds needs one run of each. A retain or a malloc is not a time, but on the
# real path each costs far more than in a loop that keeps the caches warm (Docs/BENCHMARKS.md,
# "Where the time goes: callers' threads and the loop"), and fewer of them is how the session layer got cheaper so far.
#
# Usage (root: uprobes; perf from Debian's linux-perf):
#   Scripts/count-per-request.sh [--bench PATH] [--requests N] -- [courier-bench options]
#   Scripts/count-per-request.sh -- --clients courier --scenario sequential
#   Scripts/count-per-request.sh -- --clients courier-engine --http2 --scenario concurrent
# Give courier-bench one client and one scenario. It runs twice, with N and 2N measured requests
# (default N = 2000) after the same warm-up; the difference divided by N is the count per request,
# so start-up, warm-up and the server's start cancel out.
#
# `--by-frame K` says where the retains go instead: the K largest counts a request, each charged
# to the innermost Courier function on its stack (or, with none, to the function that called
# swift_retain, marked "other:"), names demangled by `swift demangle`. Compare two clients
# (courier against courier-engine) or two builds by running it for each.
# `--by-type K` says what is retained: the K largest counts a request by the type of the object
# (a task, a request's storage, an array's buffer), then by type and innermost Courier frame
# together (Scripts/retains-by-type.py names the types; it needs python3 and nm).
set -euo pipefail

bench=".build/release/courier-bench"
requests=2000
frames=0
types=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bench) bench="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --by-frame) frames="$2"; shift 2 ;;
    --by-type) types="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (courier-bench's options go after --)" >&2; exit 2 ;;
  esac
done
[ -x "$bench" ] || { echo "no courier-bench at $bench (swift build -c release --product courier-bench)" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 2; }
[ "$frames" = 0 ] && [ "$types" = 0 ] || command -v swift >/dev/null || { echo "--by-frame and --by-type need swift on the PATH (swift demangle)" >&2; exit 2; }
[ "$types" = 0 ] || command -v python3 >/dev/null || { echo "--by-type needs python3" >&2; exit 2; }

core=$(ldd "$bench" | awk '/libswiftCore.so/ {print $3}')
libc=$(ldd "$bench" | awk '/libc.so.6/ {print $3}')
[ -n "$core" ] && [ -n "$libc" ] || { echo "cannot find libswiftCore.so and libc.so.6 of $bench" >&2; exit 2; }

# The probes, added for this run and removed after it (ones that were there already are kept).
added=()
probe() { # group:event, library, spec
  if ! perf probe -l 2>/dev/null | grep -q "$1 "; then
    perf probe -q -x "$2" --add "$3" >/dev/null
    added+=("$1")
  fi
}
cleanup() {
  for event in "${added[@]}"; do perf probe -q --del "$event" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
work=$(mktemp -d)
trap cleanup EXIT
probe probe_libswiftCore:swift_retain "$core" 'swift_retain obj=%di:u64'
probe probe_libc:malloc "$libc" 'malloc'
# The object's metadata and, 40 bytes into a class's metadata (no Objective-C interop), its
# nominal type descriptor: what --by-type names the object by.
[ "$types" = 0 ] || probe probe_libswiftCore:retain_isa "$core" 'retain_isa=swift_retain obj=%di:u64 isa=+0(%di):u64 desc=+40(+0(%di)):u64'

# Events of one run, by thread kind: "loop" (NIO's event-loop threads), "caller" (every other
# thread of courier-bench's process).
count() { # measured requests, then courier-bench's options
  local measured=$1
  shift
  perf record -q -o "$work/perf.data" \
    -e probe_libswiftCore:swift_retain --filter 'obj != 0 && obj < 0x8000000000000000' -e probe_libc:malloc \
    -- "$bench" "$@" --requests "$measured" >/dev/null 2>"$work/bench.err" \
    || { cat "$work/bench.err" >&2; exit 1; }
  perf script -i "$work/perf.data" -F comm,event 2>/dev/null | awk '
    $1 == "nginx" { next }
    { kind = ($1 ~ /^NIO-/) ? "loop" : "caller"; event = ($NF ~ /retain/) ? "retains" : "mallocs"; n[event " " kind]++ }
    END { for (k in n) print k, n[k] }'
}
# One run with call stacks, recording one of the retain probes for real objects only (nil and
# tagged pointers left out) into $work/perf.data.
record_retains() { # probe, measured requests, then courier-bench's options
  local event=$1 measured=$2
  shift 2
  perf record -q -g -o "$work/perf.data" \
    -e "$event" --filter 'obj != 0 && obj < 0x8000000000000000' \
    -- "$bench" "$@" --requests "$measured" >/dev/null 2>"$work/bench.err" \
    || { cat "$work/bench.err" >&2; exit 1; }
}
# Retains of real objects in one run, by innermost Courier frame: "count mangled-name" lines.
by_frame() { # measured requests, then courier-bench's options
  record_retains probe_libswiftCore:swift_retain "$@"
  perf script -i "$work/perf.data" -F comm,ip,sym --no-demangle 2>/dev/null | awk '
    function flush() { if (started && !skip) n[(found != "") ? found : "other:" first]++ }
    /^[^ \t]/ { flush(); started = 1; found = ""; first = ""; depth = 0; skip = ($1 == "nginx"); next }
    NF > 0 { depth++; if (depth == 2) first = $2; if (found == "" && depth >= 2 && $2 ~ /7Courier/) found = $2 }
    END { flush(); for (k in n) print n[k], k }'
}
# Retains of real objects in one run, by type and innermost Courier frame: "count type<TAB>frame" lines.
by_type() { # measured requests, then courier-bench's options
  record_retains probe_libswiftCore:retain_isa "$@"
  perf script -i "$work/perf.data" -F comm,trace,ip,sym --no-demangle --show-mmap-events 2>/dev/null \
    | python3 "$(dirname "$0")/retains-by-type.py"
}
if [ "$types" != 0 ]; then
  by_type "$requests" "$@" > "$work/first"
  by_type $((requests * 2)) "$@" > "$work/second"
  # Per request, the difference of the two runs, by (type, frame); then summed by type.
  awk -F'\t' -v n="$requests" '
    { split($1, head, " "); count = head[1]; key = substr($1, length(count) + 2) "\t" $2 }
    NR == FNR { a[key] = count; next }
    { b[key] = count }
    END {
      for (k in b) d[k] = (b[k] - a[k]) / n
      for (k in a) if (!(k in b)) d[k] = -a[k] / n
      for (k in d) printf "%.2f\t%s\n", d[k], k
    }' "$work/first" "$work/second" > "$work/pairs"
  echo "courier-bench $* (retains a request by the type of the object: ($((requests * 2)) requests - $requests) / $requests)"
  awk -F'\t' '{ t[$2] += $1; total += $1 } END { for (k in t) if (t[k] >= 0.5 || t[k] <= -0.5) printf "%8.1f  %s\n", t[k], k; printf "%8.1f  (in all)\n", total > "/dev/stderr" }' \
    "$work/pairs" 2> "$work/total" | sort -rn | head -n "$types" | swift demangle --simplified | cut -c1-160
  cat "$work/total"
  echo
  echo "by type and innermost Courier frame:"
  awk -F'\t' '$1 >= 0.5 || $1 <= -0.5 { printf "%8.1f  %s  @ %s\n", $1, $2, $3 }' "$work/pairs" | sort -rn | head -n "$types" \
    | sed 's/@ other:/@ other: /' | swift demangle --simplified | cut -c1-200
  exit 0
fi
if [ "$frames" != 0 ]; then
  by_frame "$requests" "$@" > "$work/first"
  by_frame $((requests * 2)) "$@" > "$work/second"
  echo "courier-bench $* (retains a request by innermost Courier frame: ($((requests * 2)) requests - $requests) / $requests)"
  awk -v n="$requests" '
    NR == FNR { a[$2] = $1; total -= $1; next }
    { b[$2] = $1; total += $1 }
    END {
      for (k in b) { d = (b[k] - a[k]) / n; if (d >= 0.5 || d <= -0.5) printf "%8.1f  %s\n", d, k }
      for (k in a) if (!(k in b) && a[k] / n >= 0.5) printf "%8.1f  %s\n", -a[k] / n, k
      printf "%8.1f  (in all)\n", total / n > "/dev/stderr"
    }' "$work/first" "$work/second" 2> "$work/total" | sort -rn | head -n "$frames" | sed 's/  other:/  other: /' | swift demangle --simplified | cut -c1-160
  cat "$work/total"
  exit 0
fi

first=$(count "$requests" "$@")
second=$(count $((requests * 2)) "$@")

echo "courier-bench $* (per request: ($((requests * 2)) requests - $requests) / $requests)"
printf '%-8s %10s %10s %10s\n' "" loop caller total
for event in retains mallocs; do
  line=$(printf '%-8s' "$event")
  total=0
  for kind in loop caller; do
    a=$(printf '%s\n' "$first" | awk -v k="$event $kind" '$1 " " $2 == k {print $3}')
    b=$(printf '%s\n' "$second" | awk -v k="$event $kind" '$1 " " $2 == k {print $3}')
    per=$(awk -v a="${a:-0}" -v b="${b:-0}" -v n="$requests" 'BEGIN { printf "%.1f", (b - a) / n }')
    total=$(awk -v t="$total" -v p="$per" 'BEGIN { printf "%.1f", t + p }')
    line="$line$(printf ' %10s' "$per")"
  done
  printf '%s %10s\n' "$line" "$total"
done
