#!/usr/bin/env python3
"""Writes the same spans in every form OpenTelemetry users have on disk,
encoded by the real OpenTelemetry Python SDK and its exporters' encoders.

Three checkout requests (trace ids of 16 bytes, span ids of 8, made by a
fixed id generator; times set explicitly, so every run writes the same
bytes). Each request: the frontend's `GET /checkout` calls
`cart: load cart` and `db: SELECT orders` side by side, then
`payment: charge`. Request 1 is bound by cart, request 2 by a slow db
query, request 3 by a slow payment.

Written to the output directory (examples/spans/otel/ holds a copy):

- otlp.json     OTLP JSON, hex ids (opentelemetry-exporter-otlp-json-common)
- base64.json   protobuf's JSON mapping, base64 ids (`MessageToDict` of the
                OTLP protobuf message)
- export.jsonl  JSON lines, one export per line: the file exporter's form
                (opentelemetry-exporter-otlp-json-file), one export per
                service
- otlp.pb       one protobuf `ExportTraceServiceRequest`
                (opentelemetry-exporter-otlp-proto-common, as the OTLP/HTTP
                exporter sends it)
- delimited.pb  one `ExportTraceServiceRequest` per service, each after its
                length as a varint (protobuf's writeDelimitedTo)
- zipkin.json   Zipkin v2 JSON (opentelemetry-exporter-zipkin-json)

Made with target/venv (python/requirements-test.txt):

    target/venv/bin/python examples/spans/gen_otel_formats.py -o examples/spans/otel
"""

import argparse
import io
import json
import os

from google.protobuf.internal.encoder import _VarintBytes
from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans as json_spans
from opentelemetry.exporter.otlp.json.file.trace_exporter import FileSpanExporter
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as proto_spans
from opentelemetry.exporter.zipkin.json.v2 import JsonV2Encoder
from opentelemetry.exporter.zipkin.node_endpoint import NodeEndpoint
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

MS = 1_000_000
T0 = 1_795_802_808_000_000_000
SERVICES = ["frontend", "cart", "db", "payment"]


class FixedIds(IdGenerator):
    """Ids with letters in their hex (so case and base64 matter): the n-th
    span's is `span_base` + n, the n-th trace's `trace_base` + n."""

    def __init__(self, span_base=0xABCDEF0000000000, trace_base=0x5B8EFFF798038103D269B633813F0000):
        self.span_base, self.trace_base = span_base, trace_base
        self.spans = 0
        self.traces = 0

    def generate_span_id(self):
        self.spans += 1
        return self.span_base + self.spans

    def generate_trace_id(self):
        self.traces += 1
        return self.trace_base + self.traces


def tracers_of(services, ids, name):
    """A tracer per service (its provider's resource names it), each
    exporting to memory: (tracers, exporters), by service."""
    exporters, tracers = {}, {}
    for s in services:
        provider = TracerProvider(resource=Resource.create({"service.name": s, "service.instance.id": f"{s}-1"}), id_generator=ids)
        exporters[s] = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporters[s]))
        tracers[s] = provider.get_tracer(name)
    return tracers, exporters


def request(tracers, t0, cart_ms, db_ms, charge_ms):
    """One checkout request; times in ms after t0."""
    root = tracers["frontend"].start_span(
        "GET /checkout", kind=trace.SpanKind.SERVER, start_time=t0
    )
    ctx = trace.set_span_in_context(root)
    a = t0 + MS
    cart = tracers["cart"].start_span("load cart", context=ctx, start_time=a)
    db = tracers["db"].start_span("SELECT orders", context=ctx, start_time=a)
    cart.end(end_time=a + cart_ms * MS)
    db.end(end_time=a + db_ms * MS)
    b = a + max(cart_ms, db_ms) * MS + MS
    charge = tracers["payment"].start_span("charge", context=ctx, start_time=b)
    charge.end(end_time=b + charge_ms * MS)
    root.end(end_time=b + charge_ms * MS + MS)


def spans_by_service():
    tracers, exporters = tracers_of(SERVICES, FixedIds(), "checkout")
    request(tracers, T0, 44, 6, 10)
    request(tracers, T0 + 200 * MS, 43, 120, 9)
    request(tracers, T0 + 400 * MS, 45, 5, 80)
    return {s: list(e.get_finished_spans()) for s, e in exporters.items()}


def zipkin(by_service):
    spans = []
    for s, group in by_service.items():
        endpoint = NodeEndpoint()
        endpoint.service_name = s
        spans += json.loads(JsonV2Encoder().serialize(group, endpoint))
    return json.dumps(spans, indent=1) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", required=True)
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    by_service = spans_by_service()
    every = [s for group in by_service.values() for s in group]
    path = lambda name: os.path.join(out, name)
    with open(path("otlp.json"), "w") as f:
        json.dump(json_spans(every).to_dict(), f, indent=1)
    message = proto_spans(every)
    with open(path("base64.json"), "w") as f:
        json.dump(MessageToDict(message), f, indent=1)
    with open(path("otlp.pb"), "wb") as f:
        f.write(message.SerializeToString())
    with open(path("delimited.pb"), "wb") as f:
        for group in by_service.values():
            body = proto_spans(group).SerializeToString()
            f.write(_VarintBytes(len(body)) + body)
    lines = io.StringIO()
    exporter = FileSpanExporter(stream=lines)
    for group in by_service.values():
        exporter.export(group)
    with open(path("export.jsonl"), "w") as f:
        f.write(lines.getvalue())
    with open(path("zipkin.json"), "w") as f:
        f.write(zipkin(by_service))
    print(f"{len(every)} spans of 3 requests, 4 services, in 6 forms in {out}")


if __name__ == "__main__":
    main()
