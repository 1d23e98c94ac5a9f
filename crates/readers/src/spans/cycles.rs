//! Parent references that go round: a span its own parent, or spans each
//! other's (ancestors) parents. No span can have called its own caller, so
//! the spans on such a cycle are taken as having no parent, and the cycle
//! is reported by their span ids (`span-context`).

use super::outlive::parents;
use super::Span;
use critpath_trace::{Diagnostic, DiagnosticKind};

/// Span ids of a cycle named in the message, at most.
const NAMED: usize = 8;

/// The spans on cycles of parent references, each cycle's in order.
fn cycles(parent: &[Option<usize>]) -> Vec<Vec<usize>> {
    // 0: not seen; 1: on the walk being made; 2: done.
    let mut mark = vec![0u8; parent.len()];
    let mut found = Vec::new();
    let mut walk = Vec::new();
    for i in 0..parent.len() {
        let mut j = Some(i);
        while let Some(k) = j.filter(|&k| mark[k] == 0) {
            mark[k] = 1;
            walk.push(k);
            j = parent[k];
        }
        if let Some(k) = j.filter(|&k| mark[k] == 1) {
            let at = walk.iter().position(|&w| w == k).unwrap_or(0);
            found.push(walk[at..].to_vec());
        }
        for w in walk.drain(..) {
            mark[w] = 2;
        }
    }
    found
}

/// Is any span on a cycle of parent references?
pub(super) fn any_cycle(spans: &[Span]) -> bool {
    !cycles(&parents(spans)).is_empty()
}

/// Takes the spans on cycles of parent references as having no parent;
/// the finding that names them, if any.
pub(super) fn break_cycles(spans: &mut [Span]) -> Option<Diagnostic> {
    let found = cycles(&parents(spans));
    if found.is_empty() {
        return None;
    }
    let n: usize = found.iter().map(Vec::len).sum();
    let named: Vec<String> = (found.iter().take(NAMED))
        .map(|c| {
            let ids: Vec<&str> = c
                .iter()
                .take(NAMED)
                .map(|&i| spans[i].id.as_str())
                .collect();
            let more = if c.len() > NAMED { " → ..." } else { "" };
            format!("{} → {}{more}", ids.join(" → "), ids[0])
        })
        .collect();
    for i in found.into_iter().flatten() {
        spans[i].parent = None;
    }
    let msg = format!("{n} spans are on cycles of parent references (span id → its parent's id: {}): no span calls its own caller, so each was taken as having no parent", named.join("; "));
    Some(Diagnostic::new(DiagnosticKind::SpanContext, msg).count(n as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_are_found_once_each() {
        // 0 ← 1 ← 2; 3 its own parent; 4 → 5 → 6 → 4; 7 → 4 (into it).
        let p = [
            None,
            Some(0),
            Some(1),
            Some(3),
            Some(5),
            Some(6),
            Some(4),
            Some(4),
        ];
        let mut c = cycles(&p);
        c.iter_mut().for_each(|c| c.sort());
        assert_eq!(c, vec![vec![3], vec![4, 5, 6]]);
    }
}
