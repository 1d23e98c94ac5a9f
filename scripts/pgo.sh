#!/usr/bin/env bash
# Builds critpath with profile-guided optimization: an instrumented build
# runs a training set, and the build that follows is laid out and inlined
# by what those runs did. Writes target/pgo/critpath.
#
#   scripts/pgo.sh
#
# PROFILE=name picks the cargo profile both builds use (default `dist`:
# fat LTO, one codegen unit; `release` builds in about half the time).
# The training set is made here and kept apart from what benches/
# measures: the engine's examples and span files, `critpath bench`'s
# generated shapes at 1M records, the PyTorch traces of examples/ddp, and,
# where `perf` can record (root), `examples/os/contention.c` and
# `forkjoin.c` recorded with `--syscalls` (the benchmarks' perf.data is a
# ping-pong, which the training never sees). Needs the toolchain's
# llvm-profdata (rustup component llvm-tools, added when missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
profile=${PROFILE:-dist}
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  rustup component add llvm-tools >/dev/null 2>&1 || true
fi
if [ ! -x "$profdata" ]; then
  echo "$0: needs $profdata (rustup component add llvm-tools)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build() { # target-dir rustflags
  RUSTFLAGS="$2" cargo build --profile "$profile" --locked --quiet \
    --manifest-path "$root/Cargo.toml" -p critpath --target-dir "$1"
}
out() { # target-dir -> binary
  local d=$profile
  [ "$profile" = dev ] && d=debug
  echo "$1/$d/critpath"
}

echo "pgo: instrumented build ($profile)" >&2
build "$root/target/pgo-gen" "-Cprofile-generate=$work/raw"
rm -rf "$work/raw" # what the build's own scripts wrote
gen=$(out "$root/target/pgo-gen")

echo "pgo: training" >&2
train() { "$gen" "$@" >/dev/null 2>&1 || true; }
find "$root/examples" -type f \( -name '*.json' -o -name '*.jsonl' -o -name '*.gz' \) |
  sort | while read -r f; do
  train analyze "$f"
  train analyze --json --next "$f"
done
train demo
"$gen" bench --records 1M --formats cpt,cpt-raw,jsonl,cpt-unique,jsonl-unique,cpt-deps,jsonl-deps \
  --runs 1 --dir "$work" --keep >/dev/null 2>"$work/bench.err" ||
  { cat "$work/bench.err" >&2; echo "$0: the training's bench failed" >&2; exit 1; }
for f in "$work"/bench-*; do
  train analyze "$f"
  train cgraph "$f"
done
rm -f "$work"/bench-*
if command -v perf >/dev/null && command -v cc >/dev/null; then
  for prog in contention forkjoin; do
    cc -O2 -pthread -o "$work/$prog" "$root/examples/os/$prog.c"
    if "$gen" record --syscalls -o "$work/$prog.data" -- "$work/$prog" >/dev/null 2>&1; then
      train analyze "$work/$prog.data"
      train analyze --json "$work/$prog.data"
    fi
  done
fi
"$profdata" merge -o "$work/merged.profdata" "$work"/raw/*.profraw

echo "pgo: optimized build" >&2
build "$root/target/pgo-use" "-Cprofile-use=$work/merged.profdata"
mkdir -p "$root/target/pgo"
cp "$(out "$root/target/pgo-use")" "$root/target/pgo/critpath.tmp"
mv "$root/target/pgo/critpath.tmp" "$root/target/pgo/critpath"
echo "pgo: $root/target/pgo/critpath" >&2
