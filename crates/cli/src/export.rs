//! `critpath export`: the analysis in the formats other tools read.
//! Chrome / Perfetto trace JSON (every state visit as a slice on its SM's
//! track, dependences as flow arrows, the critical path as a track of its
//! own), and CSV or Parquet tables of the states and of the path's edges.

use crate::{Failure, Inputs};
use arrow_array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use critpath_engine::{Analysis, Engine, Options, Visit};
use critpath_trace::{Interner, Sym};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Perfetto,
    Chrome,
    Csv,
    Parquet,
}

fn fail(path: &Path, e: impl std::fmt::Display) -> Failure {
    Failure::Input(format!("{}: cannot write: {e}", path.display()))
}

/// `FILE.ext` -> `FILE-path.ext`, for the second table.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("export");
    let ext = path
        .extension()
        .and_then(|s| s.to_str())
        .map(|e| format!(".{e}"))
        .unwrap_or_default();
    path.with_file_name(format!("{stem}-{suffix}{ext}"))
}

pub fn export(traces: &[PathBuf], format: ExportFormat, output: &Path) -> Result<String, Failure> {
    let inputs = Inputs::new(traces)?;
    match format {
        ExportFormat::Perfetto | ExportFormat::Chrome => {
            let (a, visits, strings) = with_visits(&inputs)?;
            let doc = trace_json(&a, &visits, &strings);
            std::fs::write(output, serde_json::to_vec(&doc).expect("json"))
                .map_err(|e| fail(output, e))?;
            Ok(format!(
                "wrote {} ({} slices, {} flows, a critical-path track of {} slices): open it in ui.perfetto.dev or chrome://tracing\n",
                output.display(),
                visits.iter().filter(|v| matches!(v, Visit::State { .. })).count(),
                visits.iter().filter(|v| matches!(v, Visit::Link { .. })).count(),
                a.path.as_ref().map_or(0, Vec::len)
            ))
        }
        ExportFormat::Csv | ExportFormat::Parquet => {
            let (a, _) = inputs.analyze(Options {
                keep_path: true,
                ..Default::default()
            })?;
            let (states, edges) = (states_batch(&a), edges_batch(&a));
            let second = sibling(output, "path");
            for (batch, path) in [(&states, output), (&edges, second.as_path())] {
                if format == ExportFormat::Csv {
                    write_csv(batch, path)?;
                } else {
                    write_parquet(batch, path)?;
                }
            }
            Ok(format!(
                "wrote {} ({} states) and {} ({} critical-path edges)\n",
                output.display(),
                states.num_rows(),
                second.display(),
                edges.num_rows()
            ))
        }
    }
}

/// The analysis with its critical path, and every visit and dependence.
fn with_visits(inputs: &Inputs) -> Result<(Analysis, Vec<Visit>, Interner), Failure> {
    let mut visits = Vec::new();
    let mut collect = |v: &Visit, _: &Interner| visits.push(*v);
    let opts = Options {
        keep_path: true,
        ..Default::default()
    };
    let (a, strings) = inputs.run_engine(Engine::observed(opts, &mut collect))?;
    Ok((a, visits, strings))
}

