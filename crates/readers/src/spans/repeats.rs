//! Spans given more than once: the same span (trace id and span id) sent
//! again by an exporter's retry, or a collector receiving an export twice,
//! is dropped, its first copy kept; a different span that reuses another's
//! id in the same trace is dropped too, since a reference to that id could
//! not tell the two apart. Both are counted (`input-skipped`). A request's
//! spans are looked at together, so the memory is that of one request.

use super::Span;
use critpath_trace::{Diagnostic, DiagnosticKind};
use rustc_hash::FxHashMap;

/// The spans dropped as repeats.
#[derive(Debug, Default)]
pub(super) struct Repeats {
    /// Copies of a span already given.
    pub copies: u64,
    /// Other spans reusing the id of a span already given.
    pub clashes: u64,
    /// A clash: its span id, and it and the span kept (`service: name`).
    pub clash: Option<(String, String, String)>,
}

/// Are `a` and `b` the same span, field by field (their places in the
/// document apart)?
fn same(a: &Span, b: &Span) -> bool {
    (&a.trace, &a.id, &a.parent, &a.follows) == (&b.trace, &b.id, &b.parent, &b.follows)
        && (&a.service, &a.name, a.start, a.end, a.client)
            == (&b.service, &b.name, b.start, b.end, b.client)
}

fn label(s: &Span) -> String {
    format!("{}: {}", s.service, s.name)
}

/// Moves the spans to keep (the first of each trace and span id, in the
/// order of `spans`, the document's) to the front, in their order, and
/// says how many they are and what was dropped.
pub(super) fn drop_repeats(spans: &mut [Span]) -> (usize, Repeats) {
    let mut repeats = Repeats::default();
    let mut keep = vec![true; spans.len()];
    {
        let mut first: FxHashMap<(&str, &str), usize> = FxHashMap::default();
        for (i, s) in spans.iter().enumerate() {
            let Some(&k) = first.get(&(s.trace.as_str(), s.id.as_str())) else {
                first.insert((&s.trace, &s.id), i);
                continue;
            };
            keep[i] = false;
            if same(s, &spans[k]) {
                repeats.copies += 1;
            } else {
                repeats.clashes += 1;
                if repeats.clash.is_none() {
                    repeats.clash = Some((s.id.clone(), label(s), label(&spans[k])));
                }
            }
        }
    }
    let mut n = 0;
    for (i, kept) in keep.into_iter().enumerate() {
        if kept {
            spans.swap(n, i);
            n += 1;
        }
    }
    (n, repeats)
}

/// Does any trace and span id come twice in `spans`?
pub(super) fn any_repeat(spans: &[Span]) -> bool {
    let mut seen = rustc_hash::FxHashSet::default();
    !spans.iter().all(|s| seen.insert((&s.trace, &s.id)))
}

impl Repeats {
    /// Adds another request's repeats.
    pub(super) fn add(&mut self, other: Repeats) {
        self.copies += other.copies;
        self.clashes += other.clashes;
        if self.clash.is_none() {
            self.clash = other.clash;
        }
    }

    /// The `input-skipped` findings: copies dropped, clashes dropped.
    pub(super) fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        if self.copies > 0 {
            let n = self.copies;
            let spans = match n {
                1 => "1 span was".to_string(),
                _ => format!("{n} spans were"),
            };
            let msg = format!("{spans} given again (the same trace id, span id and fields as a span before it: an exporter's retry, or an export received twice); each copy was dropped");
            out.push(Diagnostic::new(DiagnosticKind::InputSkipped, msg).count(n));
        }
        if let Some((id, span, kept)) = &self.clash {
            let n = self.clashes;
            let spans = match n {
                1 => "1 span reuses".to_string(),
                _ => format!("{n} spans reuse"),
            };
            let msg = format!("{spans} the span id of another span of its trace (e.g. span id {id}: {span}, where {kept} came first); each was dropped, the first span of the id kept");
            out.push(Diagnostic::new(DiagnosticKind::InputSkipped, msg).count(n));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(trace: &str, id: &str, name: &str, order: u64) -> Span {
        Span {
            trace: trace.into(),
            id: id.into(),
            name: name.into(),
            service: "svc".into(),
            order,
            start: 10,
            end: 20,
            ..Span::default()
        }
    }

    #[test]
    fn the_first_of_an_id_is_kept_and_the_rest_counted() {
        let mut spans = vec![
            span("t", "a", "x", 0),
            span("t", "b", "y", 1),
            span("t", "a", "x", 2),
            span("u", "a", "x", 3),
            span("t", "b", "z", 4),
            span("t", "c", "w", 5),
        ];
        let (n, r) = drop_repeats(&mut spans);
        let kept: Vec<u64> = spans[..n].iter().map(|s| s.order).collect();
        assert_eq!(kept, [0, 1, 3, 5]);
        assert_eq!((r.copies, r.clashes), (1, 1));
        let clash = ("b".into(), "svc: z".into(), "svc: y".into());
        assert_eq!(r.clash, Some(clash));
        assert_eq!(r.diagnostics().len(), 2);
        assert!(any_repeat(&spans) && !any_repeat(&spans[..n]));
        let (n, r) = drop_repeats(&mut spans[..n]);
        assert_eq!((n, r.copies, r.clashes), (4, 0, 0));
        assert!(r.diagnostics().is_empty());
    }
}
