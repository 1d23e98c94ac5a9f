#!/usr/bin/env bash
# The figures of README's "Speed and memory": critpath bench on RECORDS
# records of each trace (each analyzed RUNS times in a process of its own;
# the median run, with the range of all), and, with a perf.data file given,
# that recording too, as a Markdown table. Compare perf.data with
# `perf script` with benches/perf-vs-script.sh.
#
#   benches/scale.sh [RECORDS] [PERF_DATA]     (default 20M)
#
# CRITPATH=path/to/critpath measures another build (default: this tree's,
# built first); RUNS=n analyses of each trace (default 5); FORMATS=a,b,...
# the traces.
set -euo pipefail
records=${1:-20M}
perf_data=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${CRITPATH:-}" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p critpath
  CRITPATH="$root/target/release/critpath"
fi
formats=${FORMATS:-cpt,cpt-raw,jsonl,engine,cpt-unique,jsonl-unique}
uptime
extra=()
[ -n "$perf_data" ] && extra=(--perf-data "$perf_data")
"$CRITPATH" bench --records "$records" --formats "$formats" --runs "${RUNS:-5}" \
  "${extra[@]}" --json | python3 -c '
import json, sys
print("| records | trace | records/s, median (range) | peak RSS MiB | cores |")
print("|---:|---|---:|---:|---:|")
for r in json.load(sys.stdin):
    n = r["records"]
    rate = lambda s: n / s / 1e6
    print("| %d | %s | %.1f M (%.1f–%.1f) | %.1f | %.2f |" % (
        n, r["format"], r["records_per_s"] / 1e6, rate(r["analyze_max_s"]),
        rate(r["analyze_min_s"]), r["peak_rss_kib"] / 1024, r["cores"]))
'
