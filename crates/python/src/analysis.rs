//! `critpath.analyze`: one analysis of one trace (or of one request of a
//! span file), of several hosts' traces merged on one clock, or of PyTorch
//! profiler (Kineto) traces, run the way
//! `critpath analyze` runs it; and what can be asked of it afterwards
//! (what-if, next paths, slack, the HTML report), each a pass of the same
//! session (critpath-session: the input read once, later passes replayed)
//! with the engine's options, as the CLI does.

use crate::{guarded, Result};
use critpath_engine::analyses::NextPath;
use critpath_engine::{Analysis, Observer, Options, Speedup, Visit};
use critpath_gpu::{GpuBreakdown, GpuOptions, RanksReport};
use critpath_import::multi::{Alignment, MergedSource};
use critpath_import::Format;
use critpath_session::{nonempty, Session, Settings};
use critpath_trace::{Interner, ReadError};
use critpath_views::json::{self, AnalyzeDoc};
use critpath_views::report_runs::{self, FirstRun};
use pyo3::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What was asked: the traces and `analyze`'s options.
struct Request {
    paths: Vec<PathBuf>,
    from: Option<String>,
    to: Option<String>,
    /// Kineto traces only.
    gpu: Option<GpuOptions>,
    /// Several files (not Kineto): their clocks' alignment.
    alignment: Option<Alignment>,
    /// One input, or Kineto inputs: their session.
    session: Option<Mutex<Session>>,
    /// Kineto inputs whose first (GPU) pass is still to come.
    gpu_first: Mutex<bool>,
    /// The settings resolved at the package's edge.
    settings: Settings,
}

/// What a Kineto analysis knows beside the engine's result.
struct GpuExtra {
    breakdown: GpuBreakdown,
    ranks: Option<RanksReport>,
}

/// An analysis with its path's segments, and what it was asked.
#[pyclass(module = "critpath._native", frozen)]
pub struct Native {
    req: Request,
    analysis: Analysis,
    gpu: Option<GpuExtra>,
    read_error: Option<String>,
}

/// `critpath._native.analyze(paths, from_, to, annotation, instance,
/// trace)`.
#[pyfunction]
#[pyo3(signature = (paths, from_=None, to=None, annotation=None, instance=0, trace=None))]
pub fn analyze(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    from_: Option<String>,
    to: Option<String>,
    annotation: Option<String>,
    instance: usize,
    trace: Option<String>,
) -> PyResult<Native> {
    guarded(py, move || {
        if paths.is_empty() {
            return Err("no trace given: pass a path or a list of paths".into());
        }
        // The Python package's edge: its settings come from the
        // environment (docs/settings.md).
        let settings = crate::settings();
        critpath_session::env::install(&settings);
        // As the CLI: one trace, PyTorch profiler ranks and span files
        // (one set of requests) are one session; other traces of several
        // hosts are merged with aligned clocks.
        // The inputs are opened once, and what they are decides.
        let opened = Session::open(&paths, &settings).map_err(read)?;
        (opened.check_annotation(annotation.as_deref())).map_err(|e| e.to_string())?;
        let one = paths.len() == 1
            || (trace.is_none() && opened.all(Format::Kineto))
            || opened.all(Format::Spans);
        let session = one.then_some(opened);
        if let (Some(id), None) = (&trace, &session) {
            return Err(format!(
                "--trace {id}: picks one request of span files; the other traces are not span files"
            ));
        }
        let kineto = trace.is_none() && session.as_ref().is_some_and(|s| s.all(Format::Kineto));
        let alignment = match session {
            Some(_) => None,
            None => Some(critpath_import::multi::align(&paths).map_err(read)?),
        };
        let session = session.map(|mut s| {
            s.set_request(trace.clone());
            Mutex::new(s)
        });
        // One analysis has one path: the CLI prints one per file instead.
        let then = "; one analysis cannot span them: analyze each file (critpath.analyze(path) for each, or critpath.analyze_many(paths)), or give the hosts' messages the same ids on both sides";
        if let Some(msg) = alignment
            .as_ref()
            .and_then(|a| a.unlinked_message(&paths, then))
        {
            return Err(msg);
        }
        let req = Request {
            gpu: kineto.then_some(GpuOptions {
                annotation,
                instance,
            }),
            paths,
            from: from_,
            to,
            alignment,
            session,
            gpu_first: Mutex::new(kineto),
            settings,
        };
        // The graph is kept for what-ifs (the verdict's among them), as
        // the CLI's `analyze` keeps it (under `from` too).
        let opts = Options {
            keep_path: true,
            rewalk: true,
            ..req.options()
        };
        let (analysis, gpu, err) = req.run(opts)?;
        Ok(Native {
            req,
            analysis,
            gpu,
            read_error: err.map(|e| e.to_string()),
        })
    })
}

