#!/usr/bin/env python3
"""Runs HolisticTraceAnalysis's critical-path analysis on one rank of a
Kineto trace and prints what critpath's GPU breakdown is compared with:
the path length, the bound_by breakdown and the top states (microseconds),
and how long HTA took.

    python3 hta_run.py TRACE_DIR [ANNOTATION [INSTANCE [RANK]]]

TRACE_DIR holds the rank's trace (HTA reads directories). Needs
`pip install holistictraceanalysis "pandas<2.3"` (a venv under /tmp will do).
"""
import json
import os
import sys
import time

os.environ.setdefault("CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE", "1")

from hta.trace_analysis import TraceAnalysis  # noqa: E402


def main():
    trace_dir = sys.argv[1]
    annotation = sys.argv[2] if len(sys.argv) > 2 else ""
    instance = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    rank = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    t0 = time.perf_counter()
    analyzer = TraceAnalysis(trace_dir=trace_dir)
    t1 = time.perf_counter()
    cp_graph, ok = analyzer.critical_path_analysis(rank=rank, annotation=annotation, instance_id=instance)
    t2 = time.perf_counter()
    df = cp_graph.get_critical_path_breakdown()
    by = df.groupby("bound_by").duration.sum()
    names = df.groupby("s_name").duration.sum().sort_values(ascending=False)
    print(json.dumps({
        "ok": bool(ok),
        "length_us": float(df.duration.sum()),
        "bound_by_us": {k: float(v) for k, v in by.items() if k},
        "top_states_us": {k: float(v) for k, v in names.head(5).items()},
        "load_s": round(t1 - t0, 2),
        "analysis_s": round(t2 - t1, 2),
    }, indent=1))


if __name__ == "__main__":
    main()
