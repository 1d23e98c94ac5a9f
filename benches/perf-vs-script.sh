#!/usr/bin/env bash
# critpath analyze perf.data against `perf script` on the same file: wall
# time (best of RUNS), peak RSS and CPU use of each. Without FILE, records
# two threads ping-ponging a byte through pipes ROUNDS times with
# `critpath record --syscalls` first. Needs perf (and root to record).
#
#   benches/perf-vs-script.sh [ROUNDS | FILE.perf.data]   (default 100000)
#
# CRITPATH=path/to/critpath compares another build (default: this tree's,
# built first with cargo's PROFILE, default `release`; `dist` is the
# shipped build: one codegen unit, fat LTO); RUNS=n (default 3); CPU=n
# records the two threads on CPU n only, so that each waits for the CPU
# the other holds (by default the scheduler places them, and the share of
# such waits in the recording varies from run to run).
set -euo pipefail
arg=${1:-100000}
runs=${RUNS:-3}
profile=${PROFILE:-release}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${CRITPATH:-}" ]; then
  cargo build --profile "$profile" --quiet --manifest-path "$root/Cargo.toml" -p critpath
  CRITPATH="$root/target/$profile/critpath"
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ -f "$arg" ]; then
  data=$arg
  what="$(basename "$arg")"
else
  cc -O2 -pthread -o "$dir/pingpong" "$root/examples/os/pingpong.c"
  data="$dir/pp.data"
  "$CRITPATH" record --syscalls --mmap-pages 8192 -o "$data" -- "$dir/pingpong" "$arg" ${CPU:-} >/dev/null
  what="$arg ping-pong rounds${CPU:+ on CPU $CPU}"
fi

# command... -> "best-wall-s peak-rss-kb cpu%" over $runs runs
measure() {
  local best="" rss=0 cpu=""
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M %P" -o "$dir/t" "$@" >/dev/null 2>&1
    read -r e m p <"$dir/t"
    if [ -z "$best" ] || awk -v a="$e" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$e; cpu=$p; fi
    [ "$m" -gt "$rss" ] && rss=$m
  done
  echo "$best $rss $cpu"
}
events=$(perf script -i "$data" 2>/dev/null | wc -l)
size=$(stat -c %s "$data")
read -r t_s m_s c_s < <(measure perf script -i "$data")
read -r t_c m_c c_c < <(measure "$CRITPATH" analyze "$data")
echo "perf.data: $events events, $((size / 1000000)) MB ($what)"
awk -v s="$t_s" -v c="$t_c" -v n="$events" -v ms="$m_s" -v mc="$m_c" -v cs="$c_s" -v cc="$c_c" 'BEGIN {
  printf "perf script:       %7.2f s  (%5.2f M events/s)  peak RSS %6.0f MiB  CPU %s\n", s, n / s / 1e6, ms / 1024, cs
  printf "critpath analyze:  %7.2f s  (%5.2f M events/s)  peak RSS %6.0f MiB  CPU %s\n", c, n / c / 1e6, mc / 1024, cc
  printf "ratio:             %7.1fx\n", s / c
}'
