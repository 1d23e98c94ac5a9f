#!/usr/bin/env bash
# The figures of README's "Memory and cores at scale": critpath bench on 20M
# records of each trace (best of 3 by records/s), and, with a perf.data file
# given, that recording too. Compare perf.data with `perf script` with
# benches/perf-vs-script.sh.
#
#   benches/scale.sh [RECORDS] [PERF_DATA]     (default 20M)
#
# CRITPATH=path/to/critpath measures another build (default: this tree's,
# built first); RUNS=n repetitions (default 3); FORMATS=a,b,... the traces.
set -euo pipefail
records=${1:-20M}
perf_data=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${CRITPATH:-}" ]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p critpath
  CRITPATH="$root/target/release/critpath"
fi
critpath=$CRITPATH
formats=${FORMATS:-cpt,cpt-raw,jsonl,engine,cpt-unique,jsonl-unique}
uptime
extra=()
[ -n "$perf_data" ] && extra=(--perf-data "$perf_data")
for _ in $(seq "${RUNS:-3}"); do
  "$critpath" bench --records "$records" --formats "$formats" "${extra[@]}" --json
done | python3 -c '
import json, sys
text, dec, i, best = sys.stdin.read(), json.JSONDecoder(), 0, {}
while True:
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    rows, i = dec.raw_decode(text, i)
    for r in rows:
        k = (r["records"], r["format"])
        if k not in best or r["records_per_s"] > best[k]["records_per_s"]:
            best[k] = r
print("| records | trace | records/s | peak RSS MiB | cores |")
print("|---:|---|---:|---:|---:|")
for (n, f), r in best.items():
    rate, rss = r["records_per_s"] / 1e6, r["peak_rss_kib"] / 1024
    print("| %d | %s | %.2f M | %.1f | %.2f |" % (n, f, rate, rss, r["cores"]))
'
