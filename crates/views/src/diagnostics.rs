//! Diagnostics folded by kind and weighed by severity: the text table and
//! the report show one line per kind that changes the answer (with its
//! count and first message) and fold the rest into one line that names
//! each kind with its count.

use crate::text::printable;
use critpath_trace::{Diagnostic, DiagnosticKind, Severity};
use std::fmt::Write as _;

/// The diagnostics of one kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindCount<'a> {
    pub kind: DiagnosticKind,
    /// Findings: each diagnostic counts its `count` (a summary of several)
    /// or one.
    pub count: u64,
    /// The first diagnostic of the kind.
    pub first: &'a Diagnostic,
}

/// The diagnostics by kind: weightiest severity first, then most findings,
/// then by name.
pub fn by_kind(ds: &[Diagnostic]) -> Vec<KindCount<'_>> {
    let mut out: Vec<KindCount<'_>> = Vec::new();
    for d in ds {
        let n = d.count.unwrap_or(1).max(1);
        match out.iter_mut().find(|k| k.kind == d.kind) {
            Some(k) => k.count += n,
            None => out.push(KindCount {
                kind: d.kind,
                count: n,
                first: d,
            }),
        }
    }
    out.sort_by(|a, b| {
        (
            a.kind.severity(),
            std::cmp::Reverse(a.count),
            a.kind.as_str(),
        )
            .cmp(&(
                b.kind.severity(),
                std::cmp::Reverse(b.count),
                b.kind.as_str(),
            ))
    });
    out
}

/// `kind` or `kind ×N`.
fn named(k: &KindCount<'_>) -> String {
    if k.count > 1 {
        format!("{} ×{}", k.kind, k.count)
    } else {
        k.kind.to_string()
    }
}

/// The text table's diagnostics: a heading with the number of findings,
/// one line per kind that changes the answer, then
/// `+ N more notes: kind ×n, …` for the rest. Empty when there are none.
pub fn text(ds: &[Diagnostic]) -> String {
    if ds.is_empty() {
        return String::new();
    }
    let kinds = by_kind(ds);
    let findings: u64 = kinds.iter().map(|k| k.count).sum();
    let mut o = format!("\ndiagnostics ({findings}):\n");
    let (weighty, rest): (Vec<_>, Vec<_>) = kinds
        .iter()
        .partition(|k| k.kind.severity() == Severity::ChangesAnswer);
    for k in &weighty {
        let _ = writeln!(o, "  {}: {}", named(k), printable(&k.first.message));
    }
    if !rest.is_empty() {
        let notes: u64 = rest.iter().map(|k| k.count).sum();
        let names: Vec<String> = rest.iter().map(|k| named(k)).collect();
        let more = if weighty.is_empty() { "" } else { " more" };
        let noun = if notes == 1 { "note" } else { "notes" };
        let _ = writeln!(
            o,
            "  + {notes}{more} {noun}: {}; --json lists them all",
            names.join(", ")
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use DiagnosticKind::*;

    #[test]
    fn kinds_that_change_the_answer_get_a_line_and_the_rest_fold() {
        let ds = vec![
            Diagnostic::new(LostSwitchIn, "a switch-in lost"),
            Diagnostic::new(WaitAdvancedEarly, "first early wait"),
            Diagnostic::new(LostSwitchIn, "another"),
            Diagnostic::new(PreexistingThread, "12 threads").count(12),
            Diagnostic::new(WaitAdvancedEarly, "second early wait"),
            Diagnostic::new(InputCut, "cut at byte 10"),
        ];
        let t = text(&ds);
        assert_eq!(
            t,
            "\ndiagnostics (17):\n  wait-advanced-early ×2: first early wait\n  \
             input-cut: cut at byte 10\n  + 14 more notes: lost-switch-in ×2, \
             preexisting-thread ×12; --json lists them all\n"
        );
    }

    #[test]
    fn only_notes_fold_into_one_line_and_none_print_nothing() {
        let ds = vec![Diagnostic::new(ClockOffset, "aligned")];
        assert_eq!(
            text(&ds),
            "\ndiagnostics (1):\n  + 1 note: clock-offset; --json lists them all\n"
        );
        assert_eq!(text(&[]), "");
    }
}
