//! The options several commands take, declared once: each group is
//! flattened into the commands' `Args` (`#[command(flatten)]`), so a flag
//! has the same name, value and help wherever it appears
//! (docs/commands.md, "Options shared by the commands").

use crate::output::is_stdout;
use std::path::{Path, PathBuf};

/// `--json`.
#[derive(clap::Args, Clone, Debug)]
pub struct Json {
    /// Print JSON instead of text (the fields: docs/json.md).
    #[arg(long)]
    pub json: bool,
}

/// `--top N`: how many rows of the command's table are shown; without it,
/// the command's own default (`top_or`).
#[derive(clap::Args, Clone, Debug)]
pub struct Top {
    /// Show only the first N rows of the table, in its order (by default
    /// every row, but: what fits the screen in analyze's text on a terminal,
    /// 5 in demo's text, 15 in diff's, 10 in whatif, 15 in profile's and
    /// counters' tables).
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
}

impl Top {
    /// N, or `default` without `--top`.
    pub fn top_or(&self, default: usize) -> usize {
        self.top.unwrap_or(default)
    }
}

/// `--wide`.
#[derive(clap::Args, Clone, Debug)]
pub struct Wide {
    /// Print names in full, however wide the lines get (by default they
    /// are cut in the middle to fit COLUMNS or the terminal's width).
    #[arg(long)]
    pub wide: bool,
}

impl Wide {
    /// The width names are cut to: `fit` (COLUMNS or the terminal's),
    /// none with `--wide`.
    pub fn width(&self, fit: Option<usize>) -> Option<usize> {
        fit.filter(|_| !self.wide)
    }
}

/// `-o/--output FILE` of the commands that print a report.
#[derive(clap::Args, Clone, Debug)]
pub struct Output {
    /// Write the output to FILE instead of standard output (counters:
    /// standard error); `-` is standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl Output {
    /// The file to write, if any: `-o -` is standard output, as no `-o` is.
    pub fn file(&self) -> Option<&Path> {
        self.output.as_deref().filter(|p| !is_stdout(p))
    }
}

/// `--from SM` and `--to SM[:STATE]`: where the critical paths start and
/// end.
#[derive(clap::Args, Clone, Debug)]
pub struct PathEnds {
    /// Keep only paths that start at this SM's first node (SM or SYS/SM).
    #[arg(long, value_name = "SM")]
    pub from: Option<String>,
    /// End the paths at this SM's last node, or at its last transition
    /// into STATE.
    #[arg(long, value_name = "SM[:STATE]")]
    pub to: Option<String>,
}

/// `--annotation NAME` and `--instance K`: one iteration of a PyTorch
/// profiler trace.
#[derive(clap::Args, Clone, Debug)]
pub struct Annotation {
    /// PyTorch profiler traces: analyze only one instance of the user
    /// annotation whose name starts with NAME (e.g. ProfilerStep); a trace
    /// of another format is refused.
    #[arg(long, value_name = "NAME")]
    pub annotation: Option<String>,
    /// With --annotation: which instance, 0-based in time order.
    #[arg(long, value_name = "K", default_value_t = 0, requires = "annotation")]
    pub instance: usize,
}

/// `--trace ID`: one request of a span file.
#[derive(clap::Args, Clone, Debug)]
pub struct Request {
    /// Span files of several requests: take only the request (trace) of
    /// this trace id, exactly as a file holding only it.
    #[arg(long = "trace", value_name = "ID")]
    pub request: Option<String>,
}
