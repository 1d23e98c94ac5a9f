"""Cost of one annotation event of the Python SDK: run with CRITPATH_OUT set
and unset. Usage: overhead.py [EVENTS]"""
import os
import sys
import time

from critpath import sdk

n = int(sys.argv[1]) if len(sys.argv) > 1 else 300000
with sdk.sm("bench"):
    t0 = time.perf_counter_ns()
    for i in range(n):
        sdk.state("a" if i & 1 else "b")
    d = time.perf_counter_ns() - t0
print("python: %.1f ns/event (%d events, CRITPATH_OUT %s)"
      % (d / n, n, "set" if os.environ.get("CRITPATH_OUT") else "unset"))
