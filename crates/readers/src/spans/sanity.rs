//! Signs that trace context was lost between services, per request and
//! over a file (`span-context` diagnostics): orphan spans (their parent id
//! is in no span of the trace), client spans with no child in another
//! service (the callee is not instrumented, or did not extract the
//! context), and, over a file of several services, requests that hold one
//! service only (the propagation headers were lost, so each service starts
//! traces of its own). Over a file, also the children that ended after
//! or started before their parent and the spans that started after their
//! request's root span ended ([`super::outlive`]).

use super::outlive::{cut_away, stray_finding, Strays, AFTER_ROOT, MOVED, SETTLED};
use super::repeats::Repeats;
use super::Span;
use critpath_trace::{Diagnostic, DiagnosticKind};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeSet;

/// Examples named in a message.
const EXAMPLES: usize = 3;

/// What one request's spans show.
#[derive(Debug, Default)]
pub(super) struct Findings<'a> {
    /// The services of the request, sorted, each once.
    pub services: Vec<&'a str>,
    /// Orphan spans (`service: name`).
    pub orphans: Vec<String>,
    /// Client spans with no child in another service.
    pub lonely_clients: Vec<String>,
}

/// The findings of one request's spans; `service` gives a span's final
/// service name.
pub(super) fn check<'a>(spans: &'a [Span], service: impl Fn(&'a Span) -> &'a str) -> Findings<'a> {
    let mut served: FxHashSet<&str> = FxHashSet::default();
    let by_id: FxHashMap<&str, &Span> = spans.iter().map(|s| (s.id.as_str(), s)).collect();
    let mut f = Findings::default();
    for s in spans {
        f.services.push(service(s));
        let Some(p) = s.parent.as_deref() else {
            continue;
        };
        match by_id.get(p) {
            None if !is_span_id(p) => f.orphans.push(format!(
                "{}: {} (its parent id {p:?} is not a valid span id)",
                service(s),
                s.name
            )),
            None => f.orphans.push(format!("{}: {}", service(s), s.name)),
            Some(ps) if service(ps) != service(s) => {
                served.insert(p);
            }
            Some(_) => {}
        }
    }
    f.services.sort_unstable();
    f.services.dedup();
    for s in spans.iter().filter(|s| s.client) {
        if !served.contains(s.id.as_str()) {
            f.lonely_clients.push(format!("{}: {}", service(s), s.name));
        }
    }
    f
}

/// Could `id` (as [`super::ids::normalize`] leaves it) be a span id: hex
/// of at most 8 bytes (Jaeger drops leading zeros)? The other ids of a
/// file are taken as they are; a reference that is not one is named.
fn is_span_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 16 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

fn examples(list: &[String]) -> String {
    let mut shown: Vec<&str> = list.iter().take(EXAMPLES).map(String::as_str).collect();
    shown.dedup();
    let more = if list.len() > EXAMPLES { ", ..." } else { "" };
    format!("{}{more}", shown.join(", "))
}

impl Findings<'_> {
    /// The diagnostics of one request (orphans, lonely clients).
    pub(super) fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        if !self.orphans.is_empty() {
            let n = self.orphans.len() as u64;
            out.push(
                Diagnostic::new(
                    DiagnosticKind::SpanContext,
                    format!(
                        "{n} orphan spans: their parent span is not in the trace (e.g. {}); they start the path of their own, not waited for: the caller's span was lost or is in another file",
                        examples(&self.orphans)
                    ),
                )
                .count(n),
            );
        }
        if !self.lonely_clients.is_empty() {
            let n = self.lonely_clients.len() as u64;
            out.push(
                Diagnostic::new(
                    DiagnosticKind::SpanContext,
                    format!(
                        "{n} client spans have no server span of another service as their child (e.g. {}): the callee is not instrumented or did not extract the trace context, so its time stays in the client span",
                        examples(&self.lonely_clients)
                    ),
                )
                .count(n),
            );
        }
        out
    }
}

/// The findings over a file's requests.
#[derive(Debug, Default)]
pub struct FileSanity {
    services: BTreeSet<String>,
    requests: u64,
    /// Requests of one service: how many, per service, and example ids.
    one_service: u64,
    one_service_ids: Vec<String>,
    orphans: (u64, u64, Vec<String>),
    lonely: (u64, u64, Vec<String>),
    /// Children that ended after their parent.
    pub(super) outlived: StrayTally,
    /// Spans that started after their request's root span ended.
    pub(super) after_root: StrayTally,
    /// Spans that started before their parent, moved to its start.
    pub(super) early: StrayTally,
    /// Spans given again, or reusing another's id, dropped.
    pub(super) repeats: Repeats,
    /// Spans on cycles of parent references.
    pub(super) cycles: Cycles,
}

/// Spans on cycles of parent references over a file's requests: how many,
/// in how many requests, and the first request's finding.
#[derive(Debug, Default)]
pub(super) struct Cycles {
    count: u64,
    requests: u64,
    first: Option<String>,
}

impl Cycles {
    /// Adds request `trace`'s finding, if it has one.
    pub(super) fn add(&mut self, trace: &str, found: Option<Diagnostic>) {
        let Some(d) = found else { return };
        self.count += d.count.unwrap_or(0);
        self.requests += 1;
        self.first
            .get_or_insert_with(|| format!("in {trace}: {}", d.message));
    }

