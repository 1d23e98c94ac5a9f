//! The JSON documents the commands print: these types ARE the JSON contract
//! (docs/json.md). Documents built around an [`Analysis`] have always been
//! printed with their keys in alphabetical order ([`document`]); the tables
//! of the other views keep their fields' order ([`pretty`]).

use critpath_engine::analyses::NextPath;
use critpath_engine::results::{StateRow, Stats};
use critpath_engine::Analysis;
use critpath_import::multi::ClockOffset;
use critpath_trace::Diagnostic;
use serde::Serialize;

/// Pretty JSON with every object's keys in alphabetical order, and a newline.
pub fn document(v: &impl Serialize) -> String {
    let v = serde_json::to_value(v).expect("the output types serialize");
    serde_json::to_string_pretty(&v).expect("a JSON value prints") + "\n"
}

/// [`document`] of `v`, whose top-level member `key` is an empty array,
/// with `rows` as that array: each row becomes a JSON value of its own in
/// turn, never the whole table at once (a table of many rows would take
/// some 600 bytes of values a row), printed where it stands in the one
/// pretty print of the document.
pub fn document_with_rows<R: Serialize>(v: &impl Serialize, key: &str, rows: &[R]) -> String {
    spliced(v, key, ValueRows(rows), rows.len())
}

/// [`document_with_rows`] of `n` rows that serialize as a sequence whose
/// items' keys (and their objects' keys) already come in alphabetical
/// order: each printed straight.
pub fn document_with_sorted_rows(
    v: &impl Serialize,
    key: &str,
    rows: impl Serialize,
    n: usize,
) -> String {
    spliced(v, key, rows, n)
}

/// [`document`] of `v` with the `n` `rows` printed as its member `key`.
fn spliced(v: &impl Serialize, key: &str, rows: impl Serialize, n: usize) -> String {
    let doc = serde_json::to_value(v).expect("the output types serialize");
    let serde_json::Value::Object(members) = doc else {
        panic!("the document is an object");
    };
    assert!(members.contains_key(key), "the document has {key}");
    let spliced = Spliced { members, key, rows };
    // Room for rows of a few hundred bytes each, as tables hold.
    let mut out = Vec::with_capacity(4096 + n * 400);
    serde_json::to_writer_pretty(&mut out, &spliced).expect("a JSON value prints");
    out.push(b'\n');
    String::from_utf8(out).expect("JSON is UTF-8")
}

/// A document's members in order, `rows` in place of member `key`.
struct Spliced<'a, T> {
    members: serde_json::Map<String, serde_json::Value>,
    key: &'a str,
    rows: T,
}

/// Rows each printed as the JSON value it becomes (keys in order).
struct ValueRows<'a, R>(&'a [R]);

impl<T: Serialize> Serialize for Spliced<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.members.len()))?;
        for (k, v) in &self.members {
            match k == self.key {
                true => m.serialize_entry(k, &self.rows)?,
                false => m.serialize_entry(k, v)?,
            }
        }
        m.end()
    }
}

impl<R: Serialize> Serialize for ValueRows<'_, R> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for r in self.0 {
            seq.serialize_element(&serde_json::to_value(r).map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
}

/// Pretty JSON with the fields in their types' order, and a newline.
pub fn pretty(v: &impl Serialize) -> String {
    serde_json::to_string_pretty(v).expect("the output types serialize") + "\n"
}

/// `analyze --json`: the analysis, the next most critical paths and the
/// clock offsets of merged traces.
#[derive(Serialize)]
pub struct AnalyzeDoc<'a> {
    #[serde(flatten)]
    pub analysis: &'a Analysis,
    /// The first of `next_critical_paths`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_critical_path: Option<&'a NextPath>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_critical_paths: Option<&'a [NextPath]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_offsets: Option<&'a [ClockOffset]>,
    /// A GPU trace's path by HTA's categories (docs/gpu.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<&'a critpath_gpu::GpuBreakdown>,
    /// Several ranks: clock offsets and the straggler of each step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<&'a critpath_gpu::RanksReport>,
}

