//! Children that end after their parent. A parent span ends when it has
//! its answer, yet real SDKs end a server span after its response is
//! written, so the child often ends a little after the client span that
//! called it. Such a child is cut at its parent's end (its descendants
//! after it): the parent cannot have waited past its own end, and no path
//! outlasts the request's root span. A child that starts at or after its
//! parent's end (a message handled later) is left as it is.

use super::Span;
use critpath_trace::{Diagnostic, DiagnosticKind};
use rustc_hash::FxHashMap;

/// What the cutting found.
#[derive(Debug, Default)]
pub(super) struct Outlived {
    /// Spans cut at their parent's end.
    pub count: u64,
    /// The largest overshoot, in ns, and the child and parent it was
    /// between (`service: name`).
    pub max: u64,
    pub worst: Option<(String, String)>,
}

impl Outlived {
    /// The `child-outlives-parent` diagnostic, when a span was cut.
    pub(super) fn diagnostic(&self) -> Option<Diagnostic> {
        let (child, parent) = self.worst.as_ref()?;
        let mut d = Diagnostic::new(
            DiagnosticKind::ChildOutlivesParent,
            format!(
                "{} spans ended after the parent span that called them (largest overshoot {} ns: {child} ended after {parent}); each was cut at its parent's end, when the parent had its answer",
                self.count, self.max
            ),
        )
        .count(self.count);
        d.ns = Some(self.max);
        Some(d)
    }
}

/// A span as a finding names it: `service: name`.
pub(super) fn label(service: &str, name: &str) -> String {
    format!("{service}: {name}")
}

/// Each span's place in `spans`, by its id.
pub(super) fn id_index(spans: &[Span]) -> FxHashMap<&str, usize> {
    spans
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect()
}

/// Each span's parent in `spans`, by index.
pub(super) fn parents(spans: &[Span]) -> Vec<Option<usize>> {
    parents_in(spans, &id_index(spans))
}

/// [`parents`], with the spans' [`id_index`].
pub(super) fn parents_in(spans: &[Span], index: &FxHashMap<&str, usize>) -> Vec<Option<usize>> {
    spans
        .iter()
        .map(|s| s.parent.as_deref().and_then(|p| index.get(p).copied()))
        .collect()
}

/// Each span's depth below its root; a span on a cycle of parents counts
/// as a root.
pub(super) fn depths(parent: &[Option<usize>]) -> Vec<usize> {
    const UNKNOWN: usize = usize::MAX;
    const VISITING: usize = usize::MAX - 1;
    let mut depth = vec![UNKNOWN; parent.len()];
    let mut chain = Vec::new();
    for i in 0..parent.len() {
        let mut j = Some(i);
        while let Some(k) = j.filter(|&k| depth[k] == UNKNOWN) {
            depth[k] = VISITING;
            chain.push(k);
            j = parent[k];
        }
        let mut d = match j {
            Some(k) if depth[k] != VISITING => depth[k] + 1,
            _ => 0,
        };
        while let Some(k) = chain.pop() {
            depth[k] = d;
            d += 1;
        }
    }
    depth
}

/// Cuts every span that started inside its parent and ended after it at
/// the parent's end, parents first.
pub(super) fn cut_at_parents(spans: &mut [Span]) -> Outlived {
    let mut ends: Vec<u64> = spans.iter().map(|s| s.end).collect();
    let out = cut_ends(spans, &mut ends, |s| label(&s.service, &s.name));
    for (s, end) in spans.iter_mut().zip(ends) {
        s.end = end;
    }
    out
}

/// What [`cut_at_parents`] finds and the ends it leaves (`ends`, the
/// spans' own at first), the spans untouched; `label` names a span in the
/// finding.
pub(super) fn cut_ends(
    spans: &[Span],
    ends: &mut [u64],
    label: impl Fn(&Span) -> String,
) -> Outlived {
    let parent = parents(spans);
    let depth = depths(&parent);
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| depth[i]);
    let mut out = Outlived::default();
    for i in order {
        let Some(p) = parent[i] else { continue };
        let end = ends[p];
        if spans[i].start < end && ends[i] > end {
            let over = ends[i] - end;
            ends[i] = end;
            out.count += 1;
            if over > out.max || out.worst.is_none() {
                out.max = over;
                out.worst = Some((label(&spans[i]), label(&spans[p])));
            }
        }
    }
    out
}
