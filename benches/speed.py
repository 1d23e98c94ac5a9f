#!/usr/bin/env python3
"""Every speed figure of the docs in one run, on one machine in one sitting,
as Markdown: critpath beside the tools it is compared with.

    python3 benches/speed.py [--quick] [--dir DIR] [--python PY] [--critpath BIN]

- the bench trace and the dependence-heavy shape (`critpath bench`);
- what the verdict costs: plain `analyze` (its verdict's what-if walks the
  engine's kept graph) against `analyze --json` (no verdict), interleaved
  runs on the dependence-heavy trace and on the replayed recording;
- a real recording (`critpath record --syscalls` of a ping-pong) replayed
  from .cpt (`critpath bench --perf-data`; needs perf and root);
- a perf.data recording of two threads ping-ponging through pipes, made
  with `critpath record --syscalls`, against `perf script` on the same file
  (`benches/perf-vs-script.sh`; needs perf and root);
- a real PyTorch profiler trace made with torch on the CPU
  (`benches/torch_trace.py`) against HolisticTraceAnalysis's critical path
  (`benches/vs_hta.py`; needs PY with torch and holistictraceanalysis:
  `pip install torch holistictraceanalysis "pandas<2.3"`);
- one OTLP file of 100,000 requests analyzed per request
  (`examples/spans/gen_checkout.py`);
- `critpath.analyze_many` on 200 files of 500 requests: serial, threads,
  a Dask LocalCluster of two workers, a process pool's start
  (`benches/python/many.py`; needs the package's venv, `target/venv`, made
  by `scripts/python-env.sh`).

BIN is the build measured (default: this tree's release build, built
first; `scripts/pgo.sh` makes target/pgo/critpath, the build guided by a
profile). A part whose tools are missing says so and is skipped. --quick makes
everything smaller (a smoke run: the figures are not the docs'). The
traces go to DIR (default: a temporary directory, removed after).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def timed(cmd, runs):
    """Median wall time (s) and the largest peak RSS (MiB) of `runs` runs."""
    walls, rss = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        walls.append(time.perf_counter() - t0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"failed: {' '.join(map(str, cmd))}")
        rss = max(rss, ru.ru_maxrss / 1024)
    return statistics.median(walls), min(walls), max(walls), rss


def bench(cp, work, quick):
    records = "1M" if quick else "20M"
    gen = work / "gen"
    out = sh([cp, "bench", "--records", records, "--formats", "cpt,cpt-deps", "--runs", "3", "--json",
              "--dir", str(gen), "--keep"])
    rows = []
    for r in json.loads(out):
        what = {"cpt": "the bench trace (.cpt)", "cpt-deps": "dependence-heavy shape (.cpt)"}[r["format"]]
        rows.append((f"{what}, {r['records'] / 1e6:.0f}M records", "",
                     f"{r['records_per_s'] / 1e6:.1f} M records/s, {r['peak_rss_kib'] / 1024:.0f} MiB", ""))
    for deps in gen.glob("*-deps.cpt"):
        rows.append(verdict_cost(cp, deps, "the dependence-heavy shape", 3 if quick else 7))
    shutil.rmtree(gen)
    return rows


def verdict_cost(cp, trace, what, pairs):
    """Plain `analyze` against `analyze --json` on `trace`, in `pairs`
    interleaved pairs of runs (the host's drift falls on both alike)."""
    plain, js = [], []
    for _ in range(pairs):
        for args, into in (([], plain), (["--json"], js)):
            t0 = time.perf_counter()
            subprocess.run([cp, "analyze", *args, str(trace)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            into.append(time.perf_counter() - t0)
    p, j = statistics.median(plain), statistics.median(js)
    return (f"the verdict's cost, {what}: plain `analyze` against `analyze --json`", f"`--json` {j:.2f} s",
            f"{p:.2f} s", f"{p / j:.2f}× `--json`'s time")


def perf_part(cp, quick):
    if shutil.which("perf") is None or os.geteuid() != 0:
        return [("perf.data", "skipped: needs perf and root", "", "")]
    rounds = "20000" if quick else "400000"
    out = sh([str(ROOT / "benches/perf-vs-script.sh"), rounds], env={**os.environ, "CRITPATH": cp})
    head = out.splitlines()[0]
    s = re.search(r"perf script:\s+([\d.]+) s.*peak RSS\s+(\d+) MiB", out)
    c = re.search(r"critpath analyze:\s+([\d.]+) s.*peak RSS\s+(\d+) MiB", out)
    ratio = re.search(r"ratio:\s+([\d.]+)x", out)
    size = re.search(r"(\d+) MB", head).group(1)
    return [(f"perf.data, {size} MB (`--syscalls`)", f"`perf script` {s[1]} s, {s[2]} MiB",
             f"{c[1]} s, {c[2]} MiB", f"{ratio[1]}×")]


def replay_part(cp, work, quick):
    """A real recording replayed from .cpt (`critpath bench --perf-data`)."""
    if shutil.which("perf") is None or os.geteuid() != 0:
        return [("a recording replayed from .cpt", "skipped: needs perf and root", "", "")]
    rounds = "20000" if quick else "700000"
    pp, data = work / "pingpong", work / "replay.data"
    sh(["cc", "-O2", "-pthread", "-o", str(pp), str(ROOT / "examples/os/pingpong.c")])
    sh([cp, "record", "--syscalls", "--mmap-pages", "16384", "-o", str(data), "--", str(pp), rounds])
    out = json.loads(sh([cp, "bench", "--formats", "none", "--perf-data", str(data),
                         "--runs", "3", "--dir", str(work), "--json"]))
    cost = verdict_cost(cp, data, f"perf.data, {data.stat().st_size / 1e6:.0f} MB", 3 if quick else 7)
    data.unlink()
    r = next(r for r in out if r["format"] == "replay.cpt")
    return [(f"a `--syscalls` recording replayed from .cpt, {r['records'] / 1e6:.1f}M records", "",
             f"{r['records_per_s'] / 1e6:.1f} M records/s, {r['peak_rss_kib'] / 1024:.0f} MiB", ""),
            cost]


def hta_part(py, work, quick):
    try:
        sh([py, "-c", "import torch, hta"])
    except (subprocess.CalledProcessError, FileNotFoundError):
        return [("PyTorch trace", f"skipped: {py} has no torch or hta", "", "")]
    trace = work / "torch.json"
    steps = ["--steps", "4"] if quick else []
    sh([py, str(ROOT / "benches/torch_trace.py"), str(trace), *steps])
    out = json.loads(sh([py, str(ROOT / "benches/vs_hta.py"), str(trace), "--json",
                         "--runs", "3" if quick else "5", "--hta-runs", "1" if quick else "3"]))
    mb = trace.stat().st_size / 1e6
    secs = {r["case"]: r["critpath"]["s"] for r in out["rows"]}
    rows = []
    for r in out["rows"]:
        c = r["critpath"]
        h = r.get("hta")
        # A gzipped case beside the plain file's time.
        plain = secs.get(r["case"].replace(".gz, ", ""))
        lead = f"{h['s'] / c['s']:.0f}×" if h else ""
        if plain and ".gz" in r["case"]:
            lead = f"{c['s'] / plain:.2f}× the plain file's time"
        rows.append((f"PyTorch trace ({out['events']} events, {mb:.0f} MB): {r['case']}",
                     f"HTA {h['s']:.2f} s, {h['rss_mib']:.0f} MiB" if h else "",
                     f"{c['s']:.3f} s, {c['rss_mib']:.0f} MiB", lead))
    return rows


def otlp_part(cp, work, quick):
    n = 5000 if quick else 100000
    sh([sys.executable, str(ROOT / "examples/spans/gen_checkout.py"), "-o", str(work / "otlp"),
        "--files", "1", "--requests", str(n)])
    f = next((work / "otlp").glob("checkout-*.json"))
    s, lo, hi, rss = timed([cp, "analyze", "--json", str(f)], 3)
    return [(f"OTLP, {n} requests in one file, per request", "",
             f"{s:.2f} s, {rss:.0f} MiB", f"{n / s:,.0f} requests/s")]


def many_part(venv_python, quick):
    if not Path(venv_python).exists():
        print(f"skipped analyze_many: no {venv_python} (scripts/python-env.sh makes it)",
              file=sys.stderr)
        return []
    files, per_file = (20, 50) if quick else (200, 500)
    out = json.loads(sh([venv_python, str(ROOT / "benches/python/many.py"), "--json",
                         "--files", str(files), "--per-file", str(per_file)]))
    m = out["median_s"]
    serial = m["serial"]
    what = f"analyze_many, {files} files of {per_file} requests"
    rows = [(f"{what}, {k}", f"serial {serial:.2f} s", f"{m[k]:.2f} s",
             f"{serial / m[k]:.1f}× serial")
            for k in ("threads (default)", "dask LocalCluster (2 workers)")]
    rows.append(("a process pool started, used on 2 files, stopped", "",
                 f"{m['process pool start, 2 files']:.2f} s", ""))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--python", default=os.environ.get("PYTHON", sys.executable))
    ap.add_argument("--venv-python", default=str(ROOT / "target/venv/bin/python"))
    ap.add_argument("--critpath", help="the build to measure (default: the tree's release build)")
    a = ap.parse_args()
    if a.critpath:
        cp = str(Path(a.critpath).resolve())
    else:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "critpath"], cwd=ROOT, check=True)
        cp = str(ROOT / "target/release/critpath")
    work = a.dir or Path(tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    try:
        rows = bench(cp, work, a.quick) + replay_part(cp, work, a.quick) + perf_part(cp, a.quick)
        rows += hta_part(a.python, work, a.quick)
        rows += otlp_part(cp, work, a.quick) + many_part(a.venv_python, a.quick)
    finally:
        if a.dir is None:
            shutil.rmtree(work)
    print(f"{os.uname().nodename}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}\n")
    print("| input | the other tool | critpath | critpath's lead |")
    print("|---|---:|---:|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
