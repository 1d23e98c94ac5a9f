//! Distributed-tracing spans (OpenTelemetry OTLP JSON, Jaeger JSON) as
//! critpath records: the critical path of a distributed request.
//!
//! Each service is an SM; a span nests on a lane only inside a span that
//! called it (an ancestor), so spans of one service that overlap without
//! one calling the other (concurrent siblings, even when one lies within
//! the other's time) go on extra lanes (`SERVICE#2`, ...), and each lane is
//! in one state at a time. A span is an implicit software state (`call` at its start, `ret` at
//! its end), gaps are `idle`. Links: a parent on another lane `send`s when a
//! child starts and the child's lane `recv`s; the child `send`s when it ends
//! and the parent's lane `recv`s then (re-entering the state it is in), so a
//! parent that waits for its children has them on its path; a
//! follows-from reference links the end of one span to the start of the next.
//!
//! A file may hold several requests (trace ids): [`read_requests`] groups
//! the spans by trace id and builds the records of one request at a time
//! ([`Requests`]); [`read`] puts them all on one timeline.
//!
//! The document is read as a stream (a plain file in place: `mapped.rs`),
//! one span at a time, and the spans are
//! grouped by trace id with an external sort ([`crate::extsort`]): a file
//! of many requests needs memory for its largest request, not for the file
//! (one timeline of the whole file needs all its spans). A span that cannot
//! be used (no id, no start or end time) is reported with its place in the
//! document, its line and the field, and skipped; a reference that is not a
//! span id is reported and dropped.

mod aside;
mod build;
mod cycles;
mod docs;
mod ids;
mod lanes;
mod mapped;
mod open;
mod otlp_json;
mod outlive;
mod proto;
mod repeats;
mod requests;
mod sanity;
mod shared;
mod sniff;
mod tree;
mod zipkin;

pub use ids::normalize as normalize_id;
pub use requests::Requests;
pub use sanity::FileSanity;