fn read(e: ReadError) -> String {
    e.to_string()
}

/// The value behind a lock, even if a panic poisoned it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Request {
    /// The engine's options for `from` and `to`.
    fn options(&self) -> Options {
        Options {
            from: self.from.clone(),
            to: self.to.clone(),
            ..Default::default()
        }
    }

    /// The traces' names joined with ` + ` (as the CLI names them).
    fn name(&self) -> String {
        let names: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        names.join(" + ")
    }

    /// An engine failure in the CLI's words.
    fn failed(&self, e: critpath_engine::Error) -> String {
        if e.is_usage() {
            e.with_option()
        } else if self.paths.len() == 1 {
            format!("{}: analysis failed: {e}", self.paths[0].display())
        } else {
            format!("analysis failed: {e}")
        }
    }

    /// A session's failure in the CLI's words.
    fn session_failed(&self, e: critpath_session::Error) -> String {
        match e {
            critpath_session::Error::Engine { source, .. } => self.failed(source),
            other => other.to_string(),
        }
    }

    /// One pass over the traces; a reader error that let it finish comes
    /// back beside the analysis.
    fn run(&self, opts: Options) -> Result<(Analysis, Option<GpuExtra>, Option<ReadError>)> {
        self.run_observed(opts, &mut |_: &Visit, _: &Interner| {})
    }

    /// [`Request::run`] with every visit handed to `obs`.
    fn run_observed(
        &self,
        opts: Options,
        obs: &mut dyn Observer,
    ) -> Result<(Analysis, Option<GpuExtra>, Option<ReadError>)> {
        if let Some(window) = &self.gpu {
            if std::mem::take(&mut *lock(&self.gpu_first)) {
                return self.run_gpu(window, opts, obs);
            }
        }
        let (a, err) = match (&self.alignment, &self.session) {
            (_, Some(s)) => lock(s)
                .analyze_observed(opts, obs, &mut |_, _| {})
                .map_err(|e| self.session_failed(e))?,
            (Some(al), None) => {
                let mut src = MergedSource::new(&self.paths, al).map_err(read)?;
                let opts = opts.with_settings(&self.settings);
                let (mut a, err) =
                    critpath_engine::analyze_observed(&mut src, opts, obs, |_, _| {})
                        .map_err(|e| self.failed(e))?;
                a.diagnostics.extend(al.diagnostics());
                (a, err)
            }
            (None, None) => return Err("no trace given".into()),
        };
        if self.alignment.is_some() {
            return Ok((a, None, err));
        }
        // As the CLI: an input without records is an error, in its words.
        let name = self.paths[0].display().to_string();
        let (a, err) = nonempty(&name, (a, err)).map_err(|e| e.to_string())?;
        Ok((a, None, err))
    }

    /// Kineto traces: one rank or several, limited to one instance of an
    /// annotation, with the path broken down by what bounds it.
    fn run_gpu(
        &self,
        window: &GpuOptions,
        opts: Options,
        obs: &mut dyn Observer,
    ) -> Result<(Analysis, Option<GpuExtra>, Option<ReadError>)> {
        let mut s = lock(self.session.as_ref().ok_or("no Kineto session")?);
        let keep_path = opts.keep_path;
        let run = s
            .gpu(window, opts, keep_path, obs, &mut |_, _| {})
            .map_err(|e| self.session_failed(e))?;
        let (a, err) = (run.analysis, run.err);
        let (breakdown, ranks) = (run.breakdown, run.ranks);
        Ok((a, Some(GpuExtra { breakdown, ranks }), err))
    }
}

impl Native {
    /// The analysis without its path (as `analyze --json` without `--path`).
    fn without_path(&self) -> Analysis {
        self.analysis.without_path()
    }

    /// `analyze --json` of this analysis with these next paths.
    fn document(&self, a: &Analysis, next: &[NextPath]) -> String {
        let offsets = self.req.alignment.as_ref().map(|al| al.offsets.as_slice());
        let mut doc = AnalyzeDoc::new(a, next, offsets);
        if let Some(g) = &self.gpu {
            doc.gpu = Some(&g.breakdown);
            doc.ranks = g.ranks.as_ref();
        }
        json::document(&doc)
    }
}

#[pymethods]
impl Native {
    /// The critical path's length (ns).
    #[getter]
    fn length_ns(&self) -> u64 {
        self.analysis.critical_path.length_ns
    }

    /// A reader error that let the analysis finish (the CLI prints the
    /// results, then this, and exits with 2).
    #[getter]
    fn read_error(&self) -> Option<String> {
        self.read_error.clone()
    }

