//! perf.data as records: the kernel events `critpath-readers` decodes from
//! the file ([`KernelEvents`], on a thread of its own: [`decoding`]) are
//! fed, merged in time order with the SDKs' annotations recorded beside it,
//! to the OS graph builder ([`crate::osgraph`]), whose records this source
//! yields; each event also goes to a [`KernelObserver`] when one is set.
//!
//! A damaged file (perf killed, disk full, copied short) still yields what
//! can be read: the reader repairs the header in memory to cover the
//! complete records, and the analysis says the file was cut.

mod decoding;

use crate::names::{OsSm, SCALES_WITH};
use crate::observer::KernelObserver;
use crate::osgraph::Builder;
use crate::recorder::Recorder;
use critpath_readers::annot::AnnotReader;
use critpath_readers::perf::names::Found;
use critpath_readers::perf::records::Damage;
use critpath_readers::perf::{KernelEvents, Step};
use critpath_trace::DiagnosticKind;
use critpath_trace::{
    Diagnostic, Interner, Location, Pos, ReadError, Record, RecordSource, Scope, Summary,
};
use decoding::Decoding;
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

pub use critpath_readers::perf::file::is_perf_data;
pub use critpath_readers::perf::symbols::symbols_path;
pub use critpath_readers::perf::{CORE_TRACEPOINTS, NET_TRACEPOINTS, SYSCALL_TRACEPOINTS};

/// Reads a perf.data file as records of the OS execution graph.
pub struct PerfSource {
    decoding: Decoding,
    builder: Builder,
    index: u64,
    /// Every event has been fed (the builder is finished).
    done: bool,
    /// How far reading has come, in bytes of the file.
    progress: u64,
    /// Events perf reported lost.
    lost: u64,
    /// Samples dropped as copies of one read before.
    repeated: u64,
    /// Samples that could not be read, and where the first starts.
    malformed: (u64, Option<usize>),
    /// Damaged record headers skipped over.
    damage: Damage,
    /// The file, as messages name it.
    name: String,
    problems: Vec<Diagnostic>,
    error: Option<ReadError>,
    scope: Scope,
    /// The SDKs' annotations recorded with it (`OUT.annot`), merged in
    /// time order.
    annot: Option<AnnotReader>,
    /// See [`PerfSource::observe`]. `Send`, so that the source can read on
    /// a thread of its own while the engine runs on another.
    observer: Option<Box<dyn KernelObserver + Send>>,
    /// The recorder's own running time (diagnostic `recorder-share`).
    recorder: Recorder,
    /// How thread names stand ([`RecordSource::prepare`]).
    names: Names,
    /// With the last batch of a file whose names came late: the whole
    /// file's names ([`KernelEvents::gathered`]).
    gathered: Option<(Found, Option<Diagnostic>)>,
    /// How much of the file's head is walked for names when the rest come
    /// late (`HEAD_BYTES`; tests make it small).
    head: u64,
    /// Threads renamed at the end, when names came late.
    renamed: Option<usize>,
    /// Times the file was read again ([`RecordSource::restart`]).
    restarts: u32,
    /// The file and how it was opened, to read it again
    /// ([`RecordSource::restart`]).
    path: PathBuf,
    in_place: bool,
    /// Threads of its own may read and decode (else all on the caller's).
    threads: bool,
}

/// How the thread names of a source stand.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Names {
    /// Not settled yet (see [`KernelEvents::settle_names`]).
    Open,
    /// Final from the first event.
    Final,
    /// As known from the file's head: the rest come with the last event,
    /// and threads are renamed by the summary.
    Late,
    /// The summary found the head's recorded command wrong: the file is to
    /// be read again.
    Redo,
}

/// The analysis's default scope: the recorded command's main thread, when
/// the file has it and has context switches (without them threads have no
/// states, so the thread cannot bound the path; the reader's error says
/// why).
fn scope(reader: &KernelEvents) -> Scope {
    let rec = &reader.recording;
    match rec.target.filter(|_| rec.has("sched:sched_switch")) {
        Some((tid, _)) => {
            let comm = rec.names.get(&tid).map(String::as_str).unwrap_or("?");
            let sm = OsSm::Thread { comm, tid }.to_string();
            Scope {
                from: Some(sm.clone()),
                to: Some(sm),
                scales_with: SCALES_WITH.to_vec(),
            }
        }
        None => Scope {
            scales_with: SCALES_WITH.to_vec(),
            ..Scope::default()
        },
    }
}

impl PerfSource {
    pub fn open(path: &Path) -> Result<PerfSource, ReadError> {
        Self::open_with(path, true)
    }

