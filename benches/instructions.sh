#!/bin/sh
# Counts the instructions `critpath analyze --json FILE` executes, for each
# build given, under valgrind's cachegrind (no cache simulation) with
# CRITPATH_THREADS=1, so that the count does not depend on how the threads
# met. A change too small for wall-clock time on a shared machine (whose
# speed drifts by 10-15% from one minute to the next) still shows here;
# instructions are not time (cache misses are not counted), so a change
# that moves memory traffic needs interleaved timed runs as well.
#
#   benches/instructions.sh FILE BINARY...
#
# Prints one line a build: its instructions, and per 1,000 of the first's.
# Keep FILE small (tens of MB): cachegrind runs some 50 times slower.
set -eu
if [ $# -lt 2 ]; then
    echo "usage: $0 FILE BINARY..." >&2
    exit 2
fi
command -v valgrind >/dev/null || { echo "$0: needs valgrind" >&2; exit 2; }
file=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
first=""
for bin in "$@"; do
    CRITPATH_THREADS=1 valgrind --tool=cachegrind --cache-sim=no \
        --cachegrind-out-file="$tmp/cg" "$bin" analyze --json "$file" \
        >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    ir=$(sed -n 's/.*I *refs: *//p' "$tmp/err" | tr -d ,)
    [ -n "$first" ] || first=$ir
    awk -v b="$bin" -v ir="$ir" -v f="$first" \
        'BEGIN { printf "%-40s %15d instructions  %6.1f per 1,000 of the first\n", b, ir, 1000 * ir / f }'
done
