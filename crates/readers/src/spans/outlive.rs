//! Spans outside the bounds of the span that called them, and of their
//! request. Children that end after their parent (real SDKs end a server
//! span after its response is written, so a child often ends a little
//! after the client span that called it) delay their parent's end: the
//! parent waited for the child it called, so it ends when the last of its
//! children does, and its own parent may be delayed in turn. The request's
//! root span is not: the request ends with it, so no path outlasts it, and
//! what would end after it is cut at its end (descendants after their
//! parents); a descendant that started inside its parent but after the
//! cut (its parent called it after the root's end) has no time in the
//! request: it is cut away whole, left with no length at the cut. A child
//! that starts at or after its parent's end (a message handled later) is
//! left as it is. Children that start before their
//! parent (clocks that disagree) are moved to its start. The request's
//! root span ([`request_root`]) ends its path; the spans that started
//! after its end ([`after_root`]) are not on it.

use super::Span;
use critpath_trace::{Diagnostic, DiagnosticKind};
use rustc_hash::FxHashMap;

/// Spans that left their parent's bounds (ended after it, or started
/// before it): how many, by how much at most, and the pair that was
/// furthest apart (`service: name` of the child, then of the parent).
#[derive(Debug, Default)]
pub(super) struct Strays {
    pub count: u64,
    /// The largest distance, in ns.
    pub max: u64,
    pub worst: Option<(String, String)>,
    /// Spans cut away whole (started after the cut their parent was cut
    /// at), and the first of them.
    pub cut: u64,
    pub first_cut: Option<String>,
}

/// Children that ended after their parent.
pub(super) type Outlived = Strays;
/// Children that started before their parent.
pub(super) type Early = Strays;

impl Strays {
    /// Counts a child `by` ns outside its parent; `pair` names them.
    fn note(&mut self, by: u64, pair: impl FnOnce() -> (String, String)) {
        self.count += 1;
        if by > self.max || self.worst.is_none() {
            self.max = by;
            self.worst = Some(pair());
        }
    }

    /// Counts a span cut away whole; `span` names it.
    fn cut_away(&mut self, span: impl FnOnce() -> String) {
        self.cut += 1;
        if self.first_cut.is_none() {
            self.first_cut = Some(span());
        }
    }

    /// The finding of `kind`, when a span strayed: `say` words it from
    /// the count, the largest distance and the pair.
    fn finding(
        &self,
        kind: DiagnosticKind,
        say: impl FnOnce(u64, u64, &str, &str) -> String,
    ) -> Option<Diagnostic> {
        let (child, parent) = self.worst.as_ref()?;
        let msg = say(self.count, self.max, child, parent);
        Some(stray_finding(kind, msg, self.count, self.max))
    }

    /// The `child-outlives-parent` finding, when a span ended after its
    /// parent.
    pub(super) fn outlived(&self) -> Option<Diagnostic> {
        self.finding(DiagnosticKind::ChildOutlivesParent, |n, max, child, parent| {
            let cut = cut_away(self.cut, self.first_cut.as_deref());
            format!("{n} spans ended after the parent span that called them (largest overshoot {max} ns: {child} ended after {parent}); {SETTLED}{cut}")
        })
    }

    /// The `after-root` finding, when a span started after the end of the
    /// request's root span (on lane `lane`); the distance is how far past
    /// the root's end a span ended.
    pub(super) fn after_root(&self, lane: &str) -> Option<Diagnostic> {
        self.finding(DiagnosticKind::AfterRoot, |n, max, span, root| {
            format!("{n} spans started after the request's root span ({root}) ended, the furthest ending {max} ns after it ({span}): {AFTER_ROOT} (--to {lane}), so they are not on it; --to SERVICE ends it with one of them")
        })
    }

    /// The `clock-offset` finding, when a span started before its parent.
    pub(super) fn early(&self) -> Option<Diagnostic> {
        self.finding(DiagnosticKind::ClockOffset, |n, max, child, parent| {
            format!("{n} spans started before the parent span that called them (largest skew {max} ns: {child} before {parent}): {MOVED}")
        })
    }
}

