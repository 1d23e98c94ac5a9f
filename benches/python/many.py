"""analyze_many on generated checkout requests: serial, the local process
pool and a Dask LocalCluster of two worker processes; prints each run's
wall time and checks that the three give the same tables.

    target/venv/bin/python benches/python/many.py [--files 50] [--per-file 40]
"""

import argparse
import os
import sys
import tempfile
import time

import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "tests"))
import checkout  # noqa: E402

import critpath  # noqa: E402


def timed(label, fn):
    t = time.perf_counter()
    b = fn()
    print("%-28s %7.2f s  (%d traces)" % (label, time.perf_counter() - t, len(b)))
    return b


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--files", type=int, default=50)
    p.add_argument("--per-file", type=int, default=40)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        paths = checkout.write(d, a.files, a.per_file)
        serial = timed("serial", lambda: critpath.analyze_many(paths, client="serial", progress=False))
        pool = timed("local process pool (%d)" % os.cpu_count(),
                     lambda: critpath.analyze_many(paths, progress=False))
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            dask = timed("dask LocalCluster, 2 workers",
                         lambda: critpath.analyze_many(paths, client=client, progress=False))
        for other in (pool, dask):
            pd.testing.assert_frame_equal(other.per_trace, serial.per_trace)
            pd.testing.assert_frame_equal(other.states, serial.states)
        print("identical tables; top state:", " / ".join(serial.states.iloc[0][["sm", "state"]]))
        c = serial.compare(0.1)
        print("slowest 10%% bound by %s: %s" % (c["slow_top"]["sm"], c["slow_top"]["state"]))


if __name__ == "__main__":
    main()
