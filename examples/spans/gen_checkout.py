#!/usr/bin/env python3
"""Writes checkout requests as OpenTelemetry (OTLP JSON) span files, with
their ground truth: N files of R requests each (default 50 x 40 = 2,000).

Each request: the frontend's `GET /checkout` starts `cart: load cart`
(42-46 ms) and `db: SELECT orders` (4-8 ms) side by side, then
`payment: charge` (9-11 ms) and, beside it, `mailer: send receipt`
(2-3 ms); 1 ms of frontend work comes before, between and after. A fast
request takes about 57 ms and is bound by `cart: load cart`; every tenth
request (the 10th, 20th, ... of the whole run) has a 120 ms
`db: SELECT orders`, which then bounds it.

The truth goes to truth.json beside the files: each request's file,
trace id, critical-path length (the root span's duration) and bounding
state, and what an analysis of the whole run must find. A summary is
printed. Standard library only; the same seed gives the same files.

    python3 examples/spans/gen_checkout.py -o /tmp/checkout [--files 50] [--requests 40]
"""

import argparse
import json
import os
import random

MS = 1_000_000


def span(trace_id, span_id, parent, name, start, end):
    s = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
    }
    if parent:
        s["parentSpanId"] = parent
    return s


def request(rng, index, t0, slow_every):
    """One request's spans by service, and its truth."""
    tid = "%032x" % (index + 1)
    sid = lambda k: "%014x%02x" % (index + 1, k)
    jitter = lambda lo, hi: rng.randint(lo * 1000, hi * 1000) * 1000  # whole us
    slow = slow_every > 0 and index % slow_every == slow_every - 1
    cart = jitter(42, 46)
    db = 120 * MS if slow else jitter(4, 8)
    charge = jitter(9, 11)
    receipt = jitter(2, 3)
    a = t0 + MS  # children start after 1 ms of frontend work
    joined = a + max(cart, db) + MS
    end = joined + charge + MS
    services = {
        "frontend": [span(tid, sid(1), None, "GET /checkout", t0, end)],
        "cart": [span(tid, sid(2), sid(1), "load cart", a, a + cart)],
        "db": [span(tid, sid(3), sid(1), "SELECT orders", a, a + db)],
        "payment": [span(tid, sid(4), sid(1), "charge", joined, joined + charge)],
        "mailer": [span(tid, sid(5), sid(1), "send receipt", joined, joined + receipt)],
    }
    truth = {
        "trace_id": tid,
        "length_ns": end - t0,
        "slow": slow,
        "bound_by": "db: SELECT orders" if db > cart else "cart: load cart",
        "cart_ns": cart,
        "db_ns": db,
    }
    return services, truth


def document(requests):
    """The OTLP document of several requests: one resource per service."""
    by_service = {}
    for services, _ in requests:
        for name, spans in services.items():
            by_service.setdefault(name, []).extend(spans)
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [
                        {"key": "service.name", "value": {"stringValue": name}}
                    ]
                },
                "scopeSpans": [{"spans": spans}],
            }
            for name, spans in by_service.items()
        ]
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", required=True, help="directory to write into")
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--requests", type=int, default=40, help="requests per file")
    ap.add_argument("--slow-every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    truth = []
    index = 0
    for f in range(args.files):
        name = "checkout-%03d.json" % f
        reqs = []
        for _ in range(args.requests):
            t0 = 1_700_000_000_000_000_000 + index * 200 * MS
            reqs.append(request(rng, index, t0, args.slow_every))
            index += 1
        with open(os.path.join(args.out, name), "w") as out:
            json.dump(document(reqs), out, indent=1)
        for _, t in reqs:
            truth.append(dict(file=name, **t))
    slow = [t for t in truth if t["slow"]]
    fast = [t for t in truth if not t["slow"]]
    summary = {
        "files": args.files,
        "requests_per_file": args.requests,
        "requests": len(truth),
        "slow_requests": len(slow),
        "first_by_critical_sum": "cart: load cart",
        "first_in_slowest": "db: SELECT orders" if slow else "cart: load cart",
        "fast_mean_length_ns": sum(t["length_ns"] for t in fast) // max(len(fast), 1),
        "slow_mean_length_ns": sum(t["length_ns"] for t in slow) // max(len(slow), 1),
    }
    with open(os.path.join(args.out, "truth.json"), "w") as out:
        json.dump({"summary": summary, "requests": truth}, out, indent=1)
    print(
        "%d requests in %d files under %s: %d fast (mean %.1f ms, bound by cart: load cart), "
        "%d slow (mean %.1f ms, bound by db: SELECT orders); truth in truth.json"
        % (
            len(truth),
            args.files,
            args.out,
            len(fast),
            summary["fast_mean_length_ns"] / MS,
            len(slow),
            summary["slow_mean_length_ns"] / MS,
        )
    )


if __name__ == "__main__":
    main()
