#!/usr/bin/env python3
"""How good are what-ifs on real recordings? Records examples/os/pipeline.c
(stage2 "crunch" 300 us per item) N times and predicts each run two ways:
with stage2's whole running time twice as fast
(`--speedup stage2:TID:running=2`), and with the crunch work that the real
change removes (200 items x 150 us) taken out of stage2's running time (the
factor T / (T - 30 ms), T its running time in that recording: its queue
operations and system calls stay as they were). Then it records the really
changed variant (crunch 150 us) N times. Prints each prediction with its
band (`predicted_range_ns`), each real path length, and the error between
the medians. Needs root and perf (it runs `critpath record`).

Usage: benches/whatif_accuracy.py [N]   (default 3; run from anywhere)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRITPATH = os.path.join(ROOT, "target", "release", "critpath")


def sh(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def record(tmp, name, cmd):
    out = os.path.join(tmp, name + ".data")
    sh(CRITPATH, "record", "-o", out, "--", *cmd)
    return out


def analyze(data):
    return json.loads(sh(CRITPATH, "analyze", data, "--json", "--top", "1000"))


# What the really changed variant takes out of stage2: 200 items x 150 us.
REMOVED_NS = 200 * 150_000


def stage2(a):
    """stage2's SM name and its running time (ns) in the recording."""
    for s in a["states"]:
        if s["sm"].startswith("stage2:") and s["state"] == "running":
            return s["sm"], s["total_ns"]
    raise SystemExit("no stage2 running state in the recording")


def whatif(data, sm, factor):
    w = json.loads(sh(CRITPATH, "whatif", data, "--speedup", f"{sm}:running={factor}", "--json"))
    lo, hi = w["predicted_range_ns"]
    return w, (w["predicted_length_ns"], lo, hi)


def line(label, pred, share):
    p, lo, hi = pred
    return f"{label} {ms(p)}  band {ms(lo)} .. {ms(hi)}  (machine share {share * 100:.1f}%)"


def summary(label, preds, reals):
    mp = statistics.median(p for p, _, _ in preds)
    mr = statistics.median(reals)
    inside = sum(1 for r in reals if any(lo <= r <= hi for _, lo, hi in preds))
    # The band of the run whose prediction is the median.
    _, mlo, mhi = sorted(preds)[len(preds) // 2]
    in_median = sum(1 for r in reals if mlo <= r <= mhi)
    print(f"   {label}: median prediction {ms(mp)}, error between medians {100 * (mp - mr) / mr:+.1f}%;"
          f" real runs inside some band: {inside}/{len(reals)},"
          f" inside the median prediction's band ({ms(mlo)} .. {ms(mhi)}): {in_median}/{len(reals)}")


def ms(ns):
    return f"{ns / 1e6:8.2f} ms"


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "critpath"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "pipeline")
        sh("cc", "-O2", "-pthread", "-o", binary, os.path.join(ROOT, "examples/os/pipeline.c"))
        halved, matched, reals, bases = [], [], [], []
        print(f"== baseline (crunch 300 us) x {n}: predictions with stage2 running 2x faster,"
              " and with the 30 ms of crunch removed")
        for i in range(n):
            data = record(tmp, f"base{i}", [binary])
            sm, ran = stage2(analyze(data))
            w, pred = whatif(data, sm, 2)
            bases.append(w["baseline_length_ns"])
            halved.append(pred)
            m, mpred = whatif(data, sm, f"{ran / max(ran - REMOVED_NS, 1):.6f}")
            matched.append(mpred)
            print(f"  run {i + 1}: baseline {ms(w['baseline_length_ns'])}")
            print("    " + line("running 2x:    ", pred, w["machine_share"]))
            print("    " + line("crunch removed:", mpred, m["machine_share"]))
        print(f"== really changed (crunch 150 us) x {n}")
        for i in range(n):
            data = record(tmp, f"half{i}", [binary, "150"])
            real = analyze(data)["critical_path"]["length_ns"]
            reals.append(real)
            print(f"  run {i + 1}: real {ms(real)}")
        print(f"== median baseline {ms(statistics.median(bases))}, median real {ms(statistics.median(reals))}")
        summary("running 2x    ", halved, reals)
        summary("crunch removed", matched, reals)

if __name__ == "__main__":
    main()
