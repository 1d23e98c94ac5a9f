"""Runs the example shop (service.py: four services over HTTP on loopback,
instrumented with the OpenTelemetry Python SDK) and writes its spans as one
OTLP JSON file.

    python run.py -n 160 -o shop.json [--db-scale 0.5] [--report lengths.json]

The driver sends N requests `GET /checkout?n=I` to the frontend, one after
the other, then asks each service to shut down (its span processor flushes
and its exporter writes its spans) and merges the services' documents into
one `resourceSpans` array. --report writes, per request, its trace id, its
kind (`slow` or `fast`) and the length of its root span in ns.

Ground truth, by construction (service.py's times):
  * a fast request: frontend 1 ms, then in parallel cart (60 ms) and
    checkout (2 ms, then db 3 ms), then frontend 1 ms: cart is on the path
    (about 62 ms plus the HTTP hops; the checkout branch's extra hop costs
    far less than the 55 ms between the branches, even on a loaded machine);
  * a slow request (n % 8 == 3, one in eight): db takes 200 ms, so the
    checkout branch (2 + 200 ms) outlasts cart: db is on the path;
  * over all requests cart holds the most critical time (60 ms in most of
    them; db 3 ms in most and 200 ms in one in eight: 28 ms a request on
    average), and in the slowest 10% (slow ones) db is first;
  * with db twice as fast (--db-scale 0.5) a slow request's checkout branch
    takes 2 + 100 ms, still longer than cart: its length drops by 100 ms,
    which `critpath whatif FILE --trace ID --speedup db=2` predicts.
"""

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICES = ["db", "checkout", "cart", "frontend"]
sys.path.insert(0, HERE)
from service import is_slow  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, dict(resp.getheaders()), body
    finally:
        conn.close()


def wait_ready(port, proc, deadline):
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("a service exited early (%d)" % proc.returncode)
        try:
            if get(port, "/ready", timeout=2)[0] == 200:
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("a service did not start in time")


def run(n, out, db_scale=1.0, otlp=None):
    """Runs the shop for `n` requests; writes the spans to `out` (and, with
    `otlp`, exports them to that OTLP/HTTP URL too); returns [(trace_id,
    kind)] in request order."""
    ports = {s: free_port() for s in SERVICES}
    spec = ",".join("%s=%d" % kv for kv in ports.items())
    tmp = tempfile.mkdtemp(prefix="critpath-otel-")
    procs = {}
    try:
        for s in SERVICES:
            cmd = [sys.executable, os.path.join(HERE, "service.py"), s, "--port", str(ports[s]),
                   "--ports", spec, "--out", os.path.join(tmp, s + ".json"),
                   "--db-scale", str(db_scale)] + (["--otlp", otlp] if otlp else [])
            procs[s] = subprocess.Popen(cmd)
        deadline = time.time() + 60
        for s in SERVICES:
            wait_ready(ports[s], procs[s], deadline)
        requests = []
        for i in range(n):
            status, headers, body = get(ports["frontend"], "/checkout?n=%d" % i)
            if status != 200:
                raise RuntimeError("request %d: HTTP %d %s" % (i, status, body))
            requests.append((headers["X-Trace-Id"], "slow" if is_slow(i) else "fast"))
        for s in SERVICES:
            get(ports[s], "/shutdown")
        for s in SERVICES:
            if procs[s].wait(timeout=60) != 0:
                raise RuntimeError("service %s failed (%d)" % (s, procs[s].returncode))
        merged = []
        for s in SERVICES:
            with open(os.path.join(tmp, s + ".json")) as f:
                merged.extend(json.load(f)["resourceSpans"])
        with open(out, "w") as f:
            json.dump({"resourceSpans": merged}, f)
        return requests
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)


def root_lengths(path):
    """Per trace id, the length of its root span (the one with no parent)."""
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for rs in doc["resourceSpans"]:
        for ss in rs.get("scopeSpans", []):
            for sp in ss.get("spans", []):
                if not sp.get("parentSpanId"):
                    out[sp["traceId"]] = int(sp["endTimeUnixNano"]) - int(sp["startTimeUnixNano"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=160)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--db-scale", type=float, default=1.0)
    ap.add_argument("--report")
    a = ap.parse_args()
    requests = run(a.n, a.out, a.db_scale)
    if a.report:
        lengths = root_lengths(a.out)
        rows = [{"trace_id": t, "kind": k, "length_ns": lengths.get(t)} for t, k in requests]
        with open(a.report, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
