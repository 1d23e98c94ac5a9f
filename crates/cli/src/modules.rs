//! `critpath modules TRACE --config modules.toml`: VTRACE's module costs
//! (seed 001) on any trace: the configuration names modules by begin and
//! end events; the engine's state visits are turned into instances as the
//! trace streams by (`critpath_engine::modules`), and the table or JSON is
//! printed.

use crate::views::{dur, grid};
use crate::Failure;
use critpath_engine::modules::{ModuleSpec, Modules, Point, Tracker};
use serde::Deserialize;
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(rename = "module", default)]
    modules: Vec<ModuleConf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModuleConf {
    name: String,
    #[serde(default)]
    sm: Option<String>,
    begin: String,
    end: String,
}

/// Reads the configuration (errors name the file, line and column).
pub fn config(path: &Path) -> Result<Vec<ModuleSpec>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("{}: cannot read: {e}", path.display())))?;
    let c: Config = toml::from_str(&text).map_err(|e| {
        let at = e
            .span()
            .map(|s| {
                let before = &text[..s.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let col = s.start - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!(":{line}:{col}")
            })
            .unwrap_or_default();
        Failure::Input(format!(
            "{}{at}: {}; expected [[module]] tables with name, begin, end (and optionally sm)",
            path.display(),
            e.message()
        ))
    })?;
    if c.modules.is_empty() {
        return Err(Failure::Input(format!(
            "{}: no module defined; expected [[module]] tables with name, begin, end",
            path.display()
        )));
    }
    Ok(c.modules
        .into_iter()
        .map(|m| ModuleSpec {
            name: m.name,
            sm: m.sm,
            begin: Point::parse(&m.begin),
            end: Point::parse(&m.end),
        })
        .collect())
}

/// Runs the trace through the engine and the module tracker.
pub fn compute(
    trace: &Path,
    specs: Vec<ModuleSpec>,
    correct_overhead: bool,
) -> Result<(Modules, Option<critpath_trace::ReadError>), Failure> {
    let mut src = critpath_import::open(trace)?;
    let mut tracker = Tracker::new(specs);
    let (a, err) = crate::stream_visits(&mut src, trace, |v, strings| tracker.visit(v, strings))?;
    use critpath_trace::RecordSource;
    let strings = src.strings();
    let cost = if correct_overhead {
        let costs = &a.annotation_costs;
        if costs.is_empty() {
            return Err(crate::uncalibrated(trace));
        }
        Some(costs.iter().map(|c| c.ns_per_event).sum::<f64>() / costs.len() as f64)
    } else {
        None
    };
    Ok((tracker.finish(strings, cost), err))
}

/// The table for people.
pub fn table(m: &Modules, name: &str) -> String {
    let mut o = format!("{name}: module costs (time switched out left out)\n");
    if let Some(c) = m.ns_per_event {
        o.push_str(&format!(
            "overhead correction: {c:.1} ns per annotation event taken out of each instance\n"
        ));
    }
    o.push('\n');
    let rows: Vec<Vec<String>> = m
        .modules
        .iter()
        .map(|r| {
            let indent = if r.parent.is_some() { "  " } else { "" };
            vec![
                format!("{indent}{}", r.module),
                r.count.to_string(),
                dur(r.mean_ns.round() as u64),
                dur(r.std_ns.round() as u64),
                dur(r.median_ns),
                dur(r.min_ns),
                dur(r.max_ns),
                dur(r.total_ns),
            ]
        })
        .collect();
    o.push_str(&grid(
        &[
            "module", "count", "mean", "std", "median", "min", "max", "total",
        ],
        &rows,
        &[false, true, true, true, true, true, true, true],
    ));
    if m.modules.is_empty() {
        o.push_str("(no module instance was measured; see the warnings)\n");
    }
    o
}
