#!/usr/bin/env python3
"""How good are what-ifs on real recordings? Records examples/os/pipeline.c
(stage2 "crunch" 300 us per item) N times and predicts each run with stage2
twice as fast (`--speedup stage2:TID:running=2`), then records the really
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


def stage2(a):
    for s in a["states"]:
        if s["sm"].startswith("stage2:") and s["state"] == "running":
            return s["sm"]
    raise SystemExit("no stage2 running state in the recording")


def ms(ns):
    return f"{ns / 1e6:8.2f} ms"


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "critpath"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "pipeline")
        sh("cc", "-O2", "-pthread", "-o", binary, os.path.join(ROOT, "examples/os/pipeline.c"))
        preds, reals, bases = [], [], []
        print(f"== baseline (crunch 300 us) x {n}: prediction with stage2 running 2x faster")
        for i in range(n):
            data = record(tmp, f"base{i}", [binary])
            sm = stage2(analyze(data))
            w = json.loads(sh(CRITPATH, "whatif", data, "--speedup", f"{sm}:running=2", "--json"))
            lo, hi = w["predicted_range_ns"]
            bases.append(w["baseline_length_ns"])
            preds.append((w["predicted_length_ns"], lo, hi))
            print(f"  run {i + 1}: baseline {ms(w['baseline_length_ns'])}  predicted {ms(w['predicted_length_ns'])}"
                  f"  band {ms(lo)} .. {ms(hi)}  (machine share {w['machine_share'] * 100:.1f}%)")
        print(f"== really changed (crunch 150 us) x {n}")
        for i in range(n):
            data = record(tmp, f"half{i}", [binary, "150"])
            real = analyze(data)["critical_path"]["length_ns"]
            reals.append(real)
            print(f"  run {i + 1}: real {ms(real)}")
        mp = statistics.median(p for p, _, _ in preds)
        mr = statistics.median(reals)
        inside = sum(1 for r in reals if any(lo <= r <= hi for _, lo, hi in preds))
        print(f"== median baseline {ms(statistics.median(bases))}, median prediction {ms(mp)}, median real {ms(mr)}")
        print(f"   error between medians {100 * (mp - mr) / mr:+.1f}%; real runs inside some band: {inside}/{n}")


if __name__ == "__main__":
    main()
