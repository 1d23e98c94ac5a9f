#!/usr/bin/env python3
"""Do what-ifs predict real reruns, and how do they compare with Coz? Three C
programs, each with a base variant and a really changed one in which some
code is twice as fast:

  pipeline    examples/os/pipeline.c: stage2 300 us per item; `150` halves it.
              critpath: --speedup stage2:running=2
  fork-join   examples/os/forkjoin.c: 30 rounds of a 6 ms "slow" worker and
              three 2 ms "worker"s; `3000` halves the slow one.
              critpath: --speedup 'slow:*:running=2' (a new slow thread each round)
  contention  examples/os/contention.c: "chain" does 40 items of 4 ms CPU time
              beside two spinning "hog"s; `hogs 2000` halves chain's items.
              critpath: --speedup chain:running=2

Ground truth is the really changed variant. For each program it builds the
program (cc -O2 -pthread), times N unrecorded runs of the base and of the
changed variant (wall time, interleaved), records N base runs with `critpath
record` and predicts each (`critpath whatif --json`: predicted_length_ns and
its band predicted_range_ns), and records N changed runs (their critical-path
length). The error is computed between the median prediction and the median
*recorded critical-path length* of the changed runs (like for like: the
predictions are path lengths); the band test asks whether that median lies
inside the band of the run whose prediction is the median. A second error
compares with the unrecorded runs: the predicted speedup (median predicted /
median base path) applied to the median unrecorded base wall time, against
the median unrecorded changed wall time (recording slows a run, as perf
shares the CPUs with it; the ratio does not carry that). Speedups are
also shown as "% shorter" ((base - changed) / base, Coz's definition of
program speedup): critpath's from the median base and predicted paths, the
real one from the median wall times (and from the median recorded paths).

Coz (Debian package coz-profiler), when `coz` is installed: the program is
rebuilt with -g -gdwarf-4 -gno-variable-location-views (coz 0.2.2's DWARF
reader rejects DWARF 5 and GCC's location views) and -fno-ipa-icf (keeps
identical functions apart, see pipeline below) and run N times with
`coz run --end-to-end --fixed-line FILE:LINE --fixed-speedup S -o OUT --- PROG`
for S = 0 and S = 50 (a 50% virtual speedup of a line = that code 2x
faster), FILE:LINE the hot loop (`sink += i`) of the code the real change
halves. Each run writes one `experiment ... speedup=S duration=D` line (D:
the run's time minus the delays Coz inserted); Coz's predicted speedup is
(median D at 0 - median D at 50) / median D at 0. Coz selects lines, not
threads: pipeline.c's hot loop is in work(), which all three stages share,
so for pipeline it is measured twice, on work()'s loop (every stage's work
2x faster) and on a temporary copy of pipeline.c in which stage2 calls its
own copy of work() (stage2 alone, like the real change). Coz's samples
exclude kernel time (the clock_gettime system calls in the loops are not
sped up), and coz 0.2.2 ends an end-to-end experiment on its 10 ms polling
tick, so D moves in ~10 ms steps. Without coz the Coz column is skipped.

Needs root and perf (it runs `critpath record`), and a quiet machine: other
work competing for the CPUs changes both the predictions and the reruns.
So every run is checked: a plain or Coz run during which other processes
took more than 3% of its wall time in CPU (summed from
/proc/*/task/*/schedstat), or a recording in which threads of other
programs ran for more than 3% of its path, is thrown away and run again
once the machine is quiet; how many were redone is printed. It does not build
critpath: set CRITPATH to the binary (default target/release/critpath).

Usage: benches/whatif_vs_reruns.py [N] [--only NAME] [--keep DIR] [--keep-busy]
       (N default 7, at least 5; NAME pipeline, fork-join or contention;
       --keep keeps the recordings and Coz profiles in DIR; --keep-busy
       keeps disturbed runs instead of redoing them; run from anywhere)
"""
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRITPATH = os.environ.get("CRITPATH", os.path.join(ROOT, "target", "release", "critpath"))
OS = os.path.join(ROOT, "examples", "os")

PROGRAMS = [
    # name (of the binary too), source, base args, changed args, --speedup,
    # function with the hot loop, the program's thread names
    ("pipeline", "pipeline.c", [], ["150"], "stage2:running=2", "static void work(",
     {"stage1", "stage2", "stage3"}),
    ("fork-join", "forkjoin.c", [], ["3000"], "slow:*:running=2", "static void *slow(",
     {"slow", "worker"}),
    ("contention", "contention.c", ["hogs"], ["hogs", "2000"], "chain:running=2", "static void *chain(",
     {"chain", "hog"}),
]


