#!/usr/bin/env bash
# critpath analyze perf.data against `perf script` on the same file.
# Records two threads ping-ponging a byte through pipes ROUNDS times with
# `critpath record`, then times both readers (best of 3) and prints the
# ratio. Needs root and perf.
#
#   benches/perf-vs-script.sh [ROUNDS]     (default 100000)
set -euo pipefail
rounds=${1:-100000}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
critpath="$root/target/release/critpath"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cc -O2 -pthread -o "$dir/pingpong" "$root/examples/os/pingpong.c"
"$critpath" record --mmap-pages 8192 -o "$dir/pp.data" -- "$dir/pingpong" "$rounds" >/dev/null

best() { # command... -> best wall time in seconds of 3 runs
  local b=""
  for _ in 1 2 3; do
    local s e
    s=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    e=$(date +%s.%N)
    b=$(echo "$s $e ${b:-1e9}" | awk '{d=$2-$1; print (d<$3)?d:$3}')
  done
  echo "$b"
}
events=$(perf script -i "$dir/pp.data" 2>/dev/null | wc -l)
size=$(stat -c %s "$dir/pp.data")
t_script=$(best perf script -i "$dir/pp.data")
t_critpath=$(best "$critpath" analyze "$dir/pp.data")
echo "perf.data: $events events, $((size / 1000000)) MB ($rounds ping-pong rounds)"
awk -v s="$t_script" -v c="$t_critpath" -v n="$events" 'BEGIN {
  printf "perf script:       %7.3f s  (%5.2f M events/s)\n", s, n / s / 1e6
  printf "critpath analyze:  %7.3f s  (%5.2f M events/s)\n", c, n / c / 1e6
  printf "ratio:             %7.1fx\n", s / c
}'