use crate::extsort::{self, disk_error, ExtSort};
use crate::json::{shown, Imported, LineCounter, Position, Problems};
use critpath_trace::{CutNames, Location, ReadError};
use otlp_json::OtlpNode;
use serde::de::{
    DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

const KIND: &str = "OpenTelemetry/Jaeger/Zipkin JSON spans";

/// The first bytes looked at to tell protobuf from JSON.
const HEAD: usize = 8192;

/// Spans kept in memory before the grouping by trace id spills (about
/// 300 bytes each: some 40 MB).
const SPAN_BUDGET: usize = 1 << 17;

/// A span; spans sort by request, then document order.
#[derive(Clone, Debug, Default)]
struct Span {
    /// The request (trace id); empty when the span names none.
    trace: String,
    /// The span's place in the document.
    order: u64,
    id: String,
    parent: Option<String>,
    follows: Vec<String>,
    /// The service (Jaeger: the process id until the trace's processes are
    /// read).
    service: String,
    name: String,
    start: u64,
    end: u64,
    /// A client span (OTLP kind 3, Jaeger tag `span.kind=client`): a call
    /// to another service, which should have a server span as its child.
    client: bool,
}

impl PartialEq for Span {
    fn eq(&self, o: &Self) -> bool {
        (&self.trace, self.order) == (&o.trace, o.order)
    }
}
impl Eq for Span {}
impl PartialOrd for Span {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Span {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (&self.trace, self.order).cmp(&(&o.trace, o.order))
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An id (trace, span, reference) in lowercase hex ([`ids::normalize`]).
fn id_text(v: &Value) -> Option<String> {
    text(v).map(|s| ids::normalize(&s))
}

fn nanos(v: &Value) -> Option<u64> {
    let n = match v {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }?;
    (n <= i64::MAX as u64).then_some(n)
}

/// An OTLP span `kind` of a client: 3, or `SPAN_KIND_CLIENT` as the
/// protobuf JSON mapping writes enums.
fn otlp_client(kind: &Value) -> bool {
    kind.as_u64() == Some(3) || kind.as_str() == Some("SPAN_KIND_CLIENT")
}

/// A Jaeger span tagged `span.kind` = `client`.
fn jaeger_client(sp: &Map<String, Value>) -> bool {
    let tags = sp.get("tags").and_then(Value::as_array);
    tags.into_iter().flatten().any(|t| {
        t.get("key").and_then(Value::as_str) == Some("span.kind")
            && t.get("value").and_then(Value::as_str) == Some("client")
    })
}

/// Does this JSON document look like spans (OTLP, Jaeger, Zipkin v2)?
pub fn looks_like(head: &str) -> bool {
    // A file cut short may end before a span's other keys: a trace id
    // key where no Chrome event is says enough.
    let not_chrome = !head.contains("\"ph\"") && !head.contains("\"traceEvents\"");
    let zipkin = head.trim_start().starts_with('[') && head.contains("\"traceId\"") && not_chrome;
    let jaeger = head.contains("\"traceID\"")
        && (head.contains("\"spans\"") || (head.contains("\"data\"") && not_chrome));
    head.contains("\"resourceSpans\"") || jaeger || zipkin
}

/// Does a file starting with these bytes hold OTLP protobuf spans
/// (`ExportTraceServiceRequest` messages)? From the content, or from the
/// name (`.pb`, `.binpb`, `.otlp`, `.protobuf`) when the content is not
/// JSON. `whole`: `head` is the whole file.
pub fn looks_like_protobuf(head: &[u8], whole: bool, name: &str) -> bool {
    let text = head.iter().find(|b| !b.is_ascii_whitespace());
    sniff::sniff(head, whole).is_some()
        || (sniff::named_protobuf(name) && !text.is_some_and(|&b| b == b'{' || b == b'['))
}

/// Where a span is in the document, for messages.
#[derive(Clone, Copy)]
enum At {
    Otlp(usize, &'static str, usize, usize),
    Jaeger(usize, usize),
    Zipkin(usize),
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match *self {
            At::Otlp(r, scope, s, k) => write!(f, "resourceSpans[{r}].{scope}[{s}].spans[{k}]"),
            At::Jaeger(d, k) => write!(f, "data[{d}].spans[{k}]"),
            At::Zipkin(k) => write!(f, "[{k}]"),
        }
    }
}

/// Everything gathered while streaming the spans.
struct Collector {
    pos: Position,
    problems: Problems,
    /// Spans of the Jaeger trace being read (one request), whose services
    /// are known when its `processes` are.
    pending: Vec<Span>,
    /// The service of the OTLP resource being read, once its `resource`
    /// was read.
    service: Option<String>,
    /// The services of OTLP resources whose spans came before their
    /// `resource`: by the placeholder those spans carry
    /// ([`resource_placeholder`]).
    late_services: HashMap<String, String>,
    sorted: ExtSort<Span>,
    /// Spans kept so far.
    spans: u64,
    /// The first span's trace id, and whether a span of another was kept.
    first_trace: Option<String>,
    several: bool,
    /// The document being read (JSON lines hold several).
    doc: usize,
    /// Where the span being read is (its line; its byte offset in
    /// protobuf).
    loc: Location,
    /// The file's mapping, when it is read in place ([`mapped`]).
    mapped: Option<mapped::Mapped>,
    /// Span and service names cut to the limit of a name.
    cut: CutNames,
}

impl Collector {
    /// A collector of the spans of files, the first named `first`.
    fn new(first: &str) -> Self {
        Collector {
            pos: Position::default(),
            problems: Problems::new(first, KIND),
            pending: Vec::new(),
            service: None,
            late_services: HashMap::new(),
            sorted: ExtSort::new(extsort::sort_budget(SPAN_BUDGET)).with_runs_aside(),
            spans: 0,
            first_trace: None,
            several: false,
            doc: 0,
            loc: Location::Line(1),
            mapped: None,
            cut: CutNames::default(),
        }
    }

    /// A copy of a collector that holds no span yet (`None` once it
    /// does): what it is put back to when a walk that kept spans is given
    /// up.
    fn fresh_copy(&self) -> Option<Collector> {
        let fresh = self.spans == 0 && self.pending.is_empty() && self.mapped.is_none();
        fresh.then(|| Collector {
            pos: self.pos.clone(),
            problems: self.problems.clone(),
            service: self.service.clone(),
            late_services: self.late_services.clone(),
            doc: self.doc,
            loc: self.loc.clone(),
            ..Collector::new("")
        })
    }

    /// Another copy of a fresh collector (see [`Collector::fresh_copy`]).
    fn clone_fresh(&self) -> Collector {
        self.fresh_copy().expect("a fresh collector")
    }

    /// A span whose service is known, into the grouping by request.
    fn keep(&mut self, mut span: Span) {
        self.cut.cut(&mut span.name);
        self.cut.cut(&mut span.service);
        span.order = self.spans;
        self.spans += 1;
        match &self.first_trace {
            None => self.first_trace = Some(span.trace.clone()),
            Some(first) => self.several |= *first != span.trace,
        }
        self.sorted.push(span);
    }

    /// The pending spans, their services now known.
    fn flush(&mut self) {
        for span in std::mem::take(&mut self.pending) {
            self.keep(span);
        }
    }

    fn problem(&mut self, at: At, msg: impl AsRef<str>) {
        let msg = format!("{}; skipped", msg.as_ref());
        self.problems
            .note_at(self.loc.clone(), &at.to_string(), msg);
    }

    /// A required field, reported when missing or unusable.
    fn need<T>(
        &mut self,
        v: Option<&Value>,
        at: At,
        key: &str,
        what: &str,
        get: impl Fn(&Value) -> Option<T>,
    ) -> Option<T> {
        match v {
            None => {
                self.problem(at, format!("span is missing field `{key}` ({what})"));
                None
            }
            Some(v) => {
                let got = get(v);
                if got.is_none() {
                    self.problem(at, format!("field `{key}` = {} is not {what}", shown(v)));
                }
                got
            }
        }
    }

    /// An optional span reference (`parentSpanId`, a link's `spanId`):
    /// reported and dropped when it is not a span id.
    fn reference(&mut self, v: Option<&Value>, at: At, field: &str) -> Option<String> {
        match v? {
            Value::String(s) if s.is_empty() => None,
            v => {
                let id = id_text(v);
                if id.is_none() {
                    let msg = format!("field `{field}` = {} is not a span id; the span is kept without this reference", shown(v));
                    self.problems
                        .note_at(self.loc.clone(), &at.to_string(), msg);
                }
                id
            }
        }
    }

    fn otlp_span(&mut self, node: OtlpNode, at: At) {
        if let Some(span) = self.otlp_parse(node, at) {
            self.keep(span);
        }
    }

    /// An OTLP span as critpath keeps it; `None` (reported) when it is not
    /// one.
    fn otlp_parse(&mut self, node: OtlpNode, at: At) -> Option<Span> {
        let sp = match node {
            OtlpNode::Span(sp) => sp,
            OtlpNode::Other(v) => return self.not_a_span(&v, at),
        };
        let id = self.need(sp.id.as_ref(), at, "spanId", "a span id", id_text);
        let (ns, what) = (nanos, "a time in nanoseconds");
        let start = self.need(sp.start.as_ref(), at, "startTimeUnixNano", what, ns);
        let end = self.need(sp.end.as_ref(), at, "endTimeUnixNano", what, ns);
        let parent = self.reference(sp.parent.as_ref(), at, "parentSpanId");
        let mut follows = Vec::new();
        if let Some(links) = sp.links.as_ref().and_then(Value::as_array) {
            for l in links {
                follows.extend(self.reference(l.get("spanId"), at, "links[].spanId"));
            }
        }
        let (Some(id), Some(start), Some(end)) = (id, start, end) else {
            return None;
        };
        Some(Span {
            trace: sp.trace.as_ref().and_then(id_text).unwrap_or_default(),
            order: 0,
            id,
            parent,
            follows,
            service: match (&self.service, at) {
                (Some(s), _) => s.clone(),
                (None, At::Otlp(r, ..)) => resource_placeholder(self.doc, r),
                (None, _) => String::new(),
            },
            name: match sp.name {
                Some(Value::String(s)) => s,
                _ => "?".to_string(),
            },
            start,
            end: self.end_after_start(&at.to_string(), start, end),
            client: sp.kind.as_ref().is_some_and(otlp_client),
        })
    }

    /// An OpenTelemetry span's end, no earlier than its start: one that
    /// ends before it starts is kept with no length, and reported.
    fn end_after_start(&mut self, place: &str, start: u64, end: u64) -> u64 {
        if end < start {
            let msg = format!(
                "the span ends (at {end} ns) before it starts (at {start} ns); kept with no length"
            );
            self.problems.note_at(self.loc.clone(), place, msg);
        }
        end.max(start)
    }

    /// A Jaeger or Zipkin span as an object, or reported as not one.
    fn object(&mut self, v: Value, at: At) -> Option<Map<String, Value>> {
        match v {
            Value::Object(sp) => Some(sp),
            v => self.not_a_span(&v, at),
        }
    }

    /// Reports a span that is not a JSON object.
    fn not_a_span<T>(&mut self, v: &Value, at: At) -> Option<T> {
        let msg = format!("expected a span (a JSON object), found {}", shown(v));
        self.problem(at, msg);
        None
    }

    /// A Jaeger or Zipkin span's id, start and duration (microseconds),
    /// members `keys`; each reported when missing or unusable.
    fn id_start_duration(
        &mut self,
        sp: &Map<String, Value>,
        at: At,
        [id, start, dur]: [&str; 3],
    ) -> (Option<String>, Option<u64>, Option<u64>) {
        let micros = |v: &Value| v.as_u64().filter(|&us| us <= i64::MAX as u64 / 1000);
        let id = self.need(sp.get(id), at, id, "a span id", id_text);
        let start = self.need(sp.get(start), at, start, "a time in microseconds", micros);
        let dur = self.need(sp.get(dur), at, dur, "a duration in microseconds", micros);
        (id, start, dur)
    }

    fn jaeger_span(&mut self, v: Value, at: At) {
        let Some(sp) = self.object(v, at) else {
            return;
        };
        let keys = ["spanID", "startTime", "duration"];
        let (id, start, dur) = self.id_start_duration(&sp, at, keys);
        let mut parent = None;
        let mut follows = Vec::new();
        for r in sp
            .get("references")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let child_of = r.get("refType").and_then(Value::as_str) == Some("CHILD_OF");
            match self.reference(r.get("spanID"), at, "references[].spanID") {
                Some(s) if child_of => parent = Some(s),
                Some(s) => follows.push(s),
                None => {}
            }
        }
        let (Some(id), Some(start), Some(dur)) = (id, start, dur) else {
            return;
        };
        self.pending.push(Span {
            trace: sp.get("traceID").and_then(id_text).unwrap_or_default(),
            order: 0,
            id,
            parent,
            follows,
            service: sp
                .get("processID")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            name: sp
                .get("operationName")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string(),
            start: start * 1000,
            end: start.saturating_add(dur).min(i64::MAX as u64 / 1000) * 1000,
            client: jaeger_client(&sp),
        });
    }
}

/// The lists of the document, each read one element at a time.
#[derive(Clone, Copy)]
enum List {
    Resources,
    Scopes(usize, &'static str),
    OtlpSpans(usize, &'static str, usize),
    Traces,
    JaegerSpans(usize),
    Zipkin,
}

/// One element of a list.
#[derive(Clone, Copy)]
enum Node {
    Resource(usize),
    Scope(usize, &'static str, usize),
    Span(At),
    Trace(usize),
}

struct Seed<'a, K>(&'a mut Collector, K);

impl<'de> DeserializeSeed<'de> for Seed<'_, List> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_, List> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        for i in 0.. {
            let node = match self.1 {
                List::Resources => Node::Resource(i),
                List::Scopes(r, key) => Node::Scope(r, key, i),
                List::OtlpSpans(r, key, s) => Node::Span(At::Otlp(r, key, s, i)),
                List::Traces => Node::Trace(i),
                List::JaegerSpans(d) => Node::Span(At::Jaeger(d, i)),
                List::Zipkin => Node::Span(At::Zipkin(i)),
            };
            if seq.next_element_seed(Seed(&mut *self.0, node))?.is_none() {
                break;
            }
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_, Node> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let Node::Span(at) = self.1 else {
            return d.deserialize_map(self);
        };
        if self.0.mapped.is_some() {
            let raw = <&RawValue>::deserialize(d)?;
            return self.0.mapped_span(raw, at).map_err(D::Error::custom);
        }
        self.0.loc = Location::Line(self.0.pos.line());
        match at {
            At::Otlp(..) => self.0.otlp_span(OtlpNode::deserialize(d)?, at),
            At::Jaeger(..) => self.0.jaeger_span(Value::deserialize(d)?, at),
            At::Zipkin(..) => self.0.zipkin_span(Value::deserialize(d)?, at),
        }
        Ok(())
    }
}

/// The service a span of OTLP resource `r` carries until the resource's
/// `resource` is read (it may come after the spans).
fn resource_placeholder(doc: usize, r: usize) -> String {
    format!("\u{1}resource:{doc}:{r}")
}

/// The service named by an OTLP resource's `service.name` attribute.
fn service_of(resource: &Value) -> Option<String> {
    let attrs = resource.get("attributes")?.as_array()?;
    let a = attrs
        .iter()
        .find(|a| a.get("key").and_then(Value::as_str) == Some("service.name"))?;
    Some(a.get("value")?.get("stringValue")?.as_str()?.to_string())
}

impl<'de> Visitor<'de> for Seed<'_, Node> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let c = self.0;
        let mut processes = Value::Null;
        let mut trace = None;
        while let Some(key) = map.next_key::<String>()? {
            let list = match (self.1, key.as_str()) {
                (Node::Resource(_), "resource") => {
                    let service = service_of(&map.next_value::<Value>()?);
                    c.service = Some(service.unwrap_or_else(|| "unknown_service".into()));
                    continue;
                }
                (Node::Resource(r), "scopeSpans") => List::Scopes(r, "scopeSpans"),
                (Node::Resource(r), "instrumentationLibrarySpans") => {
                    List::Scopes(r, "instrumentationLibrarySpans")
                }
                (Node::Scope(r, k, s), "spans") => List::OtlpSpans(r, k, s),
                (Node::Trace(_), "processes") => {
                    processes = map.next_value::<Value>()?;
                    continue;
                }
                (Node::Trace(d), "spans") => List::JaegerSpans(d),
                (Node::Trace(_), "traceID") => {
                    trace = id_text(&map.next_value::<Value>()?);
                    continue;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            map.next_value_seed(Seed(&mut *c, list))?;
        }
        match self.1 {
            Node::Resource(r) => {
                let service = c.service.take();
                let mut service = service.unwrap_or_else(|| "unknown_service".into());
                c.cut.cut(&mut service);
                c.late_services
                    .insert(resource_placeholder(c.doc, r), service);
            }
            Node::Trace(_) => {
                for s in &mut c.pending {
                    let name = processes.get(&s.service).and_then(|p| p.get("serviceName"));
                    s.service = name
                        .and_then(Value::as_str)
                        .unwrap_or("unknown_service")
                        .into();
                    if let Some(t) = trace.as_ref().filter(|_| s.trace.is_empty()) {
                        s.trace.clone_from(t);
                    }
                }
                c.flush();
            }
            _ => {}
        }
        Ok(())
    }
}

/// The document: an object with OTLP `resourceSpans` or Jaeger `data`,
/// or a Zipkin array of spans.
struct Doc<'a>(&'a mut Collector);

impl<'de> DeserializeSeed<'de> for Doc<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Doc<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(
            "a JSON object with `resourceSpans` (OTLP) or `data` (Jaeger), or an array of Zipkin spans",
        )
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        Seed(self.0, List::Zipkin).visit_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "resourceSpans" => map.next_value_seed(Seed(&mut *self.0, List::Resources))?,
                "data" => map.next_value_seed(Seed(&mut *self.0, List::Traces))?,
                _ => map.next_value::<IgnoredAny>().map(drop)?,
            }
        }
        Ok(())
    }
}

