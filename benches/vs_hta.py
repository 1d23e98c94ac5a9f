#!/usr/bin/env python3
"""critpath against HolisticTraceAnalysis (HTA) on one PyTorch profiler
trace: the critical path of the whole trace and of one step
(`ProfilerStep`, instance 0), each tool in a process of its own, wall time
and peak RSS; critpath also on the gzipped file and with its text output.

    python benches/vs_hta.py TRACE.json [--runs 3] [--hta-runs 1]
                             [--critpath BIN] [--no-hta] [--json]

TRACE.json is a Kineto trace (`benches/torch_trace.py` makes one); its
gzipped twin is written beside it when missing. HTA runs in this Python
(`pip install holistictraceanalysis "pandas<2.3"`); on a trace without GPU
kernels HTA 0.5.0 stops in its kernel pass (it reads the queue length of
streams that do not exist), so that pass is skipped when the trace has no
GPU work: the CPU graph and the path are HTA's own. Prints a Markdown
table: medians of the runs with their range.
"""

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HTA_CHILD = r"""
import sys
from hta.analyzers import critical_path_analysis as cpa

orig = cpa.CPGraph._construct_graph_from_kernels
def kernels(self):
    if cpa.TraceCounters._get_queue_length_time_series_for_rank(self.t_full, self.rank) is None:
        return  # no GPU stream in the trace: nothing for this pass to add
    orig(self)
cpa.CPGraph._construct_graph_from_kernels = kernels

from hta.trace_analysis import TraceAnalysis
d, annotation, instance = sys.argv[1], sys.argv[2], int(sys.argv[3])
a = TraceAnalysis(trace_dir=d)
g, ok = a.critical_path_analysis(rank=0, annotation=annotation, instance_id=instance)
df = g.get_critical_path_breakdown()
print(float(df.duration.sum()))
"""


def run(cmd):
    """Runs cmd; returns (wall s, peak RSS MiB, stdout)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(map(str, cmd))}")
        out.seek(0)
        return wall, ru.ru_maxrss / 1024, out.read()


def measure(cmd, runs):
    got = [run(cmd) for _ in range(runs)]
    walls = sorted(g[0] for g in got)
    return {
        "s": statistics.median(walls),
        "min": walls[0],
        "max": walls[-1],
        "rss_mib": max(g[1] for g in got),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hta-runs", type=int, default=1)
    ap.add_argument("--critpath", default=str(ROOT / "target/release/critpath"))
    ap.add_argument("--no-hta", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    gz = a.trace.with_name(a.trace.name + ".gz")
    if not gz.exists():
        with open(a.trace, "rb") as f, gzip.open(gz, "wb", compresslevel=6) as g:
            shutil.copyfileobj(f, g)
    step = ["--annotation", "ProfilerStep", "--instance", "0"]
    cp = [a.critpath, "analyze"]
    cases = [
        ("whole trace, --json", cp + ["--json", a.trace], ""),
        ("whole trace, text", cp + [a.trace], None),
        ("whole trace, .gz, --json", cp + ["--json", gz], None),
        ("one step, --json", cp + ["--json", *step, a.trace], "ProfilerStep"),
        ("one step, .gz, --json", cp + ["--json", *step, gz], None),
    ]
    hta_dir = Path(tempfile.mkdtemp())
    (hta_dir / "rank0.pt.trace.json").symlink_to(a.trace.resolve())
    rows = []
    try:
        for name, cmd, hta_annotation in cases:
            row = {"case": name, "critpath": measure(cmd, a.runs)}
            if hta_annotation is not None and not a.no_hta:
                hta = [sys.executable, "-c", HTA_CHILD, str(hta_dir), hta_annotation, "0"]
                row["hta"] = measure(hta, a.hta_runs)
            rows.append(row)
    finally:
        shutil.rmtree(hta_dir)
    events = len(json.load(open(a.trace))["traceEvents"])
    if a.json:
        print(json.dumps({"trace": str(a.trace), "events": events, "rows": rows}, indent=1))
        return
    mb = a.trace.stat().st_size / 1e6
    print(f"{a.trace.name}: {events} events, {mb:.0f} MB ({gz.stat().st_size / 1e6:.1f} MB gzipped)\n")
    print("| case | HTA | critpath | ratio |")
    print("|---|---:|---:|---:|")
    fmt = lambda m: f"{m['s']:.2f} s ({m['min']:.2f}–{m['max']:.2f}), {m['rss_mib']:.0f} MiB"  # noqa: E731
    for r in rows:
        h = r.get("hta")
        ratio = f"{h['s'] / r['critpath']['s']:.0f}×" if h else ""
        print(f"| {r['case']} | {fmt(h) if h else ''} | {fmt(r['critpath'])} | {ratio} |")


if __name__ == "__main__":
    main()
