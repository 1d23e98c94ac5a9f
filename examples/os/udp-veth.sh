#!/usr/bin/env bash
# The kernel's network path on the critical path: a UDP client and server in
# two network namespaces joined by a veth pair, recorded with
# `critpath record --net`, with and without RULES nftables rules (that match
# nothing) in the server's input chain. Creates and removes everything it
# uses; needs root, perf, ip and nft.
#
#   examples/os/udp-veth.sh OUTDIR [REQUESTS] [RULES]
#
# writes OUTDIR/plain.data and OUTDIR/rules.data and analyzes both.
set -euo pipefail
out=${1:?usage: udp-veth.sh OUTDIR [REQUESTS] [RULES]}
requests=${2:-2000}
rules=${3:-3000}
here=$(cd "$(dirname "$0")" && pwd)
critpath=${CRITPATH:-critpath}
mkdir -p "$out"
cc -O2 -o "$out/udp_echo" "$here/udp_echo.c"

ns_a=cpA$$ ns_b=cpB$$
cleanup() {
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$ns_a"
ip netns add "$ns_b"
ip link add va$$ netns "$ns_a" type veth peer name vb$$ netns "$ns_b"
ip -n "$ns_a" addr add 10.77.0.1/24 dev va$$
ip -n "$ns_b" addr add 10.77.0.2/24 dev vb$$
ip -n "$ns_a" link set va$$ up
ip -n "$ns_b" link set vb$$ up
ip -n "$ns_a" link set lo up
ip -n "$ns_b" link set lo up

run() { # NAME
  ip netns exec "$ns_b" "$out/udp_echo" server 7777 &
  local server=$!
  sleep 0.2
  "$critpath" record --net -o "$out/$1.data" -- \
    ip netns exec "$ns_a" "$out/udp_echo" client 10.77.0.2 7777 "$requests"
  wait "$server"
}

run plain
{
  echo "table inet cpbench {"
  echo "  chain input { type filter hook input priority 0; policy accept;"
  for i in $(seq 1 "$rules"); do
    echo "    ip saddr 192.0.$((i / 250)).$((i % 250 + 1)) udp dport $((10000 + i % 50000)) drop"
  done
  echo "  }"
  echo "}"
} > "$out/rules.nft"
ip netns exec "$ns_b" nft -f "$out/rules.nft"
run rules

for f in plain rules; do
  echo "== $f"
  "$critpath" analyze "$out/$f.data" --top 8
done