def sh(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def ms(ns):
    return f"{ns / 1e6:.2f} ms"


def pct(x):
    return f"{100 * x:+.1f}%"


def shorter(base, changed):
    """Coz's program speedup: the fraction of the time saved."""
    return (base - changed) / base


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]  # total, idle + iowait


def busy(seconds=1.0):
    """The fraction of all CPUs busy over SECONDS while this script sleeps."""
    t0, i0 = cpu_times()
    time.sleep(seconds)
    t1, i1 = cpu_times()
    return 1 - (i1 - i0) / max(t1 - t0, 1)


def quiet(wait):
    """How busy the machine is; with WAIT first wait (up to 30 minutes)
    until it is under 10% busy for 3 s in a row."""
    b = busy()
    if wait and b >= 0.10:
        print(f"    (machine {100 * b:.0f}% busy: waiting for it to be quiet)", flush=True)
        deadline = time.time() + 1800
        while time.time() < deadline:
            b = busy(3.0)
            if b < 0.10:
                break
    warn = "  (WARNING: other work is running)" if b >= 0.10 else ""
    return f"machine {100 * b:.0f}% busy, load average {loadavg():.2f}{warn}"


# Other processes' CPU time during a run: a run during which they took more
# than FOREIGN_LIMIT of its duration (at least FOREIGN_MIN_NS) is thrown
# away and run again once the machine is quiet (unless --keep-busy).
FOREIGN_LIMIT = 0.03
FOREIGN_MIN_NS = 2_000_000
KEEP_BUSY = False
REDONE = {}


def task_cpu():
    """Every other task's CPU time so far (ns), by /proc path."""
    me = f"/proc/{os.getpid()}/"
    cpu = {}
    for p in glob.glob("/proc/[0-9]*/task/[0-9]*/schedstat"):
        if p.startswith(me):
            continue
        try:
            with open(p) as f:
                cpu[p] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return cpu


def guarded(kind, fn, foreign=None):
    """FN() run on a quiet machine: (its result, other processes' CPU ns).
    FOREIGN(result) -> (foreign ns, span ns) measures the disturbance from
    the result itself (a recording); by default it is the CPU time other
    tasks took between start and end, over the wall time."""
    for attempt in range(10):
        before = task_cpu()
        t = time.perf_counter()
        res = fn()
        took = (time.perf_counter() - t) * 1e9
        after = task_cpu()
        if foreign:
            other, span = foreign(res)
        else:
            other, span = sum(v - before.get(k, 0) for k, v in after.items()), took
        if KEEP_BUSY or other <= max(FOREIGN_MIN_NS, FOREIGN_LIMIT * span):
            return res, other
        REDONE[kind] = REDONE.get(kind, 0) + 1
        quiet(True)
    print(f"    WARNING: a {kind} run kept being disturbed ({ms(other)} of other CPU); kept it")
    return res, other


def wall(cmd):
    def run():
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return (time.perf_counter() - t) * 1e9
    return guarded("wall", run)[0]


RECORDER = {"perf", "critpath"}
PSEUDO = ("timer:", "softirq:", "irq:", "hardirq:", "ipi:")


def recorded(kind, out, cmd, own, query):
    """Records CMD into OUT and runs QUERY (whatif or analyze args) on it,
    again while other threads than OWN's ran more than the limit allows."""
    def run():
        sh(CRITPATH, "record", "-o", out, "--", *cmd)
        return json.loads(sh(CRITPATH, *query(out), "--json", "--top", "100000"))

    def foreign(res):
        states = res.get("baseline_states", res["states"])
        span = res.get("baseline_length_ns") or res["critical_path"]["length_ns"]
        other = sum(st["total_ns"] for st in states if st["state"] == "running"
                    and not st["sm"].startswith(PSEUDO)
                    and re.sub(r":\d+$", "", st["sm"]) not in own | RECORDER)
        return other, span
    return guarded(kind, run, foreign)


def by_name(states):
    """Critical time (ns) per (thread name without tid, state)."""
    acc = {}
    for s in states:
        name = re.sub(r":\d+$", ":*", s["sm"])
        acc[(name, s["state"])] = acc.get((name, s["state"]), 0) + s["critical_ns"]
    return acc


def hot_line(path, func):
    """The line number of the first `sink += i` after FUNC in PATH."""
    with open(path) as f:
        lines = f.read().split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith(func))
    return next(i for i in range(start, len(lines)) if "sink += i" in lines[i]) + 1


