#!/usr/bin/env bash
# Per-buffer costs of sending over loopback, across send sizes (the TCP/IP
# anatomy study's sweep): for UDP and TCP and each size, sweep.c streams
# COUNT buffers to a receiver; `critpath record --net --syscalls` records
# it and `critpath packets --json` splits each packet's life into layers,
# summed per buffer sent. Instructions and data-cache misses per buffer
# come from cachegrind (user space only: valgrind does not see the
# kernel), and from the hardware counters too where `critpath counters`
# finds them. Needs root, perf, python3 (and valgrind for the counts).
#
#   examples/net/sweep.sh OUTDIR [COUNT] [SIZES]
#
# writes OUTDIR/PROTO-SIZE.data, OUTDIR/sweep.json and prints a table. The
# time per buffer is a run's without the recorder; the layers are the
# recorded run's (recording all CPUs slows every packet a little).
set -euo pipefail
out=${1:?usage: sweep.sh OUTDIR [COUNT] [SIZES]}
count=${2:-2000}
sizes=${3:-64 256 1024 4096 16384 65000}
here=$(cd "$(dirname "$0")" && pwd)
critpath=${CRITPATH:-critpath}
mkdir -p "$out"
cc -O2 -o "$out/sweep" "$here/sweep.c"

points=()
for proto in udp tcp; do
  for size in $sizes; do
    name="$proto-$size"
    # The time per buffer of a run without the recorder.
    line=$("$out/sweep" "$proto" "$size" "$count")
    us=$(sed -n 's/.*: \([0-9.]*\) us per buffer.*/\1/p' <<<"$line")
    "$critpath" record --net --syscalls -o "$out/$name.data" -- \
      "$out/sweep" "$proto" "$size" "$count" >/dev/null 2>"$out/$name.log"
    "$critpath" packets "$out/$name.data" --json >"$out/$name.packets.json"
    cg=""
    if command -v valgrind >/dev/null 2>&1; then
      rm -f "$out/$name.cg".*
      valgrind --tool=cachegrind --cache-sim=yes \
        --cachegrind-out-file="$out/$name.cg.%p" \
        "$out/sweep" "$proto" "$size" "$count" >/dev/null 2>&1 || true
      cg=$(cat "$out/$name.cg".* 2>/dev/null | sed -n 's/^summary: //p' | tr '\n' ';')
    fi
    "$critpath" counters -e instructions,cache-misses --json -o "$out/$name.counters.json" \
      -- "$out/sweep" "$proto" "$size" "$count" >/dev/null 2>&1 || true
    points+=("$proto $size $us $cg")
  done
done

printf '%s\n' "${points[@]}" | python3 "$here/sweep_table.py" "$out" "$count"