    /// [`Self::open`]; `in_place` false reads every file with
    /// `linux-perf-data`'s general iterator (to check the in-place reader
    /// against it).
    pub fn open_with(path: &Path, in_place: bool) -> Result<PerfSource, ReadError> {
        Self::open_threads(path, (in_place, true))
    }

    /// [`Self::open_with`]; `threads` false reads, decodes and walks the
    /// file for names on the caller's thread only (the records are the
    /// same).
    pub fn open_threads(
        path: &Path,
        (in_place, threads): (bool, bool),
    ) -> Result<PerfSource, ReadError> {
        let mut strings = Interner::new();
        let mut reader = KernelEvents::open_with(path, (in_place, threads), &mut strings)?;
        let rec = &mut reader.recording;
        let recorder = Recorder::new(rec.recorder);
        let builder = Builder::new(strings, &rec.host, FxHashMap::default(), None);
        let problems = std::mem::take(&mut reader.problems);
        let error = reader.error.take();
        let annot_path = critpath_readers::annot::sibling(path);
        let annot = if annot_path.exists() {
            Some(AnnotReader::open(&annot_path)?)
        } else {
            None
        };
        let mut decoding = Decoding::new(reader, &builder.strings);
        if !threads {
            decoding.inline();
        }
        Ok(PerfSource {
            problems,
            error,
            decoding,
            builder,
            index: 0,
            done: false,
            progress: 0,
            lost: 0,
            repeated: 0,
            malformed: (0, None),
            damage: Damage::default(),
            name: path.display().to_string(),
            scope: Scope::default(),
            annot,
            observer: None,
            recorder,
            names: Names::Open,
            gathered: None,
            head: critpath_readers::perf::events::HEAD_BYTES,
            renamed: None,
            restarts: 0,
            path: path.to_path_buf(),
            in_place,
            threads,
        })
    }

    /// Settles the thread names before the first event: late (see
    /// [`RecordSource::prepare`]) when `late` and neither annotations nor
    /// an observer may take a thread's name as it goes.
    fn settle(&mut self, late: bool) {
        if self.names != Names::Open {
            return;
        }
        let late = late && self.annot.is_none() && self.observer.is_none();
        let reader = self
            .decoding
            .reader()
            .expect("names settle before the first batch");
        let came_late = reader.settle_names(late.then_some(self.head));
        self.problems.append(&mut reader.problems);
        self.scope = scope(reader);
        let rec = &mut reader.recording;
        let names = std::mem::take(&mut rec.names);
        self.builder.name_threads(names, rec.target);
        self.names = if came_late { Names::Late } else { Names::Final };
    }

    /// At the end of a file whose names came late: every thread renamed
    /// to its latest name (the old and new names), the whole file's
    /// diagnostic of the command's thread, and whether the head's choice
    /// of that thread holds (else the file is read again).
    fn settle_late(
        &mut self,
        gathered: Option<(Found, Option<Diagnostic>)>,
    ) -> Vec<(String, String)> {
        let Some((found, said)) = gathered else {
            // Not read to its end: the latest names are not known.
            self.redo("the thread names (the file was not read to its end)");
            return Vec::new();
        };
        self.problems.extend(said);
        if found.target != self.builder.target() {
            self.redo("the recorded command's thread");
            return Vec::new();
        }
        match self.builder.rename_threads(&found.names) {
            Ok(renamed) => {
                self.renamed = Some(renamed.len());
                self.scope = std::mem::take(&mut self.scope).renamed(&renamed);
                renamed
            }
            Err(name) => {
                self.redo(&format!("a thread's latest name ({name}, another SM's)"));
                Vec::new()
            }
        }
    }

    /// The pass over a file whose names came late was made on a wrong
    /// guess (`what`): it is read again ([`RecordSource::restart`]); should
    /// that fail, the analysis says so.
    fn redo(&mut self, what: &str) {
        self.names = Names::Redo;
        let e = ReadError::new(
            &self.name,
            Location::File,
            format!("{what} differs at the end of the file from what its first records said, and reading it again failed: the analysis is of the first guess"),
            false,
        );
        self.error = self.error.take().or(Some(e));
    }

    /// For tests: walks only `bytes` of the file's head for names when the
    /// rest may come late (see [`RecordSource::prepare`]), so that small
    /// files have threads renamed at the end.
    #[doc(hidden)]
    pub fn names_head(&mut self, bytes: u64) {
        self.head = bytes;
    }

    /// For tests: how many threads were renamed at the end (`None`: the
    /// names did not come late), and how many times the file was read
    /// again.
    #[doc(hidden)]
    pub fn late_names(&self) -> (Option<usize>, u32) {
        (self.renamed, self.restarts)
    }

    /// Decodes on the caller's thread, as with `CRITPATH_THREADS=1`
    /// (call it before reading; the records are the same).
    pub fn decode_inline(&mut self) {
        self.decoding.inline();
    }