def stage2_copy(src, dst):
    """pipeline.c with stage2 calling its own copy of work(), for Coz."""
    with open(src) as f:
        text = f.read()
    m = re.search(r"static void work\(long us\) \{\n.*?\n\}\n", text, re.S)
    if not m or text.count("work(crunch_us);") != 1:
        return None
    copy = m.group(0).replace("static void work(", "static void work_stage2(")
    text = text[: m.end()] + copy + text[m.end():]
    text = text.replace("work(crunch_us);", "work_stage2(crunch_us);")
    with open(dst, "w") as f:
        f.write(text)
    return dst


# ---------------------------------------------------------------- Coz

def coz_build(src, out):
    for flags in (["-gdwarf-4", "-gno-variable-location-views"], ["-gdwarf-4"]):
        r = subprocess.run(["cc", "-O2", "-fno-ipa-icf", "-g", *flags, "-pthread", "-o", out, src],
                           capture_output=True, text=True)
        if r.returncode == 0:
            return out
    raise SystemExit(f"cc failed on {src}:\n{r.stderr}")


def coz_run(tmp, tag, binary, args, fixed_line, speedup):
    """One end-to-end Coz run: (duration ns, selected samples, wall ns, command)."""
    out = os.path.join(tmp, f"{tag}.coz")
    if os.path.exists(out):
        os.remove(out)
    cmd = ["coz", "run", "--end-to-end", "--fixed-line", fixed_line,
           "--fixed-speedup", str(speedup), "-o", out, "---", binary, *args]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    took = (time.perf_counter() - t) * 1e9
    exp = None
    if os.path.exists(out):
        with open(out) as f:
            for l in f:
                fields = l.rstrip("\n").split("\t")
                kv = dict(x.split("=", 1) for x in fields[1:] if "=" in x)
                if fields[0] == "experiment":
                    exp = kv
    if r.returncode != 0 or exp is None:
        tail = "\n".join(l for l in (r.stdout + r.stderr).splitlines() if "not in scope" not in l)
        return None, f"`{' '.join(cmd)}` exited {r.returncode}, no experiment in {out}:\n{tail[-1500:]}"
    return (int(exp["duration"]), int(exp["selected-samples"]), took, exp["selected"]), " ".join(cmd)


def coz_measure(n, tmp, tag, binary, args, fixed_line):
    """N runs at 0% and at 50% (interleaved): Coz's predicted fraction saved."""
    d = {0: [], 50: []}
    samples, cmds, selected = [], {}, None
    for i in range(n):
        for s in (0, 50):
            (res, cmd), _ = guarded("coz", lambda: coz_run(tmp, f"{tag}-s{s}-{i}", binary, args,
                                                            fixed_line, s))
            if res is None:
                return None, cmd
            d[s].append(res[0])
            cmds[s] = cmd
            selected = res[3]
            if s == 50:
                samples.append(res[1])
    m0, m50 = statistics.median(d[0]), statistics.median(d[50])
    print(f"    coz {fixed_line} ({selected}): duration at 0%: median {ms(m0)}"
          f" [{', '.join(f'{x / 1e6:.1f}' for x in d[0])}]")
    print(f"    coz {fixed_line}: duration at 50%: median {ms(m50)}"
          f" [{', '.join(f'{x / 1e6:.1f}' for x in d[50])}];"
          f" selected-samples per run {samples}")
    print(f"    coz predicts {pct(shorter(m0, m50))} shorter (x{m0 / m50:.2f});"
          f" command: {cmds[50]}")
    return shorter(m0, m50), None


# ---------------------------------------------------------------- main

