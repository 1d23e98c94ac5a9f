"""analyze_many on generated checkout requests (python/tests/checkout.py):
serial, the default pool of threads, a process pool and a Dask
LocalCluster of two worker processes. Each run's wall time includes the
two tables (per_trace, states); prints medians with their range (and the
process pool's time to start and stop on a small job), and checks that
every way gives the same tables.

    target/venv/bin/python benches/python/many.py [--files 200] [--per-file 500] [--runs 3] [--json]
"""

import argparse
import concurrent.futures as cf
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "tests"))
import checkout  # noqa: E402

import critpath  # noqa: E402


def tables(paths, **kw):
    b = critpath.analyze_many(paths, progress=False, **kw)
    b.per_trace, b.states
    return b


def timed(fn, runs):
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return out, times


def process_pool_start(paths):
    """A process pool made, used on two files and shut down (spawn: a
    fresh interpreter per worker)."""
    with cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
        return tables(paths[:2], client=ex)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--files", type=int, default=200)
    p.add_argument("--per-file", type=int, default=500)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    from distributed import Client, LocalCluster

    rows = {}
    with tempfile.TemporaryDirectory() as d:
        paths = checkout.write(d, a.files, a.per_file)
        tables(paths[:1])  # pandas' first DataFrame pays for its imports
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            ways = {
                "serial": lambda: tables(paths, client="serial"),
                "threads (default)": lambda: tables(paths),
                "process pool (2)": lambda: _with_pool(paths),
                "dask LocalCluster (2 workers)": lambda: tables(paths, client=client),
                "process pool start, 2 files": lambda: process_pool_start(paths),
            }
            results = {}
            for name, fn in ways.items():
                results[name], rows[name] = timed(fn, a.runs)
        serial = results["serial"]
        for name, b in results.items():
            if "2 files" not in name:
                pd.testing.assert_frame_equal(b.per_trace, serial.per_trace)
                pd.testing.assert_frame_equal(b.states, serial.states)
    report(rows, a)


def _with_pool(paths):
    with cf.ProcessPoolExecutor(2) as ex:
        return tables(paths, client=ex)


def report(rows, a):
    med = {k: statistics.median(v) for k, v in rows.items()}
    if a.json:
        print(json.dumps({"files": a.files, "per_file": a.per_file, "runs": a.runs,
                          "seconds": rows, "median_s": med}))
        return
    n = a.files * a.per_file
    print("%d files of %d requests (%d), median of %d, tables included; same tables every way"
          % (a.files, a.per_file, n, a.runs))
    for k, v in rows.items():
        rate = "" if "2 files" in k else "  %8.0f requests/s" % (n / med[k])
        print("%-32s %6.2f s (%.2f–%.2f)%s" % (k, med[k], min(v), max(v), rate))


if __name__ == "__main__":
    main()
