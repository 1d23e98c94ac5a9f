#!/usr/bin/env python3
"""Writes a Chrome trace (Trace Event Format JSON) of any size in little
memory, with a stated ground truth, to measure and check critpath's Chrome
importer on traces larger than memory should need.

The trace: a relay of ITEMS work items over THREADS threads `relay:TID`.
Item i is an `X` slice `work` of DUR µs on thread i % THREADS, nested
inside it a `step` slice of DUR/2 µs; it starts GAP µs after item i-1 ended,
and a flow (`s` at the end of item i-1, `f` at the start of item i) links
them. NOISE other threads `noise:TID` run short `spin` slices that nobody
waits for. Events are written in blocks of BLOCK, each block in reverse
time order, and the `thread_name` metadata come last, so the importer must
sort everything and name threads after the fact.

Ground truth (checked by `--check TRACE` against `critpath analyze --json`):
- the critical path is ITEMS*DUR + (ITEMS-1)*GAP µs long;
- every `work` and `step` slice is on it: `work` holds ITEMS*DUR/2 µs and
  `step` ITEMS*DUR/2 µs of it, split evenly over the relay threads;
- no `noise` thread is on it.

Usage: gen_chrome.py OUT.json [--items N] [--threads T] [--noise K]
       [--dur-us D] [--gap-us G] [--block B]
       gen_chrome.py --check ANALYSIS.json [same options]
"""
import argparse
import json
import sys


def events(a):
    """The events in time order, as JSON text."""
    t = 0
    for i in range(a.items):
        tid = i % a.threads + 1
        if i > 0:
            yield json.dumps({"ph": "s", "name": "hand", "cat": "relay", "id": i,
                              "pid": 1, "tid": (i - 1) % a.threads + 1, "ts": t})
            t += a.gap_us
            yield json.dumps({"ph": "f", "bp": "e", "name": "hand", "cat": "relay",
                              "id": i, "pid": 1, "tid": tid, "ts": t})
        yield json.dumps({"ph": "X", "name": "work", "pid": 1, "tid": tid,
                          "ts": t, "dur": a.dur_us})
        yield json.dumps({"ph": "X", "name": "step", "pid": 1, "tid": tid,
                          "ts": t, "dur": a.dur_us // 2})
        for k in range(a.noise):
            yield json.dumps({"ph": "X", "name": "spin", "pid": 2, "tid": 100 + k,
                              "ts": t + 1, "dur": 1})
        t += a.dur_us


def write(a):
    with open(a.out, "w") as f:
        f.write('{"traceEvents": [\n')
        first = True
        block = []

        def flush():
            nonlocal first
            for e in reversed(block):
                f.write(("" if first else ",\n") + e)
                first = False
            block.clear()

        for e in events(a):
            block.append(e)
            if len(block) >= a.block:
                flush()
        flush()
        names = [(1, k + 1, "relay") for k in range(a.threads)]
        names += [(2, 100 + k, "noise") for k in range(a.noise)]
        for pid, tid, name in names:
            f.write(",\n" + json.dumps({"ph": "M", "name": "thread_name", "pid": pid,
                                        "tid": tid, "args": {"name": name}}))
        f.write("\n]}\n")


def check(a):
    v = json.load(open(a.out))
    want = (a.items * a.dur_us + (a.items - 1) * a.gap_us) * 1000
    got = v["critical_path"]["length_ns"]
    assert got == want, f"path {got} ns, expected {want}"
    crit = {}
    for s in v["states"]:
        crit[(s["sm"].split(":")[0], s["state"])] = \
            crit.get((s["sm"].split(":")[0], s["state"]), 0) + s["critical_ns"]
    half = a.items * a.dur_us // 2 * 1000
    assert crit.get(("relay", "work")) == half, crit
    assert crit.get(("relay", "step")) == half, crit
    assert not any(sm == "noise" and ns > 0 for (sm, _), ns in crit.items()), crit
    print(f"ok: path {got} ns, work {half} ns, step {half} ns, noise off the path")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--check", action="store_true")
    p.add_argument("--items", type=int, default=100_000)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--noise", type=int, default=2)
    p.add_argument("--dur-us", type=int, default=10)
    p.add_argument("--gap-us", type=int, default=3)
    p.add_argument("--block", type=int, default=10_000)
    a = p.parse_args()
    check(a) if a.check else write(a)


if __name__ == "__main__":
    sys.exit(main())
