//! Views of many requests (a span file of several trace ids, or a batch of
//! files): the per-request results summed up ([`Summary`]), the aggregate
//! table, the verdict over the requests, the slowest requests against the
//! rest, the JSON document and the two tables (`per_trace`, `states`) as
//! Arrow record batches.

use crate::json;
use crate::tables::{f64_col, int_col, str_col};
use crate::text::{cols, dur, elide, grid_fit, sm_name};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use critpath_batch::{compare_and_total, sort_results, Comparison, PerTrace, StateAgg, Top};
use critpath_batch::{Error as BatchError, TraceResult};
use critpath_trace::{Diagnostic, DiagnosticKind, Severity};
use serde::Serialize;
use std::fmt::Write as _;
use std::sync::Arc;

/// `analyze --json` on a span file of several requests (docs/json.md).
#[derive(Serialize)]
pub struct RequestsDoc<'a> {
    /// How many requests (trace ids) were analyzed.
    pub traces: u64,
    pub per_trace: &'a [PerTrace],
    /// The aggregate over the requests.
    pub states: &'a [StateAgg],
    pub slowest: &'a Comparison,
    /// Problems reading the file (spans skipped), as `input-skipped` or
    /// `input-cut`, then the file's findings, each as `analyze --json`
    /// gives a diagnostic.
    pub diagnostics: Vec<Diagnostic>,
}

/// Per-request results and what is derived from them (the command line's
/// `analyze` of a span file of several requests and `batch`, and the
/// Python package's `analyze` of such a file).
pub struct Summary {
    pub per_trace: Vec<PerTrace>,
    pub states: Vec<StateAgg>,
    pub slowest: Comparison,
    pub length_ns_sum: u64,
    /// What the reader found about the file as a whole (signs of trace
    /// context lost between services): under the verdict, and in the
    /// JSON's diagnostics.
    pub file_diagnostics: Vec<Diagnostic>,
}

impl Summary {
    /// Sorts the results by (file, trace id), aggregates them and compares
    /// the slowest `fraction` with the rest.
    pub fn new(mut results: Vec<TraceResult>, fraction: f64) -> Self {
        sort_results(&mut results);
        let (slowest, agg) = compare_and_total(&results, fraction);
        let per_trace = results.iter_mut().map(TraceResult::take_row).collect();
        free_aside(results);
        Summary {
            per_trace,
            states: agg.finish(),
            slowest,
            length_ns_sum: agg.length_ns_sum(),
            file_diagnostics: Vec::new(),
        }
    }

    /// The text: the verdict over the requests and their count, the
    /// aggregate table (the first `top` rows; a footer for the rest), the
    /// slowest against the rest.
    pub fn text(&self, what: &str, top: Option<usize>, width: Option<usize>) -> String {
        let mut t = summary(what, &self.per_trace, &self.states, self.length_ns_sum);
        for d in &self.file_diagnostics {
            let _ = writeln!(t, "{} ({}): {}", heading(d), d.kind, d.message);
        }
        let n = top.unwrap_or(usize::MAX).min(self.states.len());
        if n > 0 {
            t.push('\n');
            t.push_str(&states_table(&self.states[..n], width));
            if n < self.states.len() {
                t.push_str(&format!(
                    "… {} more states folded (--top N shows more, --json all of them)\n",
                    self.states.len() - n
                ));
            }
        }
        let c = comparison(&self.slowest, width);
        if !c.is_empty() {
            t.push('\n');
            t.push_str(&c);
        }
        t
    }

    /// `analyze --json` of the requests (docs/json.md, "Many requests"),
    /// with `err`, a problem reading the file, as its diagnostic.
    pub fn document(&self, err: Option<&BatchError>) -> String {
        let doc = RequestsDoc {
            traces: self.per_trace.len() as u64,
            per_trace: &[],
            states: &self.states,
            slowest: &self.slowest,
            diagnostics: err
                .into_iter()
                .map(problem)
                .chain(self.file_diagnostics.iter().cloned())
                .collect(),
        };
        let rows = SortedRows(&self.per_trace);
        json::document_with_sorted_rows(&doc, "per_trace", rows, self.per_trace.len())
    }
}

/// `per_trace` rows printed as [`SortedRow`]s, one at a time.
struct SortedRows<'a>(&'a [PerTrace]);

impl Serialize for SortedRows<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(SortedRow::of))
    }
}

/// A `per_trace` row with its keys in the alphabetical order
/// [`json::document`] prints them in, so that it prints straight.
#[derive(Serialize)]
struct SortedRow<'a> {
    file: &'a str,
    length_ns: u64,
    top: SortedTop<'a>,
    top_criticality: f64,
    top_sm: &'a str,
    top_state: &'a str,
    trace_id: &'a str,
}