impl<'a> AnalyzeDoc<'a> {
    pub fn new(
        analysis: &'a Analysis,
        next: &'a [NextPath],
        clock_offsets: Option<&'a [ClockOffset]>,
    ) -> Self {
        AnalyzeDoc {
            analysis,
            next_critical_path: next.first(),
            next_critical_paths: (!next.is_empty()).then_some(next),
            clock_offsets,
            gpu: None,
            ranks: None,
        }
    }
}

/// A finding about the whole command rather than one trace.
#[derive(Serialize)]
pub struct Finding {
    pub kind: &'static str,
    pub message: String,
}

/// `analyze --json` over traces that share no link: each analyzed alone.
#[derive(Serialize)]
pub struct UnlinkedDoc<'a> {
    pub diagnostics: Vec<Finding>,
    pub analyses: Vec<FileAnalysis<'a>>,
}

/// One file's analysis, named.
#[derive(Serialize)]
pub struct FileAnalysis<'a> {
    #[serde(flatten)]
    pub analysis: &'a Analysis,
    pub file: &'a str,
}

/// `check --json`.
#[derive(Serialize)]
pub struct CheckDoc<'a> {
    pub ok: bool,
    pub invariant_violations: &'a [String],
    pub trace_errors: &'a [&'a Diagnostic],
    pub stats: &'a Stats,
    pub cgraph: GraphSize,
}

/// Nodes and edges of the combined graph.
#[derive(Serialize)]
pub struct GraphSize {
    pub nodes: usize,
    pub edges: usize,
}

/// One request's `check` in a span file of several.
#[derive(Serialize)]
pub struct RequestCheck {
    pub trace_id: String,
    pub invariant_violations: Vec<String>,
    pub trace_errors: Vec<Diagnostic>,
    #[serde(skip)]
    pub size: CheckSize,
}

impl RequestCheck {
    pub fn passed(&self) -> bool {
        self.invariant_violations.is_empty() && self.trace_errors.is_empty()
    }

    /// The violations, each after its request's trace id.
    pub fn named_violations(&self) -> impl Iterator<Item = String> + '_ {
        (self.invariant_violations.iter()).map(|v| format!("trace {}: {v}", self.trace_id))
    }
}

/// What a request's check went through, and sums of them.
#[derive(Serialize, Default, Clone, Copy)]
pub struct CheckSize {
    pub records: u64,
    pub nodes: u64,
    pub state_machines: u64,
    #[serde(skip)]
    pub cgraph_nodes: usize,
    #[serde(skip)]
    pub cgraph_edges: usize,
}

impl CheckSize {
    pub fn sum<'a>(sizes: impl Iterator<Item = &'a CheckSize>) -> CheckSize {
        sizes.fold(CheckSize::default(), |a, s| CheckSize {
            records: a.records + s.records,
            nodes: a.nodes + s.nodes,
            state_machines: a.state_machines + s.state_machines,
            cgraph_nodes: a.cgraph_nodes + s.cgraph_nodes,
            cgraph_edges: a.cgraph_edges + s.cgraph_edges,
        })
    }
}

/// `check --json` of a span file of several requests: `check --json`'s
/// fields over all of them (a violation names its request; the file's
/// skipped spans come first among the trace errors), the request count,
/// and each failed request's findings.
#[derive(Serialize)]
pub struct ManyCheckDoc<'a> {
    pub ok: bool,
    pub requests: usize,
    pub invariant_violations: Vec<String>,
    pub trace_errors: Vec<&'a Diagnostic>,
    pub stats: CheckSize,
    pub cgraph: GraphSize,
    pub failed: Vec<&'a RequestCheck>,
}

impl<'a> ManyCheckDoc<'a> {
    pub fn new(checked: &'a [RequestCheck], problems: &'a [Diagnostic], ok: bool) -> Self {
        let failed: Vec<&RequestCheck> = checked.iter().filter(|c| !c.passed()).collect();
        let size = CheckSize::sum(checked.iter().map(|c| &c.size));
        ManyCheckDoc {
            ok,
            requests: checked.len(),
            invariant_violations: failed.iter().flat_map(|c| c.named_violations()).collect(),
            trace_errors: (problems.iter())
                .chain(failed.iter().flat_map(|c| &c.trace_errors))
                .collect(),
            stats: size,
            cgraph: GraphSize {
                nodes: size.cgraph_nodes,
                edges: size.cgraph_edges,
            },
            failed,
        }
    }
}

