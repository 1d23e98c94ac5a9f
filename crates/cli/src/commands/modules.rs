//! `critpath modules TRACE --config modules.toml`: VTRACE's module costs
//! on any trace: the configuration names modules by begin and end events;
//! the engine's state visits are turned into instances as the trace streams
//! by (`critpath_engine::modules`), and the table or JSON is printed.

use crate::error::{CliError, Result};
use crate::flags;
use crate::inputs::{finish_with, stream_visits};
use crate::output::{safe, stdout};
use critpath_engine::modules::{ModuleSpec, Modules, Pause, Point, Tracker};
use critpath_views::json;
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    trace: PathBuf,
    /// The module definitions.
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    #[command(flatten)]
    print: flags::Json,
    /// Take the calibrated cost of annotation events out of each instance.
    #[arg(long)]
    correct_overhead: bool,
}

pub fn run(args: Args) -> Result<()> {
    let specs = config(&args.config)?;
    let (m, err) = compute(&args.trace, specs, args.correct_overhead)?;
    for w in &m.warnings {
        eprintln!("critpath: warning: {}", safe(&w.message));
    }
    let text = if args.print.json {
        json::pretty(&m)
    } else {
        critpath_views::modules::table(&m, &args.trace.display().to_string())
    };
    stdout(text.as_bytes())?;
    finish_with(err)
}

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
fn config(path: &Path) -> Result<Vec<ModuleSpec>> {
    let text = std::fs::read_to_string(path).map_err(|source| CliError::CannotRead {
        path: path.to_path_buf(),
        source,
    })?;
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
        CliError::input(format!(
            "{}{at}: {}; expected [[module]] tables with name, begin, end (and optionally sm)",
            path.display(),
            e.message()
        ))
    })?;
    if c.modules.is_empty() {
        return Err(CliError::input(format!(
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
fn compute(
    trace: &Path,
    specs: Vec<ModuleSpec>,
    correct_overhead: bool,
) -> Result<(Modules, Option<critpath_trace::ReadError>)> {
    let mut src = critpath_import::open(trace)?;
    let mut tracker = Tracker::new(specs, os_pause);
    let (a, err) = stream_visits(&mut src, trace, |v, strings| tracker.visit(v, strings))?;
    use critpath_trace::RecordSource;
    let strings = src.strings();
    let cost = if correct_overhead {
        let costs = &a.annotation_costs;
        if costs.is_empty() {
            return Err(CliError::Uncalibrated(trace.to_path_buf()));
        }
        Some(costs.iter().map(|c| c.ns_per_event).sum::<f64>() / costs.len() as f64)
    } else {
        None
    };
    Ok((tracker.finish(strings, cost), err))
}

/// How a kernel recording's states pause a module (docs/os-graph.md).
fn os_pause(state: &str) -> Pause {
    use critpath_os::names::{interrupted, switched_out};
    if switched_out(state) {
        Pause::SwitchedOut
    } else if interrupted(state) {
        Pause::Interrupted
    } else {
        Pause::No
    }
}