/// [`SortedRow`]'s `top`.
#[derive(Serialize)]
struct SortedTop<'a> {
    criticality: f64,
    sm: &'a str,
    state: &'a str,
}

impl<'a> SortedRow<'a> {
    fn of(r: &'a PerTrace) -> Self {
        // Every field named: a field added to `PerTrace` must be added here.
        let PerTrace {
            file,
            trace_id,
            length_ns,
            top,
            top_sm,
            top_state,
            top_criticality,
        } = r;
        let Top {
            sm,
            state,
            criticality,
        } = top;
        SortedRow {
            file,
            length_ns: *length_ns,
            top: SortedTop {
                criticality: *criticality,
                sm,
                state,
            },
            top_criticality: *top_criticality,
            top_sm,
            top_state,
            trace_id,
        }
    }
}

/// Frees many `results` on a thread of its own while the caller goes on:
/// the state tables of many requests are millions of small allocations.
/// A thread that cannot start frees them here, with its closure.
fn free_aside(results: Vec<TraceResult>) {
    if results.len() >= 4096 {
        let _ = std::thread::Builder::new().spawn(move || drop(results));
    }
}

/// A problem reading a span file, as a diagnostic: `input-cut` when it
/// stopped the reading, else `input-skipped`.
pub fn problem(e: &BatchError) -> Diagnostic {
    let fatal = matches!(e, BatchError::Read(r) if r.fatal);
    let kind = if fatal {
        DiagnosticKind::InputCut
    } else {
        DiagnosticKind::InputSkipped
    };
    Diagnostic::new(kind, e.to_string())
}

/// How a finding of the file is introduced: `caution` when it may change
/// the answer, `note` otherwise.
pub fn heading(d: &Diagnostic) -> &'static str {
    if d.kind.severity() == Severity::ChangesAnswer {
        "caution"
    } else {
        "note"
    }
}

/// Whether SM names are shown with their system.
fn shows_sys(rows: &[StateAgg]) -> bool {
    rows.iter().any(|s| s.sys != "local")
}

fn name(s: &StateAgg, show_sys: bool) -> String {
    format!(
        "{}: {}",
        sm_name(&s.sys, &s.sm, show_sys),
        crate::text::printable(&s.state)
    )
}

/// The first lines: how many requests, how long their paths, and the state
/// that bounds the most summed path time.
pub fn summary(what: &str, per_trace: &[PerTrace], rows: &[StateAgg], length_sum: u64) -> String {
    let mut lengths: Vec<u64> = per_trace.iter().map(|r| r.length_ns).collect();
    lengths.sort_unstable();
    let n = lengths.len();
    let mut o = String::new();
    if let Some(top) = rows.first().filter(|t| t.critical_ns_sum > 0) {
        let _ = writeln!(
            o,
            "bound by {} over {n} requests — {:.0}% of their summed path time, on the path of {} of them",
            name(top, shows_sys(rows)),
            100.0 * top.critical_ns_sum as f64 / length_sum.max(1) as f64,
            top.traces
        );
    }
    let _ = write!(o, "{what}: {n} requests (trace ids)");
    if n > 0 {
        let _ = write!(
            o,
            ", critical paths from {} to {} (median {})",
            dur(lengths[0]),
            dur(lengths[n - 1]),
            dur(lengths[(n - 1) / 2])
        );
    }
    o.push('\n');
    o
}

/// The aggregate table: per state, in how many requests it is critical,
/// its summed critical time, and its criticality's mean and percentiles.
pub fn states_table(rows: &[StateAgg], width: Option<usize>) -> String {
    let show_sys = shows_sys(rows);
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .enumerate()
        .map(|(i, s)| {
            vec![
                (i + 1).to_string(),
                sm_name(&s.sys, &s.sm, show_sys),
                s.state.clone(),
                s.traces.to_string(),
                dur(s.critical_ns_sum),
                pct(s.criticality_mean),
                pct(s.criticality_p50),
                pct(s.criticality_p90),
                pct(s.criticality_p99),
            ]
        })
        .collect();
    let head = [
        "#",
        "state machine",
        "state",
        "traces",
        "critical sum",
        "mean",
        "p50",
        "p90",
        "p99",
    ];
    let mut right = [true; 9];
    right[1] = false;
    right[2] = false;
    grid_fit(&head, &cells, &right, width)
}