fn trace_json(a: &Analysis, visits: &[Visit], s: &Interner) -> Value {
    let mut events = Vec::new();
    let mut pids: HashMap<Sym, u64> = HashMap::new();
    let mut tids: HashMap<(Sym, Sym), u64> = HashMap::new();
    let us = |ns: u64| ns as f64 / 1000.0;
    let mut track = |events: &mut Vec<Value>, sys: Sym, sm: Sym| -> (u64, u64) {
        let n = pids.len() as u64 + 1;
        let pid = *pids.entry(sys).or_insert_with(|| {
            events.push(json!({"ph": "M", "name": "process_name", "pid": n, "args": {"name": s.resolve(sys)}}));
            n
        });
        let n = tids.len() as u64 + 1;
        let tid = *tids.entry((sys, sm)).or_insert_with(|| {
            events.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": n, "args": {"name": s.resolve(sm)}}));
            n
        });
        (pid, tid)
    };
    let mut flow = 0u64;
    for v in visits {
        match *v {
            Visit::State {
                sys,
                sm,
                state,
                start,
                end,
            } => {
                let (pid, tid) = track(&mut events, sys, sm);
                events.push(json!({"ph": "X", "name": s.resolve(state), "cat": "state", "pid": pid, "tid": tid, "ts": us(start), "dur": us(end - start)}));
            }
            Visit::Link {
                from_sys,
                from_sm,
                to_sys,
                to_sm,
                sent,
                received,
                wait,
            } => {
                let (p1, t1) = track(&mut events, from_sys, from_sm);
                let (p2, t2) = track(&mut events, to_sys, to_sm);
                flow += 1;
                let name = if wait { "wait" } else { "message" };
                events.push(json!({"ph": "s", "name": name, "cat": "dependence", "id": flow, "pid": p1, "tid": t1, "ts": us(sent)}));
                events.push(json!({"ph": "f", "bp": "e", "name": name, "cat": "dependence", "id": flow, "pid": p2, "tid": t2, "ts": us(received)}));
            }
        }
    }
    // The critical path as its own track, in red.
    let pid = pids.len() as u64 + 1;
    events.push(
        json!({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": "critical path"}}),
    );
    events.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": 1, "args": {"name": format!("critical path ({} ns)", a.critical_path.length_ns)}}));
    for seg in a.path.iter().flatten() {
        let what = if seg.inter {
            format!("{} waits on {}: {}", seg.sm, seg.from_sm, seg.state)
        } else {
            format!("{}: {}", seg.sm, seg.state)
        };
        events.push(json!({
            "ph": "X", "name": what, "cat": "critical", "cname": "terrible", "pid": pid, "tid": 1,
            "ts": us(seg.start_ns), "dur": us(seg.end_ns - seg.start_ns),
            "args": {"sys": seg.sys, "sm": seg.sm, "state": seg.state, "inter": seg.inter},
        }));
    }
    json!({"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"critpath_length_ns": a.critical_path.length_ns}})
}

fn str_col(v: Vec<&str>) -> ArrayRef {
    Arc::new(StringArray::from(v))
}
fn u64_col(v: Vec<u64>) -> ArrayRef {
    Arc::new(UInt64Array::from(v))
}

fn states_batch(a: &Analysis) -> RecordBatch {
    let st = &a.states;
    let schema = Schema::new(vec![
        Field::new("sys", DataType::Utf8, false),
        Field::new("sm", DataType::Utf8, false),
        Field::new("state", DataType::Utf8, false),
        Field::new("visits", DataType::UInt64, false),
        Field::new("total_ns", DataType::UInt64, false),
        Field::new("critical_ns", DataType::UInt64, false),
        Field::new("criticality", DataType::Float64, false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            str_col(st.iter().map(|s| s.sys.as_str()).collect()),
            str_col(st.iter().map(|s| s.sm.as_str()).collect()),
            str_col(st.iter().map(|s| s.state.as_str()).collect()),
            u64_col(st.iter().map(|s| s.visits).collect()),
            u64_col(st.iter().map(|s| s.total_ns).collect()),
            u64_col(st.iter().map(|s| s.critical_ns).collect()),
            Arc::new(Float64Array::from(
                st.iter().map(|s| s.criticality).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("columns match the schema")
}

fn edges_batch(a: &Analysis) -> RecordBatch {
    let p: &[critpath_engine::results::PathSegment] = a.path.as_deref().unwrap_or(&[]);
    let schema = Schema::new(vec![
        Field::new("start_ns", DataType::UInt64, false),
        Field::new("end_ns", DataType::UInt64, false),
        Field::new("sys", DataType::Utf8, false),
        Field::new("sm", DataType::Utf8, false),
        Field::new("state", DataType::Utf8, false),
        Field::new("from_sm", DataType::Utf8, false),
        Field::new("inter", DataType::Boolean, false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            u64_col(p.iter().map(|e| e.start_ns).collect()),
            u64_col(p.iter().map(|e| e.end_ns).collect()),
            str_col(p.iter().map(|e| e.sys.as_str()).collect()),
            str_col(p.iter().map(|e| e.sm.as_str()).collect()),
            str_col(p.iter().map(|e| e.state.as_str()).collect()),
            str_col(p.iter().map(|e| e.from_sm.as_str()).collect()),
            Arc::new(BooleanArray::from(
                p.iter().map(|e| e.inter).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("columns match the schema")
}

fn write_csv(b: &RecordBatch, path: &Path) -> Result<(), Failure> {
    use arrow_array::Array;
    let mut w = csv::Writer::from_path(path).map_err(|e| fail(path, e))?;
    w.write_record(b.schema().fields().iter().map(|f| f.name().as_str()))
        .map_err(|e| fail(path, e))?;
    for row in 0..b.num_rows() {
        let cells: Vec<String> = b
            .columns()
            .iter()
            .map(|c| {
                let any = c.as_any();
                if let Some(a) = any.downcast_ref::<StringArray>() {
                    a.value(row).to_string()
                } else if let Some(a) = any.downcast_ref::<UInt64Array>() {
                    a.value(row).to_string()
                } else if let Some(a) = any.downcast_ref::<Float64Array>() {
                    a.value(row).to_string()
                } else if let Some(a) = any.downcast_ref::<BooleanArray>() {
                    a.value(row).to_string()
                } else {
                    debug_assert!(c.is_empty(), "unexpected column type");
                    String::new()
                }
            })
            .collect();
        w.write_record(&cells).map_err(|e| fail(path, e))?;
    }
    w.flush().map_err(|e| fail(path, e))
}

fn write_parquet(b: &RecordBatch, path: &Path) -> Result<(), Failure> {
    let f = std::fs::File::create(path).map_err(|e| fail(path, e))?;
    let mut w =
        parquet::arrow::ArrowWriter::try_new(f, b.schema(), None).map_err(|e| fail(path, e))?;
    w.write(b).map_err(|e| fail(path, e))?;
    w.close().map_err(|e| fail(path, e))?;
    Ok(())
}
