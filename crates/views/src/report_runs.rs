//! What a report needs beyond the analysis: the what-ifs of the most
//! critical states and the timeline's states, each a further run of the
//! engine that the caller performs (the CLI and the Python package open
//! their traces their own way; the report is the same either way).

use crate::report::{Extras, WhatIf};
use crate::report_path::{PathGather, PathPage};
use crate::timeline::{lane_name, lanes, Collector, Links, Timeline};
use critpath_engine::{Analysis, Observer, Options, PathEdge, Prediction, Visit};
use critpath_trace::Interner;

/// Traces of more records than this get no what-ifs in the report when
/// its first pass kept no graph for them (each then runs the whole
/// analysis again).
pub const WHATIF_MAX_RECORDS: u64 = 2_000_000;

/// The most critical states whose what-ifs the report shows.
pub const WHATIF_STATES: usize = 3;

/// One more run of the engine over the report's traces, with these
/// options, every visit handed to the observer.
pub type Run<'a, E> = dyn FnMut(Options, &mut dyn Observer) -> Result<Analysis, E> + 'a;

/// What the report's first run gathers beside its analysis: the
/// dependences between SMs, and the critical path's figures as the walk
/// back hands over its edges (the analysis needs not keep its path,
/// `Options::keep_path`).
#[derive(Default)]
pub struct FirstRun {
    pub links: Links,
    pub path: PathGather,
}

impl Observer for FirstRun {
    fn visit(&mut self, v: &Visit, strings: &Interner) {
        self.links.visit(v, strings);
    }
    fn wants_path(&self) -> bool {
        true
    }
    fn path_edge(&mut self, edge: &PathEdge, strings: &Interner) {
        self.path.path_edge(edge, strings);
    }
}

/// The report's what-ifs, path and timeline for analysis `a`, whose first
/// run gathered `first`.
pub fn extras<E>(a: &Analysis, first: FirstRun, run: &mut Run<'_, E>) -> Result<Extras, E> {
    let path = first.path.finish();
    Ok(Extras {
        whatif: whatifs(a, run)?,
        timeline: timeline(a, &path, &first.links, run)?,
        path,
    })
}

/// The path with each of the most critical states (the first levers: see
/// [`critpath_engine::analyses::levers`]) twice as fast, then
/// with all of them twice as fast: from the first pass's graph when it
/// kept one (see [`Options::rewalk`]), else each by a run (none then for
/// traces too large).
fn whatifs<E>(a: &Analysis, run: &mut Run<'_, E>) -> Result<Vec<WhatIf>, E> {
    let runs = a.rewalk.is_none() && a.stats.records > WHATIF_MAX_RECORDS;
    if !a.critical_path.found || runs {
        return Ok(Vec::new());
    }
    let top = critpath_engine::analyses::levers(a, WHATIF_STATES);
    let mut sets: Vec<Vec<_>> = top.iter().map(|s| vec![s]).collect();
    if top.len() > 1 {
        sets.push(top.iter().collect());
    }
    let mut out = Vec::new();
    for set in sets {
        let speedups: Vec<_> = set.iter().map(|s| s.speedup(2.0)).collect();
        let b = match a.predict(&speedups) {
            Some(p) => p,
            None => {
                let opts = Options {
                    speedups,
                    ..Default::default()
                };
                let b = run(opts, &mut |_: &Visit, _: &Interner| {})?;
                Prediction {
                    length_ns: b.critical_path.length_ns,
                    scaled_edges: b.stats.scaled_edges,
                }
            }
        };
        out.push(WhatIf {
            states: set
                .iter()
                .map(|s| format!("{}: {}", lane_name(&s.sys, &s.sm), s.state))
                .collect(),
            factor: 2.0,
            length_ns: b.length_ns,
            scaled_edges: b.scaled_edges,
        });
    }
    Ok(out)
}

/// The timeline's lanes with every state they went through during the
/// path (a second pass over the traces).
fn timeline<E>(
    a: &Analysis,
    path: &PathPage,
    links: &Links,
    run: &mut Run<'_, E>,
) -> Result<Option<Timeline>, E> {
    if path.span.is_none() {
        return Ok(None);
    }
    let (chosen, left) = lanes(a, path, links);
    let mut collect = Collector::new(path, chosen);
    run(Options::default(), &mut collect)?;
    Ok(Some(collect.finish(left)))
}
