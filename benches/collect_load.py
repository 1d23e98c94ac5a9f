#!/usr/bin/env python3
"""A bounded load test of `critpath collect` on loopback: REQUESTS requests
of SPANS spans each (a root and its children over three services), sent as
OTLP JSON exports of BATCH spans over one keep-alive connection per sender,
SENDERS senders at once. Prints the spans per second the receiver held, its
peak memory, and checks that nothing was lost: after SIGTERM, `critpath
analyze` of its files finds every request with every span.

Usage: benches/collect_load.py [REQUESTS] [SENDERS]   (default 20000 2)
"""
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRITPATH = os.environ.get("CRITPATH_BIN", os.path.join(ROOT, "target", "release", "critpath"))
SPANS, BATCH = 6, 600


def spans_of(n):
    """Request n: GET / (0-100 ms) calls cart (10-60) and db (60-90) ..."""
    tid = "%032x" % (n + 1)
    base = 1_700_000_000_000_000_000 + n * 1_000_000_000
    parts = [("frontend", "GET /", None, 0, 100), ("frontend", "GET cart", 1, 10, 60),
             ("cart", "load cart", 2, 12, 58), ("frontend", "GET db", 1, 60, 90),
             ("db", "SELECT", 4, 62, 88), ("frontend", "render", 1, 90, 99)]
    out = []
    for i, (svc, name, parent, a, b) in enumerate(parts[:SPANS], 1):
        sp = {"traceId": tid, "spanId": "%016x" % (n * 16 + i), "name": name,
              "startTimeUnixNano": str(base + a * 1_000_000), "endTimeUnixNano": str(base + b * 1_000_000)}
        if parent:
            sp["parentSpanId"] = "%016x" % (n * 16 + parent)
        out.append((svc, sp))
    return out


def body(spans):
    by = {}
    for svc, sp in spans:
        by.setdefault(svc, []).append(sp)
    return json.dumps({"resourceSpans": [
        {"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": s}}]},
         "scopeSpans": [{"spans": v}]} for s, v in by.items()]}).encode()


def sender(addr, bodies, errors):
    host, port = addr.split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=60)
    for b in bodies:
        while True:
            c.request("POST", "/v1/traces", b, {"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            if r.status == 200:
                break
            if r.status != 503:
                errors.append(r.status)
                return
            time.sleep(float(r.getheader("Retry-After", "1")))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    senders = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    tmp = tempfile.mkdtemp(prefix="critpath-collect-")
    out = os.path.join(tmp, "requests")
    recv = subprocess.Popen([CRITPATH, "collect", "--listen", "127.0.0.1:0", "-o", out, "--quiet", "1s"],
                            stderr=subprocess.PIPE, text=True)
    line = recv.stderr.readline()
    addr = line[line.index("http://") + 7:].split("/")[0]
    spans = [s for i in range(n) for s in spans_of(i)]
    bodies = [body(spans[i:i + BATCH]) for i in range(0, len(spans), BATCH)]
    shares = [bodies[k::senders] for k in range(senders)]
    errors = []
    t0 = time.time()
    threads = [threading.Thread(target=sender, args=(addr, s, errors)) for s in shares]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.time() - t0
    with open("/proc/%d/status" % recv.pid) as f:
        hwm = [l for l in f if l.startswith("VmHWM")][0].split()[1]
    recv.send_signal(signal.SIGTERM)
    recv.wait(timeout=120)
    summary = recv.stderr.read().strip()
    files = sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".pb") and not f.startswith("."))
    doc = json.loads(subprocess.run([CRITPATH, "analyze", "--json", *files], check=True,
                                    capture_output=True, text=True).stdout)
    lost = n - doc["traces"]
    print("%d requests, %d spans in %d exports from %d senders: %.2f s, %.0f spans/s held; "
          "receiver peak RSS %d MB; %d request(s) lost, %d error answer(s)" % (
              n, len(spans), len(bodies), senders, took, len(spans) / took, int(hwm) // 1024, lost, len(errors)))
    print(summary)
    subprocess.run(["rm", "-rf", tmp])
    sys.exit(1 if lost or errors else 0)


if __name__ == "__main__":
    main()