/// Reads OTLP or Jaeger JSON spans into records in time order, all the
/// trace ids on one timeline.
pub fn read<R: Read>(input: R, name: &str) -> Result<Imported, ReadError> {
    read_in(input, name, None)
}

/// [`read`] of the stream of the plain file at `path`, when it is one: the
/// file is then read in place (see [`read_requests_in`]).
pub fn read_in<R: Read>(
    input: R,
    name: &str,
    path: Option<PathBuf>,
) -> Result<Imported, ReadError> {
    read_requests_in(vec![(input, name.to_string(), path)])?.merged()
}

/// Reads spans (OTLP JSON or JSON lines, OTLP protobuf, Jaeger JSON,
/// Zipkin v2 JSON), grouped by request.
pub fn read_requests<R: Read>(input: R, name: &str) -> Result<Requests, ReadError> {
    read_requests_of(vec![(input, name.to_string())])
}

/// Reads several span files as one, each in any of the forms
/// [`read_requests`] reads: the spans of one trace id are one request,
/// whichever files they are in. The requests are named after the first
/// file; each problem names its own.
pub fn read_requests_of<R: Read>(inputs: Vec<(R, String)>) -> Result<Requests, ReadError> {
    read_requests_in(inputs.into_iter().map(|(r, n)| (r, n, None)).collect())
}

