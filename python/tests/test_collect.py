"""`critpath collect` fed by the real OpenTelemetry SDK: the example shop's
four services (examples/otel) export their spans with the SDK's own
OTLP/HTTP exporter (protobuf, BatchSpanProcessor) to a receiver on
loopback, and to a file as well. The requests the receiver writes must
give the per-request results of the same spans read from the file."""

import glob
import json
import os
import signal
import subprocess
import sys
import time

from conftest import BIN, ROOT, cli

sys.path.insert(0, os.path.join(ROOT, "examples", "otel"))
import run as shop  # noqa: E402

N = 24


def per_trace(doc):
    return sorted((r["trace_id"], r["length_ns"], r["top"]["sm"], r["top"]["state"]) for r in doc["per_trace"])


def test_the_sdks_exports_give_the_results_of_the_file(tmp_path):
    out = tmp_path / "requests"
    recv = subprocess.Popen(
        [BIN, "collect", "--listen", "127.0.0.1:0", "-o", str(out), "--quiet", "500ms"],
        stderr=subprocess.PIPE, text=True)
    try:
        line = recv.stderr.readline()
        url = line[line.index("http://"):].split(",")[0].strip()
        spans = str(tmp_path / "shop.json")
        requests = shop.run(N, spans, otlp=url)
        # The services flushed their exporters as they shut down; the
        # receiver writes the rest as it stops.
        time.sleep(0.2)
        recv.send_signal(signal.SIGTERM)
        assert recv.wait(timeout=60) == 0
        summary = recv.stderr.read()
    finally:
        if recv.poll() is None:
            recv.kill()
    assert "0 span(s) rejected, 0 export(s) refused" in summary, summary
    files = sorted(glob.glob(str(out / "requests-*.pb")))
    assert files and not os.path.exists(out / ".open.pb")
    got = json.loads(cli("analyze", "--json", *files)[1])
    want = json.loads(cli("analyze", "--json", spans)[1])
    assert got["traces"] == want["traces"] == N == len(requests)
    assert per_trace(got) == per_trace(want)
