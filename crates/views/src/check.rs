//! The text view of `check`: the invariant violations and trace errors
//! found, and a summary line that ends in `ok` or `FAILED`.

use crate::json::{CheckSize, RequestCheck};
use crate::text::{counted, printable};
use critpath_engine::Analysis;
use critpath_trace::Diagnostic;
use std::fmt::Write as _;

pub fn check(
    a: &Analysis,
    file: &str,
    violations: &[String],
    trace_errors: &[&Diagnostic],
    ok: bool,
) -> String {
    let mut o = String::new();
    for v in violations {
        let _ = writeln!(o, "violation: {}", printable(v));
    }
    for d in trace_errors {
        let _ = writeln!(o, "{}: {}", d.kind, printable(&d.message));
    }
    let _ = writeln!(
        o,
        "{}: {}, {}, {}, cgraph {} / {}: {}",
        printable(file),
        counted(a.stats.records, "record"),
        counted(a.stats.nodes, "node"),
        counted(a.stats.state_machines, "state machine"),
        counted(a.cgraph.nodes.len() as u64, "node"),
        counted(a.cgraph.edges.len() as u64, "edge"),
        if ok { "ok" } else { "FAILED" }
    );
    o
}

/// The text of `check` over a span file of several requests: the file's
/// skipped spans, each failed request's findings, then a summary line that
/// ends in `ok` or `FAILED`.
pub fn check_many(
    file: &str,
    checked: &[RequestCheck],
    problems: &[Diagnostic],
    ok: bool,
) -> String {
    let mut o = String::new();
    for d in problems {
        let _ = writeln!(o, "{}: {}", d.kind, printable(&d.message));
    }
    let failed: Vec<&RequestCheck> = checked.iter().filter(|c| !c.passed()).collect();
    for c in &failed {
        for v in c.named_violations() {
            let _ = writeln!(o, "violation: {}", printable(&v));
        }
        for d in &c.trace_errors {
            let _ = writeln!(
                o,
                "trace {}: {}: {}",
                c.trace_id,
                d.kind,
                printable(&d.message)
            );
        }
    }
    let size = CheckSize::sum(checked.iter().map(|c| &c.size));
    let verdict = match (ok, failed.len()) {
        (true, _) => "ok".to_string(),
        (false, 0) => "FAILED".to_string(),
        (false, n) => format!("FAILED ({n} of {} requests)", checked.len()),
    };
    let _ = writeln!(
        o,
        "{}: {}, {}, {}, cgraphs {} / {}: {verdict}",
        printable(file),
        counted(checked.len() as u64, "request"),
        counted(size.records, "record"),
        counted(size.nodes, "node"),
        counted(size.cgraph_nodes as u64, "node"),
        counted(size.cgraph_edges as u64, "edge"),
    );
    o
}