    /// Hands every kernel event decoded, in time order, to `observer` as
    /// the records are read; [`Self::take_observer`] gives it back.
    pub fn observe(&mut self, observer: Box<dyn KernelObserver + Send>) {
        self.observer = Some(observer);
    }

    /// The observer set with [`Self::observe`], if it is a `T`.
    pub fn take_observer<T: KernelObserver>(&mut self) -> Option<T> {
        let o: Box<dyn std::any::Any + Send> = self.observer.take()?;
        o.downcast::<T>().ok().map(|o| *o)
    }

    /// See [`Builder::charge_cpu_holders`]; before the first record.
    pub fn charge_cpu_holders(&mut self, on: bool) {
        self.builder.charge_cpu_holders(on);
    }

    /// The symbols the OS graph's records use.
    pub fn builder(&self) -> &Builder {
        &self.builder
    }

    /// Feeds the next batch of decoded events; an error of the file ends
    /// reading after the events before it.
    fn feed_batch(&mut self) -> Result<(), ReadError> {
        let Some(b) = self.decoding.next(&mut self.builder.strings) else {
            self.finish_input();
            return Ok(());
        };
        for k in &b.events {
            if let Some(o) = self.observer.as_mut() {
                o.event(k, &self.builder.strings);
            }
            feed_annotations(&mut self.annot, &mut self.builder, Some(k.t));
            self.recorder.event(k);
            self.builder.feed(k);
        }
        (self.progress, self.lost, self.repeated) = (b.progress, b.lost, b.repeated);
        self.malformed = b.malformed;
        self.damage = b.damage;
        let (done, error) = (b.done, b.error.take());
        self.gathered = self.gathered.take().or(b.gathered.take());
        if done {
            self.finish_input();
        }
        error.map_or(Ok(()), Err)
    }

    fn finish_input(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        feed_annotations(&mut self.annot, &mut self.builder, None);
        self.builder.finish();
    }

    /// Appends up to `max` records to `out`, numbered; fewer only at the
    /// end.
    fn fill(&mut self, out: &mut Vec<(Record, Pos)>, max: usize) -> Result<(), ReadError> {
        self.settle(false);
        loop {
            let room = max - out.len();
            let index = &mut self.index;
            self.builder.drain_ready_into(room, self.done, out, |r| {
                *index += 1;
                (r, Pos::record(*index))
            });
            if out.len() == max || self.done {
                return Ok(());
            }
            self.feed_batch()?;
        }
    }

    fn lost_events(&self) -> Option<Diagnostic> {
        let lost = self.lost;
        (lost > 0).then(|| {
            Diagnostic::new(DiagnosticKind::LostEvents,
                format!(
                    "perf lost {lost} events (its buffers overflowed); transitions around them may be missing or inferred; record with larger buffers (critpath record --mmap-pages 4096) or fewer events"
                ),
            )
            .count(lost)
        })
    }

    /// Samples that could not be read: the file is damaged there. A
    /// diagnostic, and the error (the analysis covers the rest).
    fn malformed_samples(&self) -> Option<(Diagnostic, ReadError)> {
        let (n, first) = self.malformed;
        let message = |first: Option<usize>| {
            format!(
                "{n} kernel event(s) could not be read (a CPU number beyond any kernel's, data past the end of their record, or a field the perf parser refused: the file is damaged there{}); they were skipped",
                first.map_or(String::new(), |at| format!(", the first at byte {at}"))
            )
        };
        self.damage_said(n, first, (message(first), message(None)))
    }

    /// Record headers that could not be a record's: the file is damaged
    /// there. A diagnostic, and the error (the analysis covers the rest).
    fn damaged_headers(&self) -> Option<(Diagnostic, ReadError)> {
        let Damage {
            headers,
            bytes,
            first,
        } = self.damage;
        let message = format!(
            "{headers} record header(s) could not be a record's (shorter than a header, or reaching past the data: the file is damaged there); {bytes} bytes were skipped to where records read again (or to the end)"
        );
        let said = format!(
            "{message}{}",
            first.map_or(String::new(), |at| format!(", the first at byte {at}"))
        );
        self.damage_said(headers, first, (said, message))
    }

    /// `n` damaged things skipped, the first at byte `first`: an
    /// `input-skipped` diagnostic saying `said`, and the error `error` at
    /// that byte (the analysis covers the rest).
    fn damage_said(
        &self,
        n: u64,
        first: Option<usize>,
        (said, error): (String, String),
    ) -> Option<(Diagnostic, ReadError)> {
        let at = first.map_or(Location::File, |at| Location::Offset(at as u64));
        (n > 0).then(|| {
            (
                Diagnostic::new(DiagnosticKind::InputSkipped, said).count(n),
                ReadError::new(&self.name, at, error, false),
            )
        })
    }

