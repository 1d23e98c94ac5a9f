"""Turns sweep.sh's measurements into a table and OUTDIR/sweep.json.

Reads, one line per point on standard input, "PROTO SIZE US_PER_BUFFER
CACHEGRIND_SUMMARIES" (summaries of the sender and receiver processes,
';'-separated: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw), and for each point
OUTDIR/PROTO-SIZE.packets.json and .counters.json.
"""
import json
import sys

out, count = sys.argv[1], int(sys.argv[2])
layers = ["application", "syscall", "driver", "irq", "backlog", "softirq", "stack", "socket", "copy"]
rows = []
for line in sys.stdin:
    parts = line.split(maxsplit=3)
    if len(parts) < 3:
        continue
    proto, size, us = parts[0], int(parts[1]), float(parts[2] or "nan")
    name = f"{proto}-{size}"
    with open(f"{out}/{name}.packets.json") as f:
        p = json.load(f)
    # Per buffer the application sent: every layer's time over all packets.
    per_layer = {l["layer"]: l["total_ns"] / count / 1000 for l in p["layers"]}
    row = {"proto": proto, "size": size, "us_per_buffer": us,
           "packets_per_buffer": p["packets"] / count,
           "layers_us_per_buffer": per_layer}
    summaries = [s.split() for s in (parts[3] if len(parts) > 3 else "").split(";") if s.strip()]
    if summaries:
        tot = [sum(int(s[i]) for s in summaries) for i in range(len(summaries[0]))]
        row["user_instructions_per_buffer"] = tot[0] / count
        if len(tot) >= 9:
            row["user_d1_misses_per_buffer"] = (tot[4] + tot[7]) / count
    try:
        with open(f"{out}/{name}.counters.json") as f:
            c = json.load(f)
        for k in c["counters"]:
            if k["kind"] == "hardware" and k["total"] is not None:
                row[f"{k['event']}_per_buffer"] = k["total"] / count
    except (OSError, ValueError):
        pass
    rows.append(row)

with open(f"{out}/sweep.json", "w") as f:
    json.dump(rows, f, indent=2)

shown = [l for l in layers if any(l in r["layers_us_per_buffer"] for r in rows)]
head = ["proto", "size", "us/buf", "pkts/buf"] + shown + ["user instr/buf", "D1 miss/buf"]
table = [head]
for r in rows:
    table.append([r["proto"], str(r["size"]), f"{r['us_per_buffer']:.2f}", f"{r['packets_per_buffer']:.2f}"]
                 + [f"{r['layers_us_per_buffer'].get(l, 0):.2f}" for l in shown]
                 + [f"{r.get('user_instructions_per_buffer', float('nan')):.0f}",
                    f"{r.get('user_d1_misses_per_buffer', float('nan')):.0f}"])
width = [max(len(t[i]) for t in table) for i in range(len(head))]
print(f"per-buffer costs over loopback, {count} buffers per point (layers in us per buffer sent)")
for t in table:
    print("  ".join(c.rjust(w) if i > 0 else c.ljust(w) for i, (c, w) in enumerate(zip(t, width))))
hw = [k for k in rows[0] if k.endswith("_per_buffer") and k not in
      ("us_per_buffer", "packets_per_buffer", "user_instructions_per_buffer", "user_d1_misses_per_buffer")] if rows else []
if not hw:
    print("hardware counters: not available on this machine; instruction and miss counts are cachegrind's (user space)")