/// [`read_requests_of`], each input with the path of the plain file it
/// streams, when it is one: such a file is read in place (mapped), the
/// same spans with the same problems, faster.
pub fn read_requests_in<R: Read>(
    inputs: Vec<(R, String, Option<PathBuf>)>,
) -> Result<Requests, ReadError> {
    let first = inputs.first().map_or(String::new(), |i| i.1.clone());
    let mut c = Collector::new(&first);
    let mut problems = Problems::new(&first, KIND);
    let mut bytes = 0;
    for (input, name, path) in inputs {
        c.problems = Problems::new(&name, KIND);
        read_one(input, &name, path.as_deref(), &mut c)?;
        if let Some(msg) = std::mem::take(&mut c.cut).message() {
            c.problems.note_at(Location::File, "names", msg);
        }
        bytes += c.pos.bytes();
        problems.append(&mut c.problems);
        c.doc += 1;
    }
    let sorted = c.sorted.finish();
    let sorted = sorted.map_err(|e| disk_error(&first, "group the spans by request in", e))?;
    let read = requests::Read {
        late_services: c.late_services,
        problems,
        bytes,
        first_trace: c.first_trace.unwrap_or_default(),
        several: c.several,
        spans: c.spans,
    };
    Ok(Requests::new(sorted, read, &first))
}

