//! The demo's model runs: parameters overridden from the command line, the
//! simulator's records streamed into the engine (and, with `-o`, into a
//! .cpt trace), and the run's JSON document.

use crate::error::{CliError, Result};
use crate::output::write_file;
use critpath_engine::{Analysis, Engine, Options};
use critpath_readers::{Codec, CptWriter};
use critpath_sim::{simulate, Config, Outcome, Params};
use critpath_trace::{Interner, Pos};
use critpath_views::json::{DemoDoc, ModelDoc};
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;

/// One model run and its analysis.
pub struct Run {
    pub cfg: Config,
    pub outcome: Outcome,
    pub analysis: Analysis,
}

/// The model's parameters with `--param NAME=VALUE` overrides.
pub fn params(overrides: &[String]) -> Result<Params> {
    let mut p = Params::default();
    for o in overrides {
        let (name, value) = o.split_once('=').ok_or_else(|| {
            CliError::input(format!(
                "--param {o}: expected NAME=VALUE (see `critpath demo --list-params`)"
            ))
        })?;
        let value: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| {
                CliError::input(format!("--param {o}: VALUE must be a positive number"))
            })?;
        p.set(name.trim(), value).map_err(|e| {
            let names: Vec<&str> = Params::INFO.iter().map(|i| i.name).collect();
            CliError::input(format!(
                "--param {o}: {e}{}",
                critpath_engine::engine::nearest(name, &names)
            ))
        })?;
    }
    Ok(p)
}

/// The table of parameters, their values, units and sources.
pub fn list_params() -> String {
    let p = Params::default();
    let mut o = String::new();
    for i in Params::INFO {
        o.push_str(&format!(
            "{:<28} {:>10} {:<10} {}\n",
            i.name,
            p.get(i.name).unwrap_or(0.0),
            i.unit,
            i.source
        ));
    }
    o
}

/// Runs the model with the engine fed as it goes; with `output`, the trace
/// is written there too.
pub fn run(cfg: Config, output: Option<&Path>) -> Result<Run> {
    let (outcome, engine, strings) = match output {
        None => simulate_into(&cfg, None).map_err(|e| CliError::analysis(e.into()))?,
        Some(path) => write_file(path, &[], |out| {
            let mut w = CptWriter::new(out, Codec::Zstd)?;
            let r = simulate_into(&cfg, Some(&mut w))?;
            w.finish()?;
            Ok(r)
        })?,
    };
    let analysis = engine.finish(&strings).map_err(CliError::analysis)?;
    Ok(Run {
        cfg,
        outcome,
        analysis,
    })
}

type Writer = CptWriter<BufWriter<File>>;

/// Simulates, feeding every record to a new engine and to `writer`.
fn simulate_into(
    cfg: &Config,
    mut writer: Option<&mut Writer>,
) -> io::Result<(Outcome, Engine<'static>, Interner)> {
    let mut engine = Engine::new(Options::default());
    let mut strings = Interner::new();
    let mut write_err = None;
    let mut n = 0u64;
    let outcome = simulate(cfg, &mut strings, &mut |r, s| {
        n += 1;
        engine.feed(r, Pos::record(n), s);
        if let Some(w) = writer.as_mut() {
            if let Err(e) = w.write(r, s) {
                write_err.get_or_insert(e);
            }
        }
    });
    match write_err {
        Some(e) => Err(e),
        None => Ok((outcome, engine, strings)),
    }
}

/// A run's JSON: its analysis (the `top` most critical states) and `model`.
pub fn doc(r: &Run, top: Option<usize>) -> DemoDoc {
    let mut analysis = r.analysis.clone();
    if let Some(top) = top {
        analysis.truncate_states(top);
    }
    DemoDoc {
        analysis,
        model: ModelDoc {
            throughput_mbps: r.outcome.throughput_mbps,
            bus: r.cfg.bus.name(),
            payload: r.cfg.payload,
            netfilter: r.cfg.netfilter,
            packets: r.cfg.packets,
            simulated_ns: r.outcome.sim_ns,
            frames: r.outcome.frames,
            events: r.outcome.events,
            records: r.outcome.records,
        },
        runs: None,
    }
}
