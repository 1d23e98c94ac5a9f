//! `critpath demo`: the built-in host + NIC + I/O-bus model streamed into
//! the engine, PCI and PCI-X side by side (or one bus).

mod model;
mod text;

use crate::error::{CliError, Result};
use crate::flags;
use crate::output::{is_stdout, screen, stdout};
use critpath_sim::{Bus, Config};
use critpath_views::json;
use model::Run;
use std::path::PathBuf;

/// Largest UDP payload.
const MAX_PAYLOAD: u64 = 65_507;
const MAX_PACKETS: u64 = 10_000_000;

#[derive(clap::Args)]
pub struct Args {
    /// One bus only (default: both, side by side).
    #[arg(long, value_enum)]
    bus: Option<BusArg>,
    /// UDP payload per send, bytes (1 to 65507; over 1480 needs IP fragmentation).
    #[arg(long, default_value_t = 1480)]
    payload: u64,
    /// Netfilter hooks in the IP output path.
    #[arg(long, value_enum, default_value = "off")]
    netfilter: OnOff,
    /// Number of sends in the stream.
    #[arg(long, default_value_t = 20_000)]
    packets: u64,
    /// Override a model parameter (see --list-params).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    params: Vec<String>,
    /// List the model's parameters, values and sources.
    #[arg(long)]
    list_params: bool,
    #[command(flatten)]
    print: flags::Json,
    /// Write the trace (.cpt); without --bus, FILE-pci.cpt and FILE-pcix.cpt.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    top: flags::Top,
    #[command(flatten)]
    wide: flags::Wide,
}

/// Narrowest a state's name is cut to.
const MIN_NAME_COLS: usize = 12;

/// States the text shows per run when `--top` is not given.
const TEXT_TOP: usize = 5;

#[derive(Clone, Copy, clap::ValueEnum)]
enum BusArg {
    Pci,
    Pcix,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OnOff {
    On,
    Off,
}

impl Args {
    fn netfilter(&self) -> bool {
        self.netfilter == OnOff::On
    }

    /// The columns the text may take (none with `--wide`).
    fn width(&self) -> Option<usize> {
        self.wide.width(screen(false).width)
    }
}

pub fn run(args: Args) -> Result<()> {
    if args.list_params {
        return stdout(model::list_params().as_bytes());
    }
    if args.payload == 0 || args.payload > MAX_PAYLOAD {
        return Err(CliError::input(format!(
            "--payload {}: a UDP payload is 1 to {MAX_PAYLOAD} bytes",
            args.payload
        )));
    }
    if args.packets == 0 || args.packets > MAX_PACKETS {
        return Err(CliError::input(format!(
            "--packets {}: expected 1 to {MAX_PACKETS} sends",
            args.packets
        )));
    }
    if args.output.as_deref().is_some_and(is_stdout) {
        return Err(CliError::input(
            "-o -: the demo prints its summary on standard output; give a file name for the trace",
        ));
    }
    let params = model::params(&args.params)?;
    let cfg = |bus| Config {
        bus,
        payload: args.payload,
        netfilter: args.netfilter(),
        packets: args.packets,
        params: params.clone(),
    };
    match args.bus {
        Some(BusArg::Pci) => one_bus(&args, cfg(Bus::Pci)),
        Some(BusArg::Pcix) => one_bus(&args, cfg(Bus::Pcix)),
        None => both_buses(&args, cfg(Bus::Pci), cfg(Bus::Pcix)),
    }
}

/// One bus: its summary, or its JSON.
fn one_bus(args: &Args, cfg: Config) -> Result<()> {
    let bus = cfg.bus;
    let r = model::run(cfg, args.output.as_deref())?;
    if args.print.json {
        return stdout(json::document(&model::doc(&r, args.top.top)).as_bytes());
    }
    let mut o = text::header(args);
    o.push_str(&format!("{}\n", bus.describe()));
    // A state's line: 10 columns, then its name.
    let names = args
        .width()
        .map(|w| w.saturating_sub(10).max(MIN_NAME_COLS));
    for l in text::summary(&r, args.top.top_or(TEXT_TOP), names) {
        o.push_str(&l);
        o.push('\n');
    }
    if let Some(p) = &args.output {
        o.push_str(&format!(
            "\ntrace written to {} (analyze, whatif or convert it)\n",
            p.display()
        ));
    }
    stdout(o.as_bytes())
}

/// Both buses: side by side and what moved, or the PCI run's JSON with
/// both runs in `runs`.
fn both_buses(args: &Args, pci: Config, pcix: Config) -> Result<()> {
    let out = |suffix: &str| {
        args.output.as_ref().map(|p| {
            let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("demo");
            p.with_file_name(format!("{stem}-{suffix}.cpt"))
        })
    };
    let (pci_out, pcix_out) = (out("pci"), out("pcix"));
    let a = model::run(pci, pci_out.as_deref())?;
    let b = model::run(pcix, pcix_out.as_deref())?;
    if args.print.json {
        let mut v = model::doc(&a, args.top.top);
        v.runs = Some(vec![
            model::doc(&a, args.top.top),
            model::doc(&b, args.top.top),
        ]);
        return stdout(json::document(&v).as_bytes());
    }
    let mut o = text::header(args);
    o.push_str(&side_by_side(
        &a,
        &b,
        args.top.top_or(TEXT_TOP),
        args.width(),
    ));
    o.push('\n');
    o.push_str(&text::story(&a, &b));
    if let (Some(p), Some(q)) = (&pci_out, &pcix_out) {
        o.push_str(&format!(
            "\ntraces written to {} and {}\n",
            p.display(),
            q.display()
        ));
    }
    stdout(o.as_bytes())
}

/// The two runs' summaries in two columns, each under its bus, within
/// `width` columns when given: the longer state names are cut in the
/// middle first, none below [`MIN_NAME_COLS`].
fn side_by_side(a: &Run, b: &Run, top: usize, width: Option<usize>) -> String {
    let lay = |na: Option<usize>, nb: Option<usize>| {
        let mut left = vec![Bus::Pci.describe().to_string()];
        left.extend(text::summary(a, top, na));
        let mut right = vec![Bus::Pcix.describe().to_string()];
        right.extend(text::summary(b, top, nb));
        text::side_by_side(&left, &right)
    };
    let (mut na, mut nb) = (text::label_cols(a, top), text::label_cols(b, top));
    loop {
        let o = lay(width.map(|_| na), width.map(|_| nb));
        if critpath_views::text::fits(&o, width) || na.max(nb) <= MIN_NAME_COLS {
            return o;
        }
        match na >= nb {
            true => na -= 1,
            false => nb -= 1,
        }
    }
}
