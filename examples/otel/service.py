"""One service of the example shop, instrumented with the OpenTelemetry
Python SDK: a real HTTP server on loopback whose handlers open SERVER spans
from the W3C `traceparent` they receive, and whose calls to other services
open CLIENT spans and inject theirs. Spans go through the SDK's
BatchSpanProcessor to an exporter that encodes them with the SDK's own OTLP
encoder (opentelemetry-exporter-otlp-proto-common) and writes them as OTLP
JSON when the service shuts down.

    python service.py NAME --port P --ports frontend=P1,cart=P2,... --out FILE
                      [--db-scale X] [--otlp URL]

With --otlp the spans also go, as the SDK's own OTLP/HTTP exporter sends
them (protobuf), to URL (`critpath collect`'s http://ADDR/v1/traces).

The services (see run.py for the ground truth they make):
  frontend  GET /checkout: 1 ms, then GET /cart and POST /checkout in
            parallel (two threads), then 1 ms
  cart      GET /cart: 60 ms
  checkout  POST /checkout: 2 ms, then SELECT orders on db
  db        SELECT orders: 3 ms, or 200 ms for a slow request (n % 8 == 3),
            both times --db-scale

GET /shutdown flushes the spans, writes --out and stops the server.
"""

import argparse
import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.propagate import extract, inject
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

# What each service does, in seconds (db: fast, slow).
FRONTEND_BEFORE = 0.001
FRONTEND_AFTER = 0.001
CART = 0.060
CHECKOUT = 0.002
DB_FAST = 0.003
DB_SLOW = 0.200
SLOW_EVERY = 8
SLOW_AT = 3


def is_slow(n):
    return n % SLOW_EVERY == SLOW_AT


class OtlpJsonFileExporter(SpanExporter):
    """Keeps what the span processor exports, as OTLP protobuf messages made
    by the SDK's encoder; writes them as one OTLP JSON document (ids in hex,
    as the OTLP/JSON mapping says) on shutdown."""

    def __init__(self, path):
        self.path = path
        self.requests = []
        self.lock = threading.Lock()

    def export(self, spans):
        msg = encode_spans(spans)
        with self.lock:
            self.requests.append(msg)
        return SpanExportResult.SUCCESS

    def shutdown(self):
        resource_spans = []
        with self.lock:
            for msg in self.requests:
                doc = MessageToDict(msg)
                resource_spans.extend(doc.get("resourceSpans", []))
        for rs in resource_spans:
            for ss in rs.get("scopeSpans", []):
                for sp in ss.get("spans", []):
                    hex_ids(sp)
                    for link in sp.get("links", []):
                        hex_ids(link)
        with open(self.path, "w") as f:
            json.dump({"resourceSpans": resource_spans}, f)

    def force_flush(self, timeout_millis=30000):
        return True


def hex_ids(obj):
    """protobuf's JSON mapping writes bytes in base64; OTLP/JSON wants hex."""
    import base64

    for key in ("traceId", "spanId", "parentSpanId"):
        if obj.get(key):
            obj[key] = base64.b64decode(obj[key]).hex()


class Service:
    def __init__(self, name, ports, out, db_scale, otlp=None):
        self.name = name
        self.ports = ports
        self.db_scale = db_scale
        self.provider = TracerProvider(resource=Resource.create({"service.name": name}))
        self.provider.add_span_processor(BatchSpanProcessor(OtlpJsonFileExporter(out)))
        if otlp:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp)))
        self.tracer = self.provider.get_tracer("critpath.examples.otel")

    def call(self, service, method, path, span_name):
        """A CLIENT span around an HTTP call whose headers carry its context."""
        with self.tracer.start_as_current_span(span_name, kind=trace.SpanKind.CLIENT):
            headers = {}
            inject(headers)
            conn = http.client.HTTPConnection("127.0.0.1", self.ports[service], timeout=30)
            try:
                conn.request(method, path, headers=headers)
                resp = conn.getresponse()
                resp.read()
                if resp.status != 200:
                    raise RuntimeError("%s %s: HTTP %d" % (service, path, resp.status))
            finally:
                conn.close()

    def frontend(self, n):
        time.sleep(FRONTEND_BEFORE)
        errors = []

        def run(*args):
            try:
                self.call(*args)
            except Exception as e:  # reported by the response
                errors.append(e)

        # Each thread carries the server span's context (the SDK's contextvars
        # do not cross threads by themselves).
        from opentelemetry import context

        ctx = context.get_current()

        def in_ctx(*args):
            token = context.attach(ctx)
            try:
                run(*args)
            finally:
                context.detach(token)

        threads = [
            threading.Thread(target=in_ctx, args=("cart", "GET", "/cart?n=%d" % n, "GET /cart")),
            threading.Thread(
                target=in_ctx, args=("checkout", "POST", "/checkout?n=%d" % n, "POST /checkout")
            ),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        time.sleep(FRONTEND_AFTER)

    def handle(self, path, n):
        """The work of one request to this service."""
        if self.name == "frontend":
            self.frontend(n)
        elif self.name == "cart":
            time.sleep(CART)
        elif self.name == "checkout":
            time.sleep(CHECKOUT)
            self.call("db", "GET", "/query?n=%d" % n, "SELECT orders")
        elif self.name == "db":
            time.sleep((DB_SLOW if is_slow(n) else DB_FAST) * self.db_scale)


SPAN_NAMES = {
    "frontend": "GET /checkout",
    "cart": "GET /cart",
    "checkout": "POST /checkout",
    "db": "SELECT orders",
}


def handler_for(svc, server_box):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, code, body=b"", headers=()):
            self.send_response(code)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def serve(self):
            url = urlparse(self.path)
            if url.path == "/shutdown":
                self.reply(200, b"bye")
                threading.Thread(target=server_box[0].shutdown).start()
                return
            if url.path == "/ready":
                return self.reply(200, b"ok")
            n = int(parse_qs(url.query).get("n", ["0"])[0])
            parent = extract(dict(self.headers.items()))
            with svc.tracer.start_as_current_span(
                SPAN_NAMES[svc.name], context=parent, kind=trace.SpanKind.SERVER
            ) as span:
                try:
                    svc.handle(url.path, n)
                except Exception as e:
                    return self.reply(500, str(e).encode())
                trace_id = "%032x" % span.get_span_context().trace_id
                self.reply(200, b"ok", [("X-Trace-Id", trace_id)])

        do_GET = serve
        do_POST = serve

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name", choices=sorted(SPAN_NAMES))
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ports", required=True, help="service=port,...")
    ap.add_argument("--out", required=True)
    ap.add_argument("--db-scale", type=float, default=1.0)
    ap.add_argument("--otlp", help="also export to this OTLP/HTTP traces URL")
    a = ap.parse_args()
    ports = {k: int(v) for k, v in (p.split("=") for p in a.ports.split(","))}
    svc = Service(a.name, ports, a.out, a.db_scale, a.otlp)
    box = [None]
    server = ThreadingHTTPServer(("127.0.0.1", a.port), handler_for(svc, box))
    server.daemon_threads = True
    box[0] = server
    server.serve_forever()
    server.server_close()
    svc.provider.shutdown()


if __name__ == "__main__":
    main()
