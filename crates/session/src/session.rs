//! [`Session`]: the inputs of one question, each opened and sniffed once,
//! and every engine pass over them: the first reads the input (keeping its
//! records, see `log.rs`), the later ones replay what it kept.

use crate::error::{Error, Result};
use crate::log::{Recorder, Replay};
use critpath_engine::{Analysis, Observer, Options};
use critpath_import::input::{given_before, given_twice_message};
use critpath_import::{detect, importer, open_input, AnySource, Format, Input};
use critpath_readers::spans::Requests;
use critpath_trace::{Location, ReadError, Settings};
use std::path::{Path, PathBuf};

/// One input: where it came from, its format and, until a reader takes
/// them, its bytes.
struct Opened {
    path: PathBuf,
    name: String,
    format: Format,
    input: Option<Input>,
}

/// See the module's documentation.
pub struct Session {
    settings: Settings,
    inputs: Vec<Opened>,
    /// `--trace ID`: only this request of a span file.
    request: Option<String>,
    /// A source made ahead of the first pass (the one request of a span
    /// file read for its requests).
    ready: Option<AnySource>,
    /// The trace id of that request.
    request_id: Option<String>,
    replay: Option<Replay>,
    /// Records the first pass keeps for the replay at most.
    cap: usize,
    /// Later passes read a regular file again rather than replay it
    /// ([`Session::read_files_again`]).
    again: bool,
    opens: usize,
}

/// Refuses a file given again, under its name or another, or standard
/// input given twice: its events would count twice.
pub fn each_once(paths: &[PathBuf]) -> std::result::Result<(), ReadError> {
    for (path, before) in paths.iter().zip(given_before(paths)) {
        if let Some(first) = before {
            let why = given_twice_message(&paths[first], "give each input once");
            return Err(ReadError::new(
                &display_name(path),
                Location::File,
                why,
                true,
            ));
        }
    }
    Ok(())
}

impl Session {
    /// Opens each input once and sniffs its format from its first bytes.
    pub fn open(paths: &[PathBuf], settings: &Settings) -> std::result::Result<Self, ReadError> {
        let mut inputs = Vec::with_capacity(paths.len());
        each_once(paths)?;
        for path in paths {
            let input = open_input(path)?;
            let format = detect(&input.head, &input.name)?;
            inputs.push(Opened {
                path: path.clone(),
                name: input.name.clone(),
                format,
                input: Some(input),
            });
        }
        Ok(Session {
            settings: settings.clone(),
            opens: inputs.len(),
            inputs,
            request: None,
            ready: None,
            request_id: None,
            replay: None,
            cap: usize::MAX,
            again: false,
        })
    }

    /// Only the request of trace id `id` of a span file (`--trace ID`).
    pub fn set_request(&mut self, id: Option<String>) {
        self.request = id;
    }

    /// Keeps at most `n` records of the first pass for later passes (0:
    /// none; the default: all). Past them, a later pass is refused on a
    /// one-shot input and reopens a file.
    pub fn keep_records(&mut self, n: usize) {
        self.cap = n;
    }

    /// Keeps no records for later passes where they can read the input
    /// again instead: inputs whose reader decodes as it goes, a regular
    /// file opened again, a pipe or standard input read from the copy its
    /// first reading made ([`open_input`]). A later pass then takes the
    /// memory of one pass, not that of every record; other inputs keep
    /// their records as [`Session::keep_records`] says. (A copy that the
    /// disk could not hold leaves no second reading: the later pass then
    /// says so, naming the input.)
    pub fn read_files_again(&mut self) {
        self.again = true;
    }

    /// The records the first pass over `src` keeps for later passes.
    fn cap_for(&self, src: &AnySource) -> usize {
        match self.again && src.streams() {
            true => 0,
            false => self.cap,
        }
    }

    /// How many times inputs were opened (each input once, unless a later
    /// pass had no replay).
    pub fn opens(&self) -> usize {
        self.opens
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The inputs' formats, in order.
    pub fn formats(&self) -> impl Iterator<Item = Format> + '_ {
        self.inputs.iter().map(|i| i.format)
    }

