//! `critpath demo` (the host + NIC + I/O-bus model streamed into the engine)
//! and `critpath whatif` (the path length predicted if states ran faster).

use crate::views::dur;
use crate::{emit, run_analysis, Failure};
use critpath_engine::{Analysis, Engine, Options, Speedup};
use critpath_readers::{Codec, CptWriter};
use critpath_sim::{simulate, Bus, Config, Outcome, Params};
use critpath_trace::{Interner, Pos};
use serde_json::{json, Value};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// Largest UDP payload.
const MAX_PAYLOAD: u64 = 65_507;
const MAX_PACKETS: u64 = 10_000_000;

pub struct DemoArgs {
    pub bus: Option<Bus>,
    pub payload: u64,
    pub netfilter: bool,
    pub packets: u64,
    pub params: Vec<String>,
    pub json: bool,
    pub output: Option<PathBuf>,
    pub top: usize,
}

/// One model run and its analysis.
struct Run {
    cfg: Config,
    outcome: Outcome,
    analysis: Analysis,
}

fn params(overrides: &[String]) -> Result<Params, Failure> {
    let mut p = Params::default();
    for o in overrides {
        let (name, value) = o.split_once('=').ok_or_else(|| {
            Failure::Input(format!(
                "--param {o}: expected NAME=VALUE (see `critpath demo --list-params`)"
            ))
        })?;
        let value: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| {
                Failure::Input(format!("--param {o}: VALUE must be a positive number"))
            })?;
        p.set(name.trim(), value).map_err(|e| {
            let names: Vec<&str> = Params::INFO.iter().map(|i| i.name).collect();
            Failure::Input(format!(
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

fn run(cfg: Config, output: Option<&Path>) -> Result<Run, Failure> {
    let mut engine = Engine::new(Options::default());
    let mut strings = Interner::new();
    let mut writer = match output {
        Some(path) => {
            let f = std::fs::File::create(path)
                .map_err(|e| Failure::Input(format!("{}: cannot create: {e}", path.display())))?;
            Some(
                CptWriter::new(BufWriter::with_capacity(1 << 20, f), Codec::Zstd)
                    .map_err(|e| Failure::Input(format!("{}: {e}", path.display())))?,
            )
        }
        None => None,
    };
    let mut write_err = None;
    let mut n = 0u64;
    let outcome = simulate(&cfg, &mut strings, &mut |r, s| {
        n += 1;
        engine.feed(r, Pos::Record(n), s);
        if let Some(w) = writer.as_mut() {
            if let Err(e) = w.write(r, s) {
                write_err.get_or_insert(e);
            }
        }
    });
    if let (Some(w), Some(path)) = (writer, output) {
        let r = match write_err {
            Some(e) => Err(e),
            None => w.finish().map(|_| ()),
        };
        r.map_err(|e| Failure::Input(format!("{}: write failed: {e}", path.display())))?;
    }
    let analysis = engine
        .finish(&strings)
        .map_err(|e| Failure::Input(format!("analysis failed: {}", crate::engine_error(&e))))?;
    Ok(Run {
        cfg,
        outcome,
        analysis,
    })
}

fn model_json(r: &Run) -> Value {
    json!({
        "throughput_mbps": r.outcome.throughput_mbps,
        "bus": r.cfg.bus.name(),
        "payload": r.cfg.payload,
        "netfilter": r.cfg.netfilter,
        "packets": r.cfg.packets,
        "simulated_ns": r.outcome.sim_ns,
        "frames": r.outcome.frames,
        "events": r.outcome.events,
        "records": r.outcome.records,
    })
}

fn report_json(r: &Run, top: usize) -> Value {
    let mut a = r.analysis.clone();
    a.truncate_states(top);
    let mut v = serde_json::to_value(&a).expect("analysis serializes");
    v["model"] = model_json(r);
    v
}

fn label(s: &critpath_engine::results::StateRow) -> String {
    format!("{}: {}", s.sm, s.state)
}

fn summary(r: &Run, top: usize) -> Vec<String> {
    let mut lines = vec![
        format!("throughput      {:.0} Mb/s", r.outcome.throughput_mbps),
        format!(
            "critical path   {}",
            dur(r.analysis.critical_path.length_ns)
        ),
        "most critical".to_string(),
    ];
    for s in r.analysis.states.iter().take(top) {
        lines.push(format!("  {:>5.1}%  {}", s.criticality * 100.0, label(s)));
    }
    lines
}

fn side_by_side(a: &[String], b: &[String]) -> String {
    let w = a.iter().map(|l| l.chars().count()).max().unwrap_or(0) + 4;
    let mut o = String::new();
    for i in 0..a.len().max(b.len()) {
        let l = a.get(i).map(String::as_str).unwrap_or("");
        let r = b.get(i).map(String::as_str).unwrap_or("");
        o.push_str(format!("{l:<w$}{r}").trim_end());
        o.push('\n');
    }
    o
}

/// What moved between two runs, in a sentence.
fn story(a: &Run, b: &Run) -> String {
    let (Some(ta), Some(tb)) = (a.analysis.states.first(), b.analysis.states.first()) else {
        return String::new();
    };
    let speed = b.outcome.throughput_mbps / a.outcome.throughput_mbps.max(1e-9);
    let find = |r: &Run, sm: &str, st: &str| {
        r.analysis
            .states
            .iter()
            .find(|s| s.sm == sm && s.state == st)
            .map(|s| s.criticality * 100.0)
            .unwrap_or(0.0)
    };
    if ta.sm == tb.sm && ta.state == tb.state {
        format!(
            "On both buses {} bounds the stream ({:.0}% and {:.0}% of the critical path); the faster bus changes throughput by {:.2}x.\n",
            label(ta),
            ta.criticality * 100.0,
            tb.criticality * 100.0,
            speed
        )
    } else {
        format!(
            "On {} the stream is bound by {} ({:.0}% of the critical path), a place no software profiler sees.\n\
             On {} throughput rises {:.2}x and the bottleneck moves to {} ({:.0}%); {} falls to {:.1}%.\n",
            a.cfg.bus.describe(),
            label(ta),
            ta.criticality * 100.0,
            b.cfg.bus.describe(),
            speed,
            label(tb),
            tb.criticality * 100.0,
            label(ta),
            find(b, &ta.sm, &ta.state),
        )
    }
}

pub fn demo(args: DemoArgs) -> Result<(), Failure> {
    if args.payload == 0 || args.payload > MAX_PAYLOAD {
        return Err(Failure::Input(format!(
            "--payload {}: a UDP payload is 1 to {MAX_PAYLOAD} bytes",
            args.payload
        )));
    }
    if args.packets == 0 || args.packets > MAX_PACKETS {
        return Err(Failure::Input(format!(
            "--packets {}: expected 1 to {MAX_PACKETS} sends",
            args.packets
        )));
    }
    let params = params(&args.params)?;
    let cfg = |bus| Config {
        bus,
        payload: args.payload,
        netfilter: args.netfilter,
        packets: args.packets,
        params: params.clone(),
    };
    match args.bus {
        Some(bus) => {
            let r = run(cfg(bus), args.output.as_deref())?;
            if args.json {
                emit(
                    None,
                    (serde_json::to_string_pretty(&report_json(&r, args.top)).expect("json")
                        + "\n")
                        .as_bytes(),
                )
            } else {
                let mut o = header(&args);
                o.push_str(&format!("{}\n", bus.describe()));
                for l in summary(&r, args.top) {
                    o.push_str(&l);
                    o.push('\n');
                }
                if let Some(p) = &args.output {
                    o.push_str(&format!(
                        "\ntrace written to {} (analyze, whatif or convert it)\n",
                        p.display()
                    ));
                }
                emit(None, o.as_bytes())
            }
        }
        None => {
            let out = |suffix: &str| {
                args.output.as_ref().map(|p| {
                    let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("demo");
                    p.with_file_name(format!("{stem}-{suffix}.cpt"))
                })
            };
            let (pci_out, pcix_out) = (out("pci"), out("pcix"));
            let a = run(cfg(Bus::Pci), pci_out.as_deref())?;
            let b = run(cfg(Bus::Pcix), pcix_out.as_deref())?;
            if args.json {
                // The PCI run as SPEC §5 + model, and both runs side by side.
                let mut v = report_json(&a, args.top);
                v["runs"] = json!([report_json(&a, args.top), report_json(&b, args.top)]);
                emit(
                    None,
                    (serde_json::to_string_pretty(&v).expect("json") + "\n").as_bytes(),
                )
            } else {
                let mut o = header(&args);
                let mut left = vec![Bus::Pci.describe().to_string()];
                left.extend(summary(&a, args.top));
                let mut right = vec![Bus::Pcix.describe().to_string()];
                right.extend(summary(&b, args.top));
                o.push_str(&side_by_side(&left, &right));
                o.push('\n');
                o.push_str(&story(&a, &b));
                if let (Some(p), Some(q)) = (&pci_out, &pcix_out) {
                    o.push_str(&format!(
                        "\ntraces written to {} and {}\n",
                        p.display(),
                        q.display()
                    ));
                }
                emit(None, o.as_bytes())
            }
        }
    }
}

fn header(args: &DemoArgs) -> String {
    format!(
        "critpath demo: {} sends of {}-byte UDP payloads, netfilter {}, from a host through a NIC on an I/O bus\n\
         (the system of Saidi et al. §5.2, simulated; every component recorded as state machines and analyzed by critpath)\n\n",
        args.packets,
        args.payload,
        if args.netfilter { "on" } else { "off" }
    )
}

pub fn whatif(
    trace: &Path,
    speedups: &[String],
    json_out: bool,
    top: usize,
) -> Result<(), Failure> {
    if speedups.is_empty() {
        return Err(Failure::Input(
            "whatif needs at least one --speedup SM:STATE=FACTOR".into(),
        ));
    }
    let parsed = speedups
        .iter()
        .map(|s| Speedup::parse(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::Input(crate::engine_error(&e)))?;
    let (base, err) = run_analysis(trace, Options::default())?;
    if let Some(e) = err {
        return Err(e.into());
    }
    let (pred, _) = run_analysis(
        trace,
        Options {
            speedups: parsed.clone(),
            ..Default::default()
        },
    )?;
    let b = base.critical_path.length_ns;
    let p = pred.critical_path.length_ns;
    let speedup = if p > 0 {
        b as f64 / p as f64
    } else {
        f64::INFINITY
    };
    if json_out {
        let mut states = pred.states.clone();
        states.truncate(top);
        let mut base_states = base.states.clone();
        base_states.truncate(top);
        let v = json!({
            "baseline_length_ns": b,
            "predicted_length_ns": p,
            "predicted_speedup": speedup,
            "speedups": parsed.iter().map(|s| json!({"state": s.target, "factor": s.factor})).collect::<Vec<_>>(),
            "states": states,
            "baseline_states": base_states,
        });
        return emit(
            None,
            (serde_json::to_string_pretty(&v).expect("json") + "\n").as_bytes(),
        );
    }
    let mut o = String::new();
    let what: Vec<String> = parsed
        .iter()
        .map(|s| format!("{} {}x faster", s.target, s.factor))
        .collect();
    o.push_str(&format!("baseline critical path   {} ({b} ns)\n", dur(b)));
    o.push_str(&format!("with {}\n", what.join(", ")));
    o.push_str(&format!(
        "predicted critical path  {} ({p} ns): {:.3}x faster\n\nmost critical then:\n",
        dur(p),
        speedup
    ));
    for s in pred.states.iter().take(top) {
        let was = base
            .states
            .iter()
            .find(|x| x.sys == s.sys && x.sm == s.sm && x.state == s.state)
            .map(|x| x.criticality)
            .unwrap_or(0.0);
        o.push_str(&format!(
            "  {:>6.2}%  {}: {}   (was {:.2}%)\n",
            s.criticality * 100.0,
            s.sm,
            s.state,
            was * 100.0
        ));
    }
    emit(None, o.as_bytes())
}