def program(n, tmp, name, src_name, base_args, changed_args, speedup, func, threads, coz):
    src = os.path.join(OS, src_name)
    binary = os.path.join(tmp, name)
    sh("cc", "-O2", "-pthread", "-o", binary, src)
    base_cmd, changed_cmd = [binary, *base_args], [binary, *changed_args]
    print(f"\n== {name}: {src_name} {' '.join(base_args)} vs {' '.join(changed_args)};"
          f" --speedup {speedup}; N={n}; {quiet(not KEEP_BUSY)}", flush=True)
    REDONE.clear()
    own = threads | {name}

    # Unrecorded wall times, interleaved so that drift hits both alike.
    wb, wc = [], []
    for _ in range(n):
        wb.append(wall(base_cmd))
        wc.append(wall(changed_cmd))
    print(f"  wall base    [{', '.join(f'{x / 1e6:.1f}' for x in wb)}] ms")
    print(f"  wall changed [{', '.join(f'{x / 1e6:.1f}' for x in wc)}] ms")

    # Recorded base runs and their predictions; recorded changed runs.
    preds, bases, runs = [], [], []
    for i in range(n):
        w, other = recorded("recorded", os.path.join(tmp, f"{name}-base{i}.data"), base_cmd, own,
                            lambda d: ["whatif", d, "--speedup", speedup])
        lo, hi = w["predicted_range_ns"]
        preds.append((w["predicted_length_ns"], lo, hi))
        bases.append(w["baseline_length_ns"])
        runs.append(w)
        print(f"  base run {i + 1}: path {ms(w['baseline_length_ns'])}, predicted"
              f" {ms(w['predicted_length_ns'])} band {ms(lo)} .. {ms(hi)}"
              f" (machine share {100 * w['machine_share']:.1f}%; other processes ran {ms(other)})",
              flush=True)
    reals, changed = [], []
    for i in range(n):
        a, other = recorded("recorded", os.path.join(tmp, f"{name}-changed{i}.data"), changed_cmd, own,
                            lambda d: ["analyze", d])
        reals.append(a["critical_path"]["length_ns"])
        changed.append(a)
    print(f"  changed paths [{', '.join(f'{x / 1e6:.1f}' for x in reals)}] ms")

    mwb, mwc = statistics.median(wb), statistics.median(wc)
    mb, mr = statistics.median(bases), statistics.median(reals)
    mp = statistics.median(p for p, _, _ in preds)
    k = sorted(range(n), key=lambda j: preds[j][0])[n // 2]
    _, mlo, mhi = preds[k]
    err = (mp - mr) / mr
    # The predicted speedup applied to the unrecorded base runs, against the
    # unrecorded changed runs: recording slows a run (perf shares the CPUs),
    # the ratio does not carry that.
    pw = mwb * mp / mb
    err_wall = (pw - mwc) / mwc
    in_band = mlo <= mr <= mhi
    inside = sum(1 for r in reals if mlo <= r <= mhi)

    # Where the time goes on the path: the median-prediction run before and
    # after the what-if, and the changed recording with the median path.
    j = sorted(range(n), key=lambda j: reals[j])[n // 2]
    b, p, c = by_name(runs[k]["baseline_states"]), by_name(runs[k]["states"]), by_name(changed[j]["states"])
    keys = sorted(set(b) | set(p) | set(c), key=lambda x: -max(b.get(x, 0), c.get(x, 0)))[:8]
    print(f"  critical time by thread name (base run {k + 1}, its prediction, changed run {j + 1}):")
    print(f"    {'thread:state':34} {'base':>10} {'predicted':>10} {'changed':>10}")
    for key in keys:
        print(f"    {key[0] + ' ' + key[1]:34} {b.get(key, 0) / 1e6:10.2f} {p.get(key, 0) / 1e6:10.2f}"
              f" {c.get(key, 0) / 1e6:10.2f}")

    row = {
        "name": name, "wall_base": mwb, "wall_changed": mwc, "path_base": mb, "path_changed": mr,
        "pred": mp, "lo": mlo, "hi": mhi, "err": err, "err_wall": err_wall, "in_band": in_band, "inside": inside, "n": n,
        "real_short_wall": shorter(mwb, mwc), "real_short_path": shorter(mb, mr),
        "pred_short": shorter(mb, mp), "coz": {},
    }

    if coz:
        if name == "pipeline":
            targets = [("work(), all stages", src, func)]
            copy = stage2_copy(src, os.path.join(tmp, "pipeline_stage2.c"))
            if copy:
                targets.append(("stage2 only", copy, "static void work_stage2("))
            else:
                print("  coz: could not make the stage2-only copy of pipeline.c; skipped")
        else:
            targets = [(speedup.split(":")[0] + " only", src, func)]
        for label, csrc, cfunc in targets:
            cbin = coz_build(csrc, os.path.join(tmp, os.path.basename(csrc)[:-2] + "-g"))
            fixed = f"{csrc}:{hot_line(csrc, cfunc)}"
            res, why = coz_measure(n, tmp, f"{name}-{len(row['coz'])}", cbin, base_args, fixed)
            if res is None:
                print(f"  coz failed ({label}): {why}")
            row["coz"][label] = res

    redone = ", ".join(f"{v} {k}" for k, v in REDONE.items()) or "none"
    print(f"  -- {name} -- (runs redone because other processes used the CPUs: {redone})")
    print(f"    base     median wall {ms(mwb):>11}   median path {ms(mb):>11}")
    print(f"    changed  median wall {ms(mwc):>11}   median path {ms(mr):>11}   (real, really changed)")
    print(f"    critpath median predicted path {ms(mp)}, band {ms(mlo)} .. {ms(mhi)}")
    print(f"    predicted wall (base wall x predicted / base path) {ms(pw)}:"
          f" error vs the unrecorded changed runs' median wall: {pct(err_wall)}")
    print(f"    error vs the changed runs' median path: {pct(err)};"
          f" median inside the band: {'yes' if in_band else 'NO'}"
          f" ({inside}/{n} changed paths inside)")
    print(f"    speedup (% shorter; x = base / changed): critpath {pct(row['pred_short'])}"
          f" (x{mb / mp:.2f}), real wall {pct(row['real_short_wall'])} (x{mwb / mwc:.2f}),"
          f" real path {pct(row['real_short_path'])} (x{mb / mr:.2f})")
    for label, res in row["coz"].items():
        print(f"    coz ({label}): " + (f"{pct(res)} (x{1 / (1 - res):.2f})" if res is not None else "failed"))
    return row


def coz_available(tmp):
    if shutil.which("coz") is None:
        print("coz: not installed (apt-get install coz-profiler); the Coz column is skipped")
        return False
    src = os.path.join(OS, "pipeline.c")
    binary = coz_build(src, os.path.join(tmp, "probe-g"))
    res, why = coz_run(tmp, "probe", binary, [], f"{src}:{hot_line(src, 'static void work(')}", 0)
    if res is None:
        print(f"coz: cannot run here, the Coz column is skipped: {why}")
        return False
    print(f"coz: {shutil.which('coz')} works ({why})")
    return True


def main():
    args = sys.argv[1:]
    global KEEP_BUSY
    n, only, keep = 7, None, None
    while args:
        a = args.pop(0)
        if a == "--only":
            only = args.pop(0)
        elif a == "--keep":
            keep = args.pop(0)
        elif a == "--keep-busy":
            KEEP_BUSY = True
        else:
            n = int(a)
    if n < 5:
        raise SystemExit("N must be at least 5")
    if not os.access(CRITPATH, os.X_OK):
        raise SystemExit(f"no critpath at {CRITPATH}: build it (cargo build --release -p critpath)"
                         " or set CRITPATH")
    if os.geteuid() != 0:
        print("warning: not root; `critpath record` needs root (or perf permissions)")
    started = time.perf_counter()
    print(f"critpath: {CRITPATH}; {os.cpu_count()} CPUs; {quiet(False)}", flush=True)
    tmp = keep or tempfile.mkdtemp(prefix="whatif_vs_reruns.")
    os.makedirs(tmp, exist_ok=True)
    try:
        coz = coz_available(tmp)
        rows = [program(n, tmp, *p, coz) for p in PROGRAMS if only in (None, p[0])]
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)

    print(f"\n== summary (N={n}; paths and walls are medians; error and band vs the changed"
          " runs' median recorded path; err wall: the predicted speedup on the base runs' median"
          " wall vs the changed runs' median wall, all unrecorded; speedups as % shorter)")
    head = (f"{'program':11} {'base wall':>10} {'base path':>10} {'chg wall':>10} {'chg path':>10}"
            f" {'predicted':>10} {'band':>17} {'error':>7} {'in':>4} {'err wall':>8}"
            f" {'real wall':>9} {'real path':>9} {'critpath':>9}  coz")
    print(head)
    for r in rows:
        cz = ", ".join(f"{pct(v)} ({k})" if v is not None else f"failed ({k})" for k, v in r["coz"].items())
        print(f"{r['name']:11} {r['wall_base'] / 1e6:10.1f} {r['path_base'] / 1e6:10.1f}"
              f" {r['wall_changed'] / 1e6:10.1f} {r['path_changed'] / 1e6:10.1f} {r['pred'] / 1e6:10.1f}"
              f" {r['lo'] / 1e6:8.1f}..{r['hi'] / 1e6:<7.1f} {pct(r['err']):>7}"
              f" {'yes' if r['in_band'] else 'NO':>4} {pct(r['err_wall']):>8} {pct(r['real_short_wall']):>9}"
              f" {pct(r['real_short_path']):>9} {pct(r['pred_short']):>9}  {cz or '-'}")
    print(f"(times in ms; took {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
