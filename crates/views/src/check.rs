//! The text view of `check`: the invariant violations and trace errors
//! found, and a summary line that ends in `ok` or `FAILED`.

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