    /// The verdict line `critpath analyze` opens with (empty when no state
    /// is on the path).
    fn verdict(&self, py: Python<'_>) -> PyResult<String> {
        guarded(py, || {
            let run = |o| self.req.run(o).map(|r| r.0);
            let faster =
                critpath_engine::analyses::top_twice(&self.analysis, self.req.options(), run)?;
            let faster = faster.map(critpath_views::analysis::Faster::from);
            Ok(critpath_views::analysis::verdict(
                &self.analysis,
                faster,
                None,
            ))
        })
    }

    /// The CLI's `analyze --json` document; with `path`, also the path's
    /// segments (`analyze --json --path`).
    #[pyo3(signature = (path=false))]
    fn to_json(&self, py: Python<'_>, path: bool) -> PyResult<String> {
        guarded(py, || {
            Ok(match path {
                true => self.document(&self.analysis, &[]),
                false => self.document(&self.without_path(), &[]),
            })
        })
    }

    /// The critical path's length with these speed-ups (`SM:STATE=FACTOR`).
    fn whatif(&self, py: Python<'_>, specs: Vec<String>) -> PyResult<u64> {
        guarded(py, || {
            let speedups = specs
                .iter()
                .map(|s| Speedup::parse(s).map_err(|e| e.with_option()))
                .collect::<Result<Vec<_>>>()?;
            if speedups.is_empty() {
                return Err("whatif needs at least one speed-up {\"SM:STATE\": FACTOR}".into());
            }
            if let Some(p) = self.analysis.predict(&speedups) {
                return Ok(p.length_ns);
            }
            let opts = Options {
                speedups,
                ..self.req.options()
            };
            let (a, _, _) = self.req.run(opts)?;
            Ok(a.critical_path.length_ns)
        })
    }

    /// `analyze --json --next K [--remove SM:STATE]...`: the document with
    /// the next most critical paths.
    fn next(&self, py: Python<'_>, k: usize, remove: Vec<String>) -> PyResult<String> {
        guarded(py, || {
            if k == 0 {
                return Err("--next 0: expected how many next paths to find, 1 or more (--next alone finds one)".into());
            }
            let mut failure = None;
            let ends = self.req.options();
            let next =
                critpath_engine::analyses::next_paths(&self.analysis, k, &remove, &ends, |o| {
                    self.req.run(o).map(|r| r.0).map_err(|f| {
                        failure = Some(f);
                        std::io::Error::other("analysis failed")
                    })
                });
            let next = match (next, failure) {
                (Ok(v), _) => v,
                (Err(_), Some(f)) => return Err(f.replacen("--speedup ", "--remove ", 1)),
                (Err(e), None) => return Err(e.to_string()),
            };
            Ok(self.document(&self.without_path(), &next))
        })
    }

    /// `critpath slack --json`: every state's slack, least first.
    fn slack(&self, py: Python<'_>) -> PyResult<String> {
        guarded(py, || {
            let opts = Options {
                slack: true,
                ..self.req.options()
            };
            let (mut a, _, _) = self.req.run(opts)?;
            a.sort_by_slack();
            Ok(json::pretty(&a))
        })
    }

    /// Writes `critpath report`'s HTML file to `output`, whole or not at all.
    fn report(&self, py: Python<'_>, output: PathBuf) -> PyResult<()> {
        guarded(py, || {
            // As `critpath report`: the analysis with the timeline's links
            // and its graph kept for the what-ifs, then the timeline's run.
            let mut first = FirstRun::default();
            let opts = Options {
                rewalk: true,
                ..self.req.options()
            };
            let (a, _, _) = self.req.run_observed(opts, &mut first)?;
            let extras = report_runs::extras(&a, first, &mut |o, obs| {
                self.req.run_observed(o, obs).map(|r| r.0)
            })?;
            let html = critpath_views::report::html(&a, &self.req.name(), &[], &extras);
            write_atomically(&output, &self.req.paths, html.as_bytes())
        })
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it into
/// place; refuses to replace one of `inputs`.
fn write_atomically(path: &Path, inputs: &[PathBuf], bytes: &[u8]) -> Result<()> {
    let same = |p: &Path| match (path.canonicalize(), p.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if let Some(input) = inputs.iter().find(|p| same(p)) {
        return Err(format!(
            "{}: this is the input {}; write the output to another file (the input was left as it was)",
            path.display(),
            input.display()
        ));
    }
    let failed = |e: std::io::Error| format!("{}: cannot write: {e}", path.display());
    // As the CLI: a directory is refused, not renamed onto.
    if path.is_dir() {
        return Err(failed(std::io::Error::from_raw_os_error(libc::EISDIR)));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".critpath-report.")
        .suffix(".partial")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(failed)?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.flush())
        .map_err(failed)?;
    tmp.persist(path).map_err(|e| failed(e.error))?;
    Ok(())
}