/// What the finding says was done with spans that ended after their
/// parent.
pub(super) const SETTLED: &str = "each delayed its parent's end (the parent waiting for it), up to the end of the request's root span, where what went past it was cut";

/// What the `child-outlives-parent` finding adds of the `n` spans cut
/// away whole (`first` one of them), if any.
pub(super) fn cut_away(n: u64, first: Option<&str>) -> String {
    match (n, first) {
        (0, _) => String::new(),
        (n, Some(span)) => format!("; {n} spans called after that end (e.g. {span}) were cut away whole, with no time in the request"),
        (n, None) => format!("; {n} spans called after that end were cut away whole, with no time in the request"),
    }
}

/// What the `clock-offset` finding says was done with spans that started
/// before their parent.
pub(super) const MOVED: &str =
    "the services' clocks disagree; each was moved to its parent's start";

/// What the `after-root` finding says of the spans after the root's end.
pub(super) const AFTER_ROOT: &str = "the request's path ends with its root span";

/// The request's root span: of the spans without a parent reference (an
/// orphan, whose parent is missing, does not count), the first to start,
/// the longest of those. `None` when the spans are of several requests,
/// when every span names a parent (the root was not exported), or when
/// another span without a parent starts inside the root and ends after
/// it (two overlapping roots: no one span is the request).
pub(super) fn request_root(spans: &[Span]) -> Option<usize> {
    let trace = &spans.first()?.trace;
    if spans.iter().any(|s| &s.trace != trace) {
        return None;
    }
    let key = |s: &Span| (s.start, std::cmp::Reverse(s.end));
    let root = (0..spans.len())
        .filter(|&i| spans[i].parent.is_none())
        .min_by(|&a, &b| {
            key(&spans[a])
                .cmp(&key(&spans[b]))
                .then(spans[a].id.cmp(&spans[b].id))
        })?;
    let (start, end) = (spans[root].start, spans[root].end);
    let overlaps =
        |s: &Span| s.parent.is_none() && s.start >= start && s.start < end && s.end > end;
    (!spans.iter().any(overlaps)).then_some(root)
}

/// The spans that started at or after the end of `root` (and ended after
/// it), by their settled bounds `at` ([`bounds`]): how many, the furthest
/// past the root's end, and that span with the root; `label` names a span.
pub(super) fn after_root(
    spans: &[Span],
    at: &[(u64, u64)],
    root: usize,
    label: impl Fn(&Span) -> String,
) -> Strays {
    let end = at[root].1;
    let mut after = Strays::default();
    for (s, &(start, stop)) in spans.iter().zip(at) {
        if start >= end && stop > end {
            after.note(stop - end, || (label(s), label(&spans[root])));
        }
    }
    after
}

/// A finding of `count` spans out of bounds, the furthest by `max` ns.
pub(super) fn stray_finding(kind: DiagnosticKind, msg: String, count: u64, max: u64) -> Diagnostic {
    let mut d = Diagnostic::new(kind, msg).count(count);
    d.ns = Some(max);
    d
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

/// Each span's parent, and the spans in the order of their depth below
/// their root (roots first).
fn by_depth(spans: &[Span]) -> (Vec<Option<usize>>, Vec<usize>) {
    let parent = parents(spans);
    let depth = depths(&parent);
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| depth[i]);
    (parent, order)
}

/// Settles the bounds of spans that left their parent's: see [`bounds`].
pub(super) fn cut_at_parents(spans: &mut [Span]) -> (Outlived, Early) {
    let (settled, outlived, early) = bounds(spans, |s| label(&s.service, &s.name));
    for (s, (start, end)) in spans.iter_mut().zip(settled) {
        (s.start, s.end) = (start, end);
    }
    (outlived, early)
}

