#!/bin/sh
# Compares `critpath analyze --json` of two builds on every trace in
# examples/ and the crates' test fixtures: the outputs must be byte for byte
# the same (a speed change must not change a result).
# Usage: benches/same-output.sh BEFORE_BINARY AFTER_BINARY
set -u
before=$1
after=$2
cd "$(dirname "$0")/.." || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
same=0
differ=0
for f in $(find examples crates/*/tests -type f \( -name '*.jsonl' -o -name '*.cpt' \
    -o -name '*.json' -o -name '*.data' -o -name '*.cpab' -o -name '*.gz' -o -name '*.zst' \
    -o -name '*.xz' \) | sort); do
    "$before" analyze --json "$f" >"$tmp/a" 2>"$tmp/ae"
    ra=$?
    "$after" analyze --json "$f" >"$tmp/b" 2>"$tmp/be"
    rb=$?
    if [ $ra -eq $rb ] && cmp -s "$tmp/a" "$tmp/b" && cmp -s "$tmp/ae" "$tmp/be"; then
        same=$((same + 1))
    else
        differ=$((differ + 1))
        echo "DIFFERS: $f (exit $ra vs $rb)"
    fi
done
echo "$same traces give the same output, $differ differ"
[ $differ -eq 0 ]
