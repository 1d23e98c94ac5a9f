//! The requests being received: spans grouped by trace id until each is
//! complete (its root span ended, then a quiet period with no span of it),
//! within a limit on how many are open at once.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What the receiver took in and wrote out.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub spans: u64,
    /// Spans refused in a 200's partial success (no or a bad trace id).
    pub rejected_spans: u64,
    /// Bodies refused (400, 413, 415).
    pub refused_bodies: u64,
    /// Exports answered 503 because too many requests were open.
    pub busy: u64,
    pub requests_written: u64,
    /// Requests written without their root span having ended.
    pub incomplete: u64,
    pub files: u64,
}

/// One request being received.
struct Open {
    /// Its spans, under their resources and scopes as they came.
    parts: Vec<ResourceSpans>,
    root_ended: bool,
    first: Instant,
    last: Instant,
}

/// See the module's documentation.
pub struct Store {
    open: HashMap<Vec<u8>, Open>,
    quiet: Duration,
    max_age: Duration,
    max_open: usize,
    pub stats: Stats,
}

/// A completed request: the export that holds exactly its spans.
pub type Request = ExportTraceServiceRequest;

/// What became of one export.
pub enum Taken {
    /// Accepted, but for `rejected` spans (and why).
    Accepted { rejected: i64, why: String },
    /// Refused whole: it would open more requests than the limit.
    Busy,
}

impl Store {
    pub fn new(quiet: Duration, max_age: Duration, max_open: usize) -> Self {
        Store {
            open: HashMap::new(),
            quiet,
            max_age,
            max_open,
            stats: Stats::default(),
        }
    }

    pub fn open_requests(&self) -> usize {
        self.open.len()
    }

    /// Takes the spans of one export, at `now`.
    pub fn take(&mut self, req: ExportTraceServiceRequest, now: Instant) -> Taken {
        let (mut rejected, mut new) = (0i64, 0usize);
        let mut seen: Vec<&[u8]> = Vec::new();
        for s in req
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans)
        {
            if !good_id(&s.trace_id) {
                rejected += 1;
            } else if !self.open.contains_key(&s.trace_id) && !seen.contains(&&s.trace_id[..]) {
                seen.push(&s.trace_id);
                new += 1;
            }
        }
        if new > 0 && self.open.len() + new > self.max_open {
            self.stats.busy += 1;
            return Taken::Busy;
        }
        for rs in req.resource_spans {
            for ss in rs.scope_spans {
                let mut by_trace: Vec<(Vec<u8>, Vec<Span>)> = Vec::new();
                for span in ss.spans.into_iter().filter(|s| good_id(&s.trace_id)) {
                    match by_trace.iter_mut().find(|(id, _)| *id == span.trace_id) {
                        Some((_, v)) => v.push(span),
                        None => by_trace.push((span.trace_id.clone(), vec![span])),
                    }
                }
                for (id, spans) in by_trace {
                    self.stats.spans += spans.len() as u64;
                    let o = self.open.entry(id).or_insert_with(|| Open {
                        parts: Vec::new(),
                        root_ended: false,
                        first: now,
                        last: now,
                    });
                    o.last = now;
                    o.root_ended |= spans.iter().any(|s| s.parent_span_id.is_empty());
                    o.parts.push(ResourceSpans {
                        resource: rs.resource.clone(),
                        scope_spans: vec![ScopeSpans {
                            scope: ss.scope.clone(),
                            spans,
                            schema_url: ss.schema_url.clone(),
                        }],
                        schema_url: rs.schema_url.clone(),
                    });
                }
            }
        }
        self.stats.rejected_spans += rejected as u64;
        let why = match rejected {
            0 => String::new(),
            n => format!("{n} span(s) without a 16-byte, non-zero trace id"),
        };
        Taken::Accepted { rejected, why }
    }

    /// Takes back an export of a previous receiver's journal, whatever the
    /// limit.
    pub fn restore(&mut self, req: ExportTraceServiceRequest, now: Instant) {
        let limit = std::mem::replace(&mut self.max_open, usize::MAX);
        let spans = self.stats.spans;
        self.take(req, now);
        // Received before, by the receiver that journaled them.
        self.stats.spans = spans;
        self.max_open = limit;
    }

    /// The open requests, each as an export of its spans so far.
    pub fn snapshot(&self) -> Vec<Request> {
        (self.open.values())
            .map(|o| ExportTraceServiceRequest {
                resource_spans: o.parts.clone(),
            })
            .collect()
    }

    /// The requests complete at `now` (every open one with `all`), taken
    /// out of the store.
    pub fn due(&mut self, now: Instant, all: bool) -> Vec<Request> {
        let (quiet, max_age) = (self.quiet, self.max_age);
        let done = |o: &Open| {
            all || (o.root_ended && now.duration_since(o.last) >= quiet)
                || now.duration_since(o.first) >= max_age
        };
        let ids: Vec<Vec<u8>> = (self.open.iter())
            .filter(|(_, o)| done(o))
            .map(|(id, _)| id.clone())
            .collect();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let o = self.open.remove(&id).expect("listed");
            self.stats.incomplete += u64::from(!o.root_ended);
            out.push(ExportTraceServiceRequest {
                resource_spans: o.parts,
            });
        }
        out
    }
}

