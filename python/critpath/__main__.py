"""``python -m critpath batch TRACES... [--scheduler ADDR] -o DIR``: many
traces analyzed one request at a time, on a Dask cluster when a scheduler
is given (else threads of this process), the per-request table and the
aggregate per state written to DIR as Parquet (CSV without pyarrow).
``critpath batch --scheduler ADDR`` runs this."""

import argparse
import sys


def _parser():
    p = argparse.ArgumentParser(prog="python -m critpath")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("batch", help="analyze many traces, one result per request")
    b.add_argument("traces", nargs="+", help="trace files (a span file gives one result per trace id)")
    b.add_argument("--scheduler", metavar="ADDR",
                   help="a Dask scheduler's address (tcp://HOST:PORT); else threads of this process")
    b.add_argument("-o", "--output", metavar="DIR", required=True,
                   help="directory for per_trace and states (.parquet, or .csv without pyarrow)")
    b.add_argument("--csv", action="store_true", help="write CSV even when pyarrow is there")
    b.add_argument("--to", metavar="SM[:STATE]")
    b.add_argument("--from", dest="from_", metavar="SM")
    b.add_argument("--trace", metavar="ID", help="span files: only this trace id")
    b.add_argument("--slowest", metavar="FRACTION", type=float, default=0.1,
                   help="compare the slowest FRACTION of the requests with the rest (default 0.1)")
    return p


def _say_comparison(c):
    def name(row):
        return "%s: %s" % (row["sm"], row["state"]) if row else "nothing"
    print("in the slowest %g%% (%d traces), %s holds %.0f%% of the path; in the rest, %s (%.0f%%)" % (
        100 * c["fraction"], c["slow_traces"], name(c.get("slow_top")), 100 * c["slow_top_share"],
        name(c.get("rest_top")), 100 * c["rest_top_share"]))


def main(argv=None):
    args = _parser().parse_args(argv)
    from critpath.analysis import Error
    from critpath.batch import analyze_many, fraction_of_requests

    try:
        fraction_of_requests(args.slowest, "--slowest %s")
        batch = analyze_many(args.traces, client=args.scheduler, to=args.to, from_=args.from_,
                             trace=args.trace)
    except Error as e:
        print("critpath: error: %s" % e, file=sys.stderr)
        return 2
    try:
        import pyarrow  # noqa: F401
        parquet = not args.csv
    except ImportError:
        parquet = False
    written = batch.to_parquet(args.output) if parquet else batch.to_csv(args.output)
    print("%d traces from %d files; wrote %s" % (len(batch), len(args.traces), ", ".join(written)))
    if len(batch):
        _say_comparison(batch.compare(args.slowest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
