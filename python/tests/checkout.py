"""Writes OTLP span files of checkout requests, several requests (trace
ids) per file, for analyze_many's tests and figures.

    python3 python/tests/checkout.py OUT_DIR [--files N] [--per-file K] [--seed S]

Each request: frontend `GET /checkout` calls cart `load cart` (about 45 ms),
then db `SELECT orders` (about 5 ms; 120 ms for every tenth request), then
payment `charge` (about 5 ms). Fast requests are bound by the cart; in the
slowest tenth, by the db query.
"""

import argparse
import json
import os
import random


def _span(trace, sid, parent, name, start, end):
    s = {"traceId": trace, "spanId": sid, "name": name,
         "startTimeUnixNano": str(start), "endTimeUnixNano": str(end)}
    if parent:
        s["parentSpanId"] = parent
    return s


def request(i, rng):
    """The spans of request `i`, by service."""
    ms = 1_000_000
    t0 = 1_000_000_000 + i * 1_000 * ms
    trace = "req%05d" % i
    cart = t0 + 2 * ms + rng.randrange(0, ms)
    cart_end = cart + 45 * ms + rng.randrange(0, 2 * ms)
    db_end = cart_end + (120 * ms if i % 10 == 9 else 5 * ms) + rng.randrange(0, ms // 2)
    pay_end = db_end + 5 * ms + rng.randrange(0, ms // 2)
    end = pay_end + 1 * ms
    return {
        "frontend": [_span(trace, "f%d" % i, None, "GET /checkout", t0, end)],
        "cart": [_span(trace, "c%d" % i, "f%d" % i, "load cart", cart, cart_end)],
        "db": [_span(trace, "d%d" % i, "f%d" % i, "SELECT orders", cart_end, db_end)],
        "payment": [_span(trace, "p%d" % i, "f%d" % i, "charge", db_end, pay_end)],
    }


def write(out_dir, files=10, per_file=8, seed=1):
    """Writes `files` OTLP files of `per_file` requests each; returns their
    paths in order."""
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(seed)
    paths = []
    for f in range(files):
        by_service = {}
        for k in range(per_file):
            for svc, spans in request(f * per_file + k, rng).items():
                by_service.setdefault(svc, []).extend(spans)
        doc = {"resourceSpans": [
            {"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": svc}}]},
             "scopeSpans": [{"spans": spans}]}
            for svc, spans in sorted(by_service.items())]}
        path = os.path.join(out_dir, "checkout-%03d.json" % f)
        with open(path, "w") as fh:
            json.dump(doc, fh)
        paths.append(path)
    return paths


def split_by_service(path, out_dir):
    """The span file at `path` as two files, its services shared out
    between them (the spans of each request in both); their paths."""
    with open(path) as fh:
        doc = json.load(fh)
    rs = doc["resourceSpans"]
    halves = []
    for i, part in enumerate((rs[::2], rs[1::2])):
        half = os.path.join(out_dir, "half%d.json" % i)
        with open(half, "w") as fh:
            json.dump({"resourceSpans": part}, fh)
        halves.append(half)
    return halves


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("out_dir")
    p.add_argument("--files", type=int, default=10)
    p.add_argument("--per-file", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    print(len(write(a.out_dir, a.files, a.per_file, a.seed)), "files")