    fn repeated_samples(&self) -> Option<Diagnostic> {
        let n = self.repeated;
        (n > 0).then(|| {
            Diagnostic::new(
                DiagnosticKind::InputSkipped,
                format!(
                    "{n} kernel event(s) were in the file twice (the same event, CPU, thread, time and data, as some kernels' buffers hand a sample over again); the copies were dropped"
                ),
            )
            .count(n)
        })
    }
}

/// Feeds the annotations up to time `until` (all with `None`).
fn feed_annotations(annot: &mut Option<AnnotReader>, builder: &mut Builder, until: Option<u64>) {
    let Some(r) = annot.as_mut() else { return };
    while r.peek_time().is_some_and(|a| until.is_none_or(|u| a <= u)) {
        let a = r.next_annotation().expect("peeked");
        builder.feed_annot(&a);
    }
}

/// Reads a perf.data through and writes the names of the kernel functions
/// its events refer to (timer callbacks) next to it, from this kernel's
/// symbol table: the trace then names them right wherever it is analyzed,
/// and without reading /proc/kallsyms. Returns how many were written.
pub fn save_symbols(perf_data: &Path) -> std::io::Result<usize> {
    // The names come from decoding the samples; the OS graph is not needed.
    let mut strings = Interner::new();
    let mut reader =
        KernelEvents::open(perf_data, true, &mut strings).map_err(std::io::Error::other)?;
    while let Ok(Step::Event(_) | Step::Skipped) = reader.step(&mut strings) {}
    let mut out = String::new();
    let mut n = 0;
    let mut funcs: Vec<_> = reader.function_names().named().collect();
    funcs.sort();
    for (addr, sym) in funcs {
        let name = strings.resolve(sym);
        if !name.starts_with("0x") {
            out.push_str(&format!("{addr:x} {name}\n"));
            n += 1;
        }
    }
    std::fs::write(symbols_path(perf_data), out)?;
    Ok(n)
}

/// The source reads on a thread of its own (`critpath_engine::analyze_parallel`).
const _: fn() = || {
    fn send<T: Send>() {}
    send::<PerfSource>();
};

impl RecordSource for PerfSource {
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        let mut one = Vec::with_capacity(1);
        self.fill(&mut one, 1)?;
        Ok(one.pop())
    }
    fn next_batch(&mut self, out: &mut Vec<(Record, Pos)>, max: usize) -> Result<(), ReadError> {
        out.clear();
        self.fill(out, max)
    }
    fn strings(&self) -> &Interner {
        &self.builder.strings
    }
    fn bytes_read(&self) -> u64 {
        // Progress by trace time: the file's time range is in its header.
        self.progress
    }
    fn summary(&mut self) -> Summary {
        // Renamed first: the graph's own diagnostics name threads.
        let gathered = self.gathered.take();
        let renamed = match self.names {
            Names::Late => self.settle_late(gathered),
            _ => Vec::new(),
        };
        let mut diagnostics = std::mem::take(&mut self.problems);
        diagnostics.extend(self.lost_events());
        diagnostics.extend(self.repeated_samples());
        diagnostics.extend(self.recorder.diagnostic());
        let mut error = self.error.take();
        for (d, e) in [self.damaged_headers(), self.malformed_samples()]
            .into_iter()
            .flatten()
        {
            diagnostics.push(d);
            error = error.or(Some(e));
        }
        let mut annotation_costs = Vec::new();
        if let Some(r) = self.annot.as_mut() {
            let s = critpath_readers::annot::summary(r);
            diagnostics.extend(s.diagnostics);
            error = error.or(s.error);
            annotation_costs = self.builder.annotation_costs(&r.facts.calibration);
        }
        diagnostics.extend(self.builder.diagnostics());
        Summary {
            diagnostics,
            error,
            annotation_costs,
            renamed,
            program: self.builder.program_threads(),
            wall_clock: false,
        }
    }
    fn scope(&mut self) -> Scope {
        self.settle(false);
        self.scope.clone()
    }
    fn prepare(&mut self, late_names: bool) {
        self.settle(late_names);
    }
    fn restart(&mut self) -> bool {
        if self.names != Names::Redo {
            return false;
        }
        // Names final first this time: the file as if just opened.
        match PerfSource::open_threads(&self.path, (self.in_place, self.threads)) {
            Ok(mut again) => {
                again.observer = self.observer.take();
                again.builder.charge_cpu_holders(self.builder.holders());
                (again.head, again.restarts) = (self.head, self.restarts + 1);
                again.settle(false);
                *self = again;
                true
            }
            Err(_) => false,
        }
    }
}