/// `whatif --json`: the baseline and predicted path lengths and states.
#[derive(Serialize)]
pub struct WhatifDoc<'a> {
    pub baseline_length_ns: u64,
    pub predicted_length_ns: u64,
    /// Infinite (printed as null) when the predicted path is empty.
    pub predicted_speedup: f64,
    /// The prediction widened by the share of the predicted path that
    /// depends on the rest of the machine: `[low, high]` ns.
    pub predicted_range_ns: [u64; 2],
    /// That share (0 to 1): CPU waits, their holders, interrupts; not the
    /// time the recorded program's own threads held.
    pub machine_share: f64,
    /// The share (0 to 1) of the predicted path that is the program's
    /// threads waiting for CPUs its other threads held (not in the band).
    pub program_share: f64,
    /// Intra-SM edges with time the speed-ups scaled: 0 when the states
    /// they name carry no time of their own (it is all on links).
    pub scaled_edges: u64,
    pub speedups: Vec<SpeedupDoc<'a>>,
    pub states: &'a [StateRow],
    pub baseline_states: &'a [StateRow],
    /// Problems reading the input (`input-cut`, `input-skipped`): both
    /// paths cover the records read. Left out when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<&'a critpath_trace::Diagnostic>,
}

/// One `--speedup`.
#[derive(Serialize)]
pub struct SpeedupDoc<'a> {
    pub state: &'a str,
    pub factor: f64,
}

/// One row of `bench --json`.
#[derive(Serialize)]
pub struct BenchRow<'a> {
    pub records: u64,
    pub format: &'a str,
    pub bytes: u64,
    pub generate_s: f64,
    /// How many times the trace was analyzed; `analyze_s` is the median of
    /// those runs, `analyze_min_s` and `analyze_max_s` their extremes, and
    /// the other figures are the median run's, but for `peak_rss_kib`: the
    /// highest of all.
    pub runs: u32,
    pub analyze_s: f64,
    pub analyze_min_s: f64,
    pub analyze_max_s: f64,
    pub records_per_s: f64,
    pub peak_rss_kib: u64,
    /// CPU time spent analyzing, all threads, and that over the wall time:
    /// how many cores the analysis kept busy.
    pub cpu_s: f64,
    pub cores: f64,
    pub nodes: u64,
    pub length_ns: u64,
}

/// `demo --json`: a run's analysis and the model behind it; without
/// `--bus`, the PCI run with both runs side by side in `runs`.
#[derive(Serialize)]
pub struct DemoDoc {
    #[serde(flatten)]
    pub analysis: Analysis,
    pub model: ModelDoc,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Vec<DemoDoc>>,
}

/// The simulated system and what it did.
#[derive(Serialize)]
pub struct ModelDoc {
    pub throughput_mbps: f64,
    pub bus: &'static str,
    pub payload: u64,
    pub netfilter: bool,
    pub packets: u64,
    pub simulated_ns: u64,
    pub frames: u64,
    pub events: u64,
    pub records: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row {
        z: u32,
        a: Vec<&'static str>,
        m: std::collections::HashMap<&'static str, u32>,
    }

    #[derive(Serialize)]
    struct Doc<'a> {
        zz: &'static str,
        rows: &'a [Row],
        aa: Vec<u32>,
    }

    #[test]
    fn rows_spliced_in_print_as_the_whole_document() {
        let row = |z| Row {
            z,
            a: vec!["x\ny", "\"rows\": []"],
            m: [("q", 1), ("b", 2)].into_iter().collect(),
        };
        for n in [0, 1, 3] {
            let rows: Vec<Row> = (0..n).map(row).collect();
            let doc = |rows| Doc {
                zz: "\n  \"rows\": [] in a string",
                rows,
                aa: vec![1, 2],
            };
            let whole = document(&doc(&rows));
            assert_eq!(
                document_with_rows(&doc(&[]), "rows", &rows),
                whole,
                "{n} rows"
            );
        }
    }
}