    fn finding(&self) -> Option<Diagnostic> {
        let first = self.first.as_ref()?;
        let (n, reqs) = (self.count, self.requests);
        let msg = format!("{n} spans in {reqs} requests are on cycles of parent references, each taken as having no parent (the first {first})");
        Some(Diagnostic::new(DiagnosticKind::SpanContext, msg).count(n))
    }
}

/// Spans that strayed out of bounds over a file's requests: how many, in
/// how many requests, the largest distance and where.
#[derive(Debug, Default)]
pub(super) struct StrayTally {
    count: u64,
    requests: u64,
    max: u64,
    worst: String,
    /// Spans cut away whole, and the first, with its request.
    cut: u64,
    first_cut: Option<String>,
}

impl StrayTally {
    /// Adds request `trace`'s spans out of bounds; `rel` says how the pair
    /// furthest apart stand (the span `rel` the one it strayed from).
    pub(super) fn add(&mut self, trace: &str, o: &Strays, rel: &str) {
        if o.count == 0 {
            return;
        }
        self.count += o.count;
        self.requests += 1;
        self.cut += o.cut;
        if let (None, Some(span)) = (&self.first_cut, &o.first_cut) {
            self.first_cut = Some(format!("{span} in {trace}"));
        }
        if o.max >= self.max {
            if let Some((span, bound)) = &o.worst {
                self.max = o.max;
                self.worst = format!("{span} {rel} {bound} in {trace}");
            }
        }
    }

    /// The finding of `kind`, when a span strayed: `say` words it from
    /// the count, the number of requests, the largest distance and where.
    fn finding(
        &self,
        kind: DiagnosticKind,
        say: impl FnOnce(u64, u64, u64, &str) -> String,
    ) -> Option<Diagnostic> {
        if self.count == 0 {
            return None;
        }
        let msg = say(self.count, self.requests, self.max, &self.worst);
        Some(stray_finding(kind, msg, self.count, self.max))
    }
}

impl FileSanity {
    /// Adds request `trace`'s findings.
    pub(super) fn add(&mut self, trace: &str, f: Findings) {
        self.requests += 1;
        if f.services.len() == 1 {
            self.one_service += 1;
            if self.one_service_ids.len() < EXAMPLES {
                let svc = f.services[0];
                self.one_service_ids.push(format!("{trace} ({svc})"));
            }
        }
        for svc in &f.services {
            if !self.services.contains(*svc) {
                self.services.insert(svc.to_string());
            }
        }
        for (acc, list) in [
            (&mut self.orphans, f.orphans),
            (&mut self.lonely, f.lonely_clients),
        ] {
            if list.is_empty() {
                continue;
            }
            acc.0 += list.len() as u64;
            acc.1 += 1;
            if acc.2.len() < EXAMPLES {
                acc.2.push(format!("{} in {trace}", list[0]));
            }
        }
    }

    /// The file's diagnostics: `input-skipped` (spans given again),
    /// `child-outlives-parent`, `after-root`, `clock-offset` and
    /// `span-context`.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut out = self.repeats.diagnostics();
        out.extend(self.cycles.finding());
        let cut = cut_away(self.outlived.cut, self.outlived.first_cut.as_deref());
        out.extend(self.outlived.finding(DiagnosticKind::ChildOutlivesParent, |n, reqs, max, worst| {
            format!("{n} spans in {reqs} requests ended after the parent span that called them (largest overshoot {max} ns: {worst}); {SETTLED}{cut}")
        }));
        out.extend(self.after_root.finding(DiagnosticKind::AfterRoot, |n, reqs, max, worst| {
            format!("{n} spans in {reqs} requests started after their request's root span ended (the furthest ending {max} ns after it: {worst}): {AFTER_ROOT}, so they are not on it")
        }));
        out.extend(self.early.finding(DiagnosticKind::ClockOffset, |n, reqs, max, worst| {
            format!("{n} spans in {reqs} requests started before the parent span that called them (largest skew {max} ns: {worst}): {MOVED}")
        }));
        let d = |n: u64, msg: String| Diagnostic::new(DiagnosticKind::SpanContext, msg).count(n);
        if self.services.len() > 1 && self.one_service > 0 {
            out.push(d(
                self.one_service,
                format!(
                    "{} of {} requests hold spans of one service only while the file has {} services (e.g. {}): the trace context was probably not propagated between services, so their calls are separate requests and nothing waits for them",
                    self.one_service,
                    self.requests,
                    self.services.len(),
                    self.one_service_ids.join(", ")
                ),
            ));
        }
        let (n, reqs, ex) = &self.orphans;
        if *n > 0 {
            out.push(d(
                *n,
                format!(
                    "{n} orphan spans in {reqs} requests: their parent span is not in the trace (e.g. {}); nothing waits for them",
                    ex.join("; ")
                ),
            ));
        }
        let (n, reqs, ex) = &self.lonely;
        if *n > 0 {
            out.push(d(
                *n,
                format!(
                    "{n} client spans in {reqs} requests have no server span of another service as their child (e.g. {}): the callee is not instrumented or did not extract the trace context",
                    ex.join("; ")
                ),
            ));
        }
        out
    }
}