/// A trace id the OTLP specification allows: 16 bytes, not all zero.
fn good_id(id: &[u8]) -> bool {
    id.len() == 16 && id.iter().any(|&b| b != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn export(spans: &[(u8, u8, bool)]) -> ExportTraceServiceRequest {
        let spans = spans
            .iter()
            .map(|&(trace, span, root)| Span {
                trace_id: vec![trace; 16],
                span_id: vec![span; 8],
                parent_span_id: if root { Vec::new() } else { vec![1; 8] },
                ..Default::default()
            })
            .collect();
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn a_request_completes_after_its_root_and_a_quiet_period() {
        let t0 = Instant::now();
        let quiet = Duration::from_millis(100);
        let mut s = Store::new(quiet, Duration::from_secs(60), 10);
        assert!(matches!(
            s.take(export(&[(1, 2, false), (2, 3, false)]), t0),
            Taken::Accepted { rejected: 0, .. }
        ));
        assert!(s.due(t0 + quiet * 2, false).is_empty(), "no root yet");
        s.take(export(&[(1, 1, true)]), t0 + quiet);
        assert!(
            s.due(t0 + quiet + quiet / 2, false).is_empty(),
            "still quiet"
        );
        let done = s.due(t0 + quiet * 2, false);
        assert_eq!(done.len(), 1);
        let spans: usize = done[0]
            .resource_spans
            .iter()
            .map(|r| r.scope_spans[0].spans.len())
            .sum();
        assert_eq!(spans, 2);
        assert_eq!(s.due(t0, true).len(), 1, "the rest, on shutdown");
        assert_eq!(s.stats.incomplete, 1);
    }

    #[test]
    fn bad_ids_are_rejected_and_the_limit_answers_busy() {
        let t0 = Instant::now();
        let mut s = Store::new(Duration::ZERO, Duration::from_secs(60), 2);
        let mut bad = export(&[(0, 1, true), (3, 1, true)]);
        bad.resource_spans[0].scope_spans[0].spans[1]
            .trace_id
            .truncate(4);
        assert!(matches!(
            s.take(bad, t0),
            Taken::Accepted { rejected: 2, .. }
        ));
        assert!(matches!(
            s.take(export(&[(1, 1, true), (2, 1, true)]), t0),
            Taken::Accepted { .. }
        ));
        assert!(matches!(s.take(export(&[(3, 1, true)]), t0), Taken::Busy));
        // Spans of requests already open are always taken.
        assert!(matches!(
            s.take(export(&[(1, 2, false)]), t0),
            Taken::Accepted { .. }
        ));
        assert_eq!(s.due(t0, false).len(), 2);
        assert!(matches!(
            s.take(export(&[(3, 1, true)]), t0),
            Taken::Accepted { .. }
        ));
    }
}
