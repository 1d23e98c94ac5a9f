//! Helpers shared by the tests: analysing a source with its path kept, the
//! link ids it sends and receives, and where the shared real traces are.

#![allow(dead_code)]

use critpath_engine::{analyze_observed, Analysis, Options, Visit};
use critpath_gpu::{bound_by, BreakdownObserver, GpuBreakdown, GpuSource, Tally};
use critpath_trace::{Interner, ReadError};
use std::path::PathBuf;

/// The link ids of a source's sends and of its recvs, each list sorted.
pub fn links(mut src: GpuSource) -> (Vec<String>, Vec<String>) {
    let (mut sent, mut received) = (Vec::new(), Vec::new());
    while let Some((r, _)) = critpath_trace::RecordSource::next_record(&mut src).unwrap() {
        match r.ev {
            critpath_trace::Event::Send { id, .. } => sent.push(format!("{id:?}")),
            critpath_trace::Event::Recv { id, .. } => received.push(format!("{id:?}")),
            _ => {}
        }
    }
    sent.sort();
    received.sort();
    (sent, received)
}

/// Analyses a GPU source, keeping the path; returns the analysis and its
/// breakdown. The breakdown is made twice, from the kept path and by an
/// observer of the walk, and must be the same.
pub fn run(src: GpuSource) -> (Analysis, GpuBreakdown) {
    let (a, b, err) = run_damaged(src);
    assert!(err.is_none(), "{err:?}");
    (a, b)
}

/// [`run`] of a trace that may be damaged: with the error of its reading.
pub fn run_damaged(mut src: GpuSource) -> (Analysis, GpuBreakdown, Option<ReadError>) {
    let opts = Options {
        keep_path: true,
        ..Options::default()
    };
    let facts = src.facts().clone();
    let mut nothing = |_: &Visit, _: &Interner| {};
    let mut watch = BreakdownObserver {
        tally: Tally::new(&facts, 0, u64::MAX),
        inner: &mut nothing,
    };
    let (a, err) = analyze_observed(&mut src, opts, &mut watch, |_, _| {}).expect("analysis");
    let b = bound_by(&a, &facts);
    assert_eq!(
        watch.tally.finish(),
        b,
        "the observer's breakdown and the kept path's"
    );
    (a, b, err)
}

/// The shared Kineto traces (`<repo>/../shared/data/kineto`, or one level
/// further up from a worktree under `<root>/wt/`), if present.
pub fn shared(name: &str) -> Option<PathBuf> {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let found = [
        "../../../shared/data/kineto",
        "../../../../shared/data/kineto",
    ]
    .iter()
    .map(|d| crate_dir.join(d).join(name))
    .find(|p| p.exists());
    if found.is_none() {
        eprintln!("note: the shared trace {name} is absent; test skipped");
    }
    found
}

/// The top `n` states of the criticality table as (state, critical ns).
pub fn top(a: &Analysis, n: usize) -> Vec<(String, u64)> {
    a.states
        .iter()
        .take(n)
        .map(|s| (s.state.clone(), s.critical_ns))
        .collect()
}