/// Each span's settled start and end, and what was found settling them,
/// the spans untouched; `label` names a span in the findings.
///
/// First, parents first, a span that started before its parent is moved
/// to the parent's start (its end too, if it ended before it): the
/// services' clocks disagree, since a child cannot start before its
/// call, and no path should start before the request's root span. Then,
/// deepest first, a child that started inside its parent (before the
/// parent's own end) and ended after it delays the parent's end, unless
/// the parent is a root; then, parents first, whatever ends after its
/// parent's settled end (under a root, past the root's end) is cut there,
/// and what started after that end (called, after the root's end, by a
/// span cut there) is cut away whole: it ends where it starts, at the cut.
pub(super) fn bounds(
    spans: &[Span],
    label: impl Fn(&Span) -> String,
) -> (Vec<(u64, u64)>, Outlived, Early) {
    let (parent, order) = by_depth(spans);
    let mut at: Vec<(u64, u64)> = spans.iter().map(|s| (s.start, s.end)).collect();
    let mut early = Early::default();
    for &i in &order {
        let Some(p) = parent[i] else { continue };
        let start = at[p].0;
        if at[i].0 < start {
            early.note(start - at[i].0, || (label(&spans[i]), label(&spans[p])));
            at[i] = (start, at[i].1.max(start));
        }
    }
    // The spans' own bounds, clocks settled: the finding counts spans by
    // their own ends, not by the delays their children made.
    let own = at.clone();
    let inside = |i: usize, p: usize| own[i].0 < own[p].1;
    let mut outlived = Outlived::default();
    for &i in order.iter().rev() {
        let Some(p) = parent[i].filter(|&p| inside(i, p)) else {
            continue;
        };
        if own[i].1 > own[p].1 {
            let over = own[i].1 - own[p].1;
            outlived.note(over, || (label(&spans[i]), label(&spans[p])));
        }
        if parent[p].is_some() && at[i].1 > at[p].1 {
            at[p].1 = at[i].1;
        }
    }
    for &i in &order {
        let Some(p) = parent[i].filter(|&p| inside(i, p)) else {
            continue;
        };
        let end = at[p].1;
        if at[i].0 >= end && own[i].1 > end {
            outlived.cut_away(|| label(&spans[i]));
            at[i].0 = end;
        }
        at[i].1 = at[i].1.min(end);
    }
    (at, outlived, early)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: &str, parent: Option<&str>, service: &str, (start, end): (u64, u64)) -> Span {
        Span {
            trace: "t".into(),
            id: id.into(),
            parent: parent.map(Into::into),
            service: service.into(),
            name: id.into(),
            start,
            end,
            ..Span::default()
        }
    }

    #[test]
    fn what_a_span_cut_at_the_roots_end_called_after_it_is_cut_away_whole() {
        // root 0-100; q 10-150 (cut at 100) called g 120-140 after the
        // root's end (g's child h 125-130 too) and s 90-140 before it.
        let spans = [
            span("r", None, "fe", (0, 100)),
            span("q", Some("r"), "db", (10, 150)),
            span("g", Some("q"), "cache", (120, 140)),
            span("h", Some("g"), "cache", (125, 130)),
            span("s", Some("q"), "cache", (90, 140)),
        ];
        let (at, outlived, early) = bounds(&spans, |s| label(&s.service, &s.name));
        assert_eq!(at, [(0, 100), (10, 100), (100, 100), (100, 100), (90, 100)]);
        assert!(at.iter().all(|&(start, end)| start <= end));
        assert_eq!((outlived.count, outlived.max), (1, 50));
        assert_eq!(
            (outlived.cut, outlived.first_cut.as_deref()),
            (2, Some("cache: g"))
        );
        assert_eq!(early.count, 0);
        let msg = outlived.outlived().map(|d| d.message).unwrap_or_default();
        assert!(
            msg.contains("2 spans called after that end (e.g. cache: g) were cut away"),
            "{msg}"
        );
        // Nothing is left after the root's end to count as after it.
        assert_eq!(after_root(&spans, &at, 0, |s| s.name.clone()).count, 0);
    }
}
