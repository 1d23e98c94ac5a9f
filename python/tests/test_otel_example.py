"""The OpenTelemetry example (examples/otel): four Python services over HTTP
on loopback, instrumented with the real OpenTelemetry SDK and exported by
the SDK's span processor and OTLP encoder. Its ground truth (run.py's
docstring): cart bounds the requests overall, db the slowest ones, and a
slow request with db twice as fast is 100 ms shorter. critpath must find
that from the spans alone, and its what-if on a slow request must predict a
real run with db twice as fast."""

import json
import os
import statistics
import sys

import pytest

from conftest import ROOT, cli

sys.path.insert(0, os.path.join(ROOT, "examples", "otel"))
import run as shop  # noqa: E402

N = 96


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("otel")
    base, faster = str(d / "shop.json"), str(d / "shop-db2.json")
    return (
        (base, shop.run(N, base)),
        (faster, shop.run(N, faster, db_scale=0.5)),
    )


def analyze(path):
    return json.loads(cli("analyze", path, "--json")[1])


def test_no_path_outlasts_its_request(runs):
    (path, requests), _ = runs
    doc = analyze(path)
    assert doc["traces"] == N == len(requests)
    roots = shop.root_lengths(path)
    for r in doc["per_trace"]:
        assert 0 < r["length_ns"] <= roots[r["trace_id"]], r
    # Every request has its four services; context held all the way.
    assert not [d for d in doc["diagnostics"] if d["kind"] == "span-context"], doc["diagnostics"]


def test_cart_bounds_the_requests_and_db_the_slowest(runs):
    (path, requests), _ = runs
    doc = analyze(path)
    top = max(doc["states"], key=lambda s: s["critical_ns_sum"])
    assert (top["sm"], top["state"]) == ("cart", "GET /cart"), top
    slow = doc["slowest"]["slow_top"]
    assert (slow["sm"], slow["state"]) == ("db", "SELECT orders"), doc["slowest"]
    kinds = dict(requests)
    per = sorted(doc["per_trace"], key=lambda r: r["length_ns"])
    slowest = per[-N // 10:]
    on_db = [r for r in slowest if r["top"]["sm"] == "db"]
    # Under load a fast request may be slowed into them, never onto db.
    assert len(on_db) > len(slowest) / 2, slowest
    assert all(kinds[r["trace_id"]] == "slow" for r in on_db)


def test_whatif_db_twice_as_fast_predicts_a_real_run(runs):
    (path, requests), (faster, requests2) = runs
    lengths = shop.root_lengths(path)
    slow = sorted((lengths[t], t) for t, k in requests if k == "slow")
    length, trace = slow[len(slow) // 2]
    out = json.loads(cli("whatif", path, "--trace", trace, "--speedup", "db=2", "--json")[1])
    predicted = out["predicted_length_ns"]
    lengths2 = shop.root_lengths(faster)
    real = statistics.median(lengths2[t] for t, k in requests2 if k == "slow")
    # The truth is about 100 ms shorter; the spans' waits must carry it.
    # (On failure: what the path of that request held instead of db.)
    assert predicted < 0.75 * length, (predicted, length, trace, out["baseline_states"][:6])
    assert abs(predicted - real) <= 0.15 * real, (predicted, real, length)
    # Naming the span state does the same as naming the service.
    out2 = json.loads(
        cli("whatif", path, "--trace", trace, "--speedup", "db:SELECT orders=2", "--json")[1]
    )
    assert out2["predicted_length_ns"] == predicted