/// The comparison, a line: "in the slowest 10% (…), X holds 70% of the
/// path; in the rest, Y holds 60%". Empty without requests.
pub fn comparison(c: &Comparison, width: Option<usize>) -> String {
    let Some(slow) = &c.slow_top else {
        return String::new();
    };
    let show_sys = slow.sys != "local" || c.rest_top.as_ref().is_some_and(|r| r.sys != "local");
    let slow_name = name(slow, show_sys);
    let mut o = format!(
        "in the slowest {}% ({} requests, {} and longer), {slow_name} holds {:.0}% of the path",
        fmt_pct(c.fraction),
        c.slow_traces,
        dur(c.slow_min_length_ns),
        100.0 * c.slow_top_share
    );
    match &c.rest_top {
        Some(r) => {
            let _ = write!(
                o,
                "; in the rest, {} holds {:.0}%",
                name(r, show_sys),
                100.0 * c.rest_top_share
            );
        }
        None => o.push_str("; no other request"),
    }
    if let Some(w) = width.filter(|&w| cols(&o) > w) {
        let short = elide(
            &slow_name,
            cols(&slow_name).saturating_sub(cols(&o) - w).max(12),
        );
        o = o.replacen(&slow_name, &short, 1);
    }
    o.push('\n');
    o
}

/// A fraction as a percentage without needless decimals (0.1 → "10").
fn fmt_pct(f: f64) -> String {
    let p = 100.0 * f;
    if (p - p.round()).abs() < 1e-9 {
        format!("{}", p.round())
    } else {
        format!("{p:.2}").trim_end_matches('0').to_string()
    }
}

/// A request's top state's SM or state name; null when no state is on its
/// path (JSON's `""`), as the Python package's tables have None.
fn top_col(rows: &[PerTrace], name: impl Fn(&PerTrace) -> &str) -> ArrayRef {
    let none = |r: &PerTrace| r.top_sm.is_empty() && r.top_state.is_empty();
    Arc::new(StringArray::from_iter(
        rows.iter().map(|r| (!none(r)).then(|| name(r))),
    ))
}

/// The `per_trace` table: one row per request (`top_sm` and `top_state`
/// null when no state is on its path).
pub fn per_trace_batch(rows: &[PerTrace]) -> RecordBatch {
    let schema = Schema::new(vec![
        Field::new("file", DataType::Utf8, false),
        Field::new("trace_id", DataType::Utf8, false),
        Field::new("length_ns", DataType::Int64, false),
        Field::new("top_sm", DataType::Utf8, true),
        Field::new("top_state", DataType::Utf8, true),
        Field::new("top_criticality", DataType::Float64, false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            str_col(rows.iter().map(|r| r.file.as_str()).collect()),
            str_col(rows.iter().map(|r| r.trace_id.as_str()).collect()),
            int_col(rows.iter().map(|r| r.length_ns)),
            top_col(rows, |r| &r.top_sm),
            top_col(rows, |r| &r.top_state),
            f64_col(rows.iter().map(|r| r.top_criticality).collect()),
        ],
    )
    .expect("columns match the schema")
}

/// The `states` table: the aggregate, one row per state.
pub fn states_agg_batch(rows: &[StateAgg]) -> RecordBatch {
    let schema = Schema::new(vec![
        Field::new("sys", DataType::Utf8, false),
        Field::new("sm", DataType::Utf8, false),
        Field::new("state", DataType::Utf8, false),
        Field::new("traces", DataType::Int64, false),
        Field::new("critical_ns_sum", DataType::Int64, false),
        Field::new("criticality_mean", DataType::Float64, false),
        Field::new("criticality_p50", DataType::Float64, false),
        Field::new("criticality_p90", DataType::Float64, false),
        Field::new("criticality_p99", DataType::Float64, false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            str_col(rows.iter().map(|r| r.sys.as_str()).collect()),
            str_col(rows.iter().map(|r| r.sm.as_str()).collect()),
            str_col(rows.iter().map(|r| r.state.as_str()).collect()),
            int_col(rows.iter().map(|r| r.traces)),
            int_col(rows.iter().map(|r| r.critical_ns_sum)),
            f64_col(rows.iter().map(|r| r.criticality_mean).collect()),
            f64_col(rows.iter().map(|r| r.criticality_p50).collect()),
            f64_col(rows.iter().map(|r| r.criticality_p90).collect()),
            f64_col(rows.iter().map(|r| r.criticality_p99).collect()),
        ],
    )
    .expect("columns match the schema")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row printed straight is the row printed as a JSON value (keys in
    /// alphabetical order).
    #[test]
    fn a_sorted_row_prints_as_the_rows_value() {
        let row = PerTrace {
            file: "a \"b\".json".into(),
            trace_id: "00ff".into(),
            length_ns: 12,
            top: Top {
                sm: "svc".into(),
                state: "db\nquery".into(),
                criticality: 0.25,
            },
            top_sm: "svc".into(),
            top_state: "db\nquery".into(),
            top_criticality: 0.25,
        };
        let straight = serde_json::to_string_pretty(&SortedRow::of(&row)).unwrap() + "\n";
        assert_eq!(straight, json::document(&row));
    }
}