/// Reads one file's spans into `c`; an error when it holds none.
fn read_one<R: Read>(
    input: R,
    name: &str,
    path: Option<&Path>,
    c: &mut Collector,
) -> Result<(), ReadError> {
    let mut input: Box<dyn Read + '_> = Box::new(input);
    // A stream that fails within the head (compressed data cut short) is
    // read up to the failure, which its reader then meets in place.
    let (head, failed) = crate::head::read_until_error(&mut input, HEAD);
    if let Some(e) = failed {
        if head.is_empty() {
            let msg = format!("read error: {e}");
            return Err(ReadError::new(name, Location::File, msg, true));
        }
        input = Box::new(crate::head::Failing(Some(e)));
    }
    let whole = head.len() < HEAD;
    let framing =
        looks_like_protobuf(&head, whole, name).then(|| sniff::framing_of_named(&head, whole));
    let before = c.spans;
    let in_place = match (&framing, path) {
        (None, Some(p)) => mapped::read(p, name, c)?,
        _ => false,
    };
    if !in_place {
        let (input, pos) = LineCounter::new(io::Cursor::new(head).chain(input));
        c.pos = pos;
        match framing {
            Some(framing) => proto::read(input, framing, c)?,
            None => docs::read(input, c, before)?,
        }
    }
    if c.spans == before {
        let mut msg =
            "no spans found (expected OTLP `resourceSpans`, Jaeger `data[].spans` or Zipkin spans)"
                .to_string();
        if let Some(first) = c.problems.list.first() {
            msg += &format!(" ({} problems; the first: {first})", c.problems.count());
        }
        return Err(c.problems.fatal(None, msg));
    }
    Ok(())
}