    /// Is every input of format `f`?
    pub fn all(&self, f: Format) -> bool {
        !self.inputs.is_empty() && self.formats().all(|g| g == f)
    }

    /// `--annotation NAME` picks one instance of an annotation of PyTorch
    /// profiler (Kineto) traces, and nothing of any other input: an input
    /// of another format is refused, by its name and format, rather than
    /// analyzed whole as if the option were absent.
    pub fn check_annotation(&self, annotation: Option<&str>) -> Result<()> {
        let Some(name) = annotation else {
            return Ok(());
        };
        match self.inputs.iter().find(|i| i.format != Format::Kineto) {
            None => Ok(()),
            Some(i) => Err(Error::Input(format!(
                "{}: --annotation {name} applies only to PyTorch profiler (Kineto) GPU traces, and this is {}",
                i.name,
                i.format.noun()
            ))),
        }
    }

    /// The inputs' paths.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.inputs.iter().map(|i| i.path.clone()).collect()
    }

    /// The inputs' names as messages about their analysis give them
    /// (joined with ` + `; `<stdin>` for `-`, as the readers name it).
    pub fn name(&self) -> String {
        let names: Vec<String> = self.inputs.iter().map(|i| i.name.clone()).collect();
        names.join(" + ")
    }

    /// Input `i`'s bytes, for a reader: the ones opened with the session,
    /// the first time; after that (a later pass that has no replay) a
    /// regular file opened again, a pipe or standard input read from the
    /// copy its first reading made ([`open_input`]).
    pub fn take_input(&mut self, i: usize) -> std::result::Result<Input, ReadError> {
        let o = &mut self.inputs[i];
        if let Some(input) = o.input.take() {
            return Ok(input);
        }
        self.opens += 1;
        open_input(&o.path)
    }

    /// Input `i`'s path as given (`-` for standard input).
    pub(crate) fn path_of(&self, i: usize) -> &std::path::Path {
        &self.inputs[i].path
    }

    /// Every input's bytes, in order (see [`Session::take_input`]).
    pub fn take_inputs(&mut self) -> std::result::Result<Vec<Input>, ReadError> {
        (0..self.inputs.len()).map(|i| self.take_input(i)).collect()
    }

    /// The inputs read for per-request analysis: span files holding several
    /// trace ids are their requests (the spans of one id are one request,
    /// whichever file holds them); any other input, or span files of one
    /// request, is one trace, kept as the source of the session's first
    /// pass (`None` then, and [`Session::analyze`] reads it).
    pub fn requests(&mut self) -> std::result::Result<Option<Box<Requests>>, ReadError> {
        if !self.all(Format::Spans) {
            return Ok(None);
        }
        let inputs = self.take_inputs()?;
        match critpath_import::requests_of_all(inputs)? {
            critpath_import::Opened::Trace(src, id) => {
                self.ready = Some(*src);
                self.request_id = Some(id);
                Ok(None)
            }
            critpath_import::Opened::Requests(requests) => Ok(Some(requests)),
        }
    }

    /// The trace id of the one request the session analyzes: `--trace ID`'s,
    /// or that of span files holding one request (`""` for other traces).
    pub fn request_id(&self) -> String {
        (self.request.clone())
            .or_else(|| self.request_id.clone())
            .unwrap_or_default()
    }

    /// Hands the session a source for its first pass, made from its input
    /// (the one request of a span file).
    pub fn set_source(&mut self, src: AnySource) {
        self.ready = Some(src);
    }

    /// The reader of the (one) input, or of its request (`--trace ID`).
    pub fn source(&mut self) -> std::result::Result<AnySource, ReadError> {
        if let Some(src) = self.ready.take() {
            return Ok(src);
        }
        if let (Some(id), true) = (self.request.clone(), self.all(Format::Spans)) {
            let inputs = self.take_inputs()?;
            return critpath_import::request_of_all(inputs, &id);
        }
        if self.inputs.len() > 1 && self.all(Format::Spans) {
            // Span files of one request between them: that request, its
            // spans from every file.
            if let Some(r) = self.requests()? {
                let msg = format!("the span files hold {} requests (trace ids), and one trace is analyzed here: pick a request (--trace ID, e.g. {})", r.len(), r.first_id());
                return Err(ReadError::new(&self.name(), Location::File, msg, true));
            }
            if let Some(src) = self.ready.take() {
                return Ok(src);
            }
        }
        let format = self.inputs[0].format;
        let input = self.take_input(0)?;
        match self.request.clone() {
            Some(id) => critpath_import::request_of(input, format, &id),
            None => match importer(format) {
                Some(i) => i.open(input, &self.settings),
                None => critpath_import::open_with(input, format, &self.settings),
            },
        }
    }

    /// Analyzes the input: the first time by reading it (on a thread of its
    /// own where the format decodes as it goes, and the settings allow),
    /// later by replaying its records. See [`nonempty`] for an input
    /// without records.
    pub fn analyze(
        &mut self,
        opts: Options,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(Analysis, Option<ReadError>)> {
        let name = self.name();
        let opts = opts.with_settings(&self.settings);
        if let Some(r) = self.replay.as_mut() {
            r.rewind();
            return engine(&name, critpath_engine::analyze(r, opts, progress));
        }
        let mut src = self.source()?;
        let (cap, parallel) = (self.cap_for(&src), self.settings.threads && src.streams());
        let result = if parallel {
            let mut rec = Recorder::new(src.reader(), cap);
            let r = critpath_engine::analyze_parallel(&mut rec, opts, progress);
            self.replay = rec.into_replay();
            r
        } else {
            let mut rec = Recorder::new(&mut src, cap);
            let r = critpath_engine::analyze(&mut rec, opts, progress);
            self.replay = rec.into_replay();
            r
        };
        engine(&name, result)
    }

    /// [`Session::analyze`] with every state visit and dependence handed
    /// to `observer`, on the caller's thread as the engine makes them (the
    /// reader on a thread of its own, as for [`Session::analyze`]: the
    /// observer hears the same visits in the same order from either pump).
    pub fn analyze_observed(
        &mut self,
        opts: Options,
        observer: &mut dyn Observer,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(Analysis, Option<ReadError>)> {
        let name = self.name();
        let opts = opts.with_settings(&self.settings);
        if let Some(r) = self.replay.as_mut() {
            r.rewind();
            let result = critpath_engine::analyze_observed(r, opts, observer, progress);
            return engine(&name, result);
        }
        let mut src = self.source()?;
        let (cap, parallel) = (self.cap_for(&src), self.settings.threads && src.streams());
        let result = if parallel {
            let mut rec = Recorder::new(src.reader(), cap);
            let observed = critpath_engine::observed_engine(&mut rec, opts, observer);
            let r = critpath_engine::run_parallel(&mut rec, observed, progress);
            self.replay = rec.into_replay();
            r
        } else {
            let mut rec = Recorder::new(&mut src, cap);
            let r = critpath_engine::analyze_observed(&mut rec, opts, observer, progress);
            self.replay = rec.into_replay();
            r
        };
        engine(&name, result)
    }

    /// Keeps the replay of a pass made by the caller over a source of its
    /// own (see `gpu.rs`).
    pub(crate) fn keep_replay(&mut self, replay: Option<Replay>) {
        self.replay = replay;
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }
}

/// The engine's result, its failure naming the input.
fn engine(
    name: &str,
    result: critpath_engine::error::Result<(Analysis, Option<ReadError>)>,
) -> Result<(Analysis, Option<ReadError>)> {
    result.map_err(|source| Error::Engine {
        name: name.to_string(),
        source,
    })
}

/// An analysis of an input without records is an error (its reader's,
/// when it had one).
pub fn nonempty(
    name: &str,
    (a, err): (Analysis, Option<ReadError>),
) -> Result<(Analysis, Option<ReadError>)> {
    if a.stats.records == 0 {
        if let Some(mut e) = err {
            // Whatever the reader said it covers, nothing came before it.
            e.message += " (no record could be read before it: nothing to analyze)";
            return Err(Error::Read(e));
        }
        return Err(Error::Input(format!("{name}: the trace holds no records")));
    }
    Ok((a, err))
}

/// The name `path` has in messages (`<stdin>` for `-`).
pub fn display_name(path: &Path) -> String {
    critpath_import::input::display_name(path)
}
