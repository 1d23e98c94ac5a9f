#!/usr/bin/env python3
"""Writes one request whose work goes on after its response, as the real
OpenTelemetry Python SDK records a message handed to a queue, encoded by
its OTLP JSON encoder (examples/spans/otel/messaging.json holds a copy).

The request (times in ms from its start, fixed, so every run writes the
same bytes): the frontend's `POST /order` (SERVER, 0-50) calls
`orders: INSERT order` (5-20), then `orders: publish order` (PRODUCER,
22-24), then answers at 50. The mailer takes the message off the queue at
60, after the response: `mailer: process order` (CONSUMER, 60-140, its
parent the producer span, as the SDK's context propagation makes it),
which renders the mail in process (`mailer: render`, 70-120).

Ground truth:
- the request is its root span: a critical path of 50 ms ending with
  `POST /order`, on which the mailer's spans are not (they started after
  the root span's end): an `after-root` finding counts 2 spans, the
  furthest ending 90 ms after the root;
- with `--to mailer`, the path goes on through the publish and the queue
  (24 to 60 ms, charged to the mailer's idle state) to the mail's end at
  140 ms.

Made with target/venv (python/requirements-test.txt):

    target/venv/bin/python examples/spans/gen_messaging.py -o examples/spans/otel
"""

import argparse
import json
import os

from opentelemetry import trace
from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans

from gen_otel_formats import MS, T0, FixedIds, tracers_of

SERVICES = ["frontend", "orders", "mailer"]


def record(tracers):
    root = tracers["frontend"].start_span("POST /order", kind=trace.SpanKind.SERVER, start_time=T0)
    ctx = trace.set_span_in_context(root)
    insert = tracers["orders"].start_span("INSERT order", context=ctx, start_time=T0 + 5 * MS)
    insert.end(end_time=T0 + 20 * MS)
    publish = tracers["orders"].start_span(
        "publish order", context=ctx, kind=trace.SpanKind.PRODUCER, start_time=T0 + 22 * MS)
    publish.end(end_time=T0 + 24 * MS)
    root.end(end_time=T0 + 50 * MS)
    # The consumer's parent is the producer span: the message carried its
    # context through the queue.
    queued = trace.set_span_in_context(publish)
    process = tracers["mailer"].start_span(
        "process order", context=queued, kind=trace.SpanKind.CONSUMER, start_time=T0 + 60 * MS)
    render = tracers["mailer"].start_span(
        "render", context=trace.set_span_in_context(process), start_time=T0 + 70 * MS)
    render.end(end_time=T0 + 120 * MS)
    process.end(end_time=T0 + 140 * MS)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", required=True)
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    # One request: its trace id is the trace base's next.
    ids = FixedIds(span_base=0x0A0B0C0000000000, trace_base=0x3F2E1D0C0B0A090807060504030200FF)
    tracers, exporters = tracers_of(SERVICES, ids, "shop")
    record(tracers)
    every = [sp for e in exporters.values() for sp in e.get_finished_spans()]
    with open(os.path.join(out, "messaging.json"), "w") as f:
        json.dump(encode_spans(every).to_dict(), f, indent=1)
    print(f"{len(every)} spans of one request, 3 services, in {out}/messaging.json")


if __name__ == "__main__":
    main()
