//! The kernel events of a perf.data file, in time order: the file is
//! mapped (and repaired if cut), its tracepoint layouts read (the file's
//! own, else the running kernel's), and each sample decoded into a
//! [`KRecord`]. Records are read in place where the file's layout allows
//! ([`super::records`]), else with `linux-perf-data`'s general iterator.

use super::decode::{Decoders, CORE_TRACEPOINTS, NET_TRACEPOINTS, SYSCALL_TRACEPOINTS};
use super::file::{self, Bytes};
use super::kevent::KRecord;
use super::names::{self, Found, Gather, Wanted};
use super::records::{self, Damage, RawRecords, MAX_CPUS};
use super::repeats::Repeats;
use super::symbols::{load_symbols, running_kernel, symbols_path, FunctionNames};
use super::tracefmt::{self, EventFormat};
use critpath_trace::DiagnosticKind;
use critpath_trace::{Diagnostic, Interner, Location, ReadError};
use linux_perf_data::linux_perf_event_reader::{EventRecord, PerfEventType};
use linux_perf_data::{Feature, PerfFile, PerfFileReader, PerfFileRecord, PerfRecordIter};
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What one step of reading gave.
pub enum Step {
    /// A sample decoded into a kernel event.
    Event(KRecord),
    /// A record that is no kernel event critpath uses.
    Skipped,
    /// The end of the file (or of what could be read of it).
    End,
}

/// What a perf.data file says about its recording.
pub struct Recording {
    /// The host it was recorded on (`local` when unknown).
    pub host: String,
    /// The latest name (in time) of every thread: empty until
    /// [`KernelEvents::settle_names`] when the open left them to it.
    pub names: FxHashMap<u32, String>,
    /// The recorded command's main thread and the time it exec'd (as
    /// `names`).
    pub target: Option<(u32, u64)>,
    /// The events recorded, `system:name` for tracepoints.
    pub kinds: Vec<String>,
    /// The file's sample time range, from its header.
    pub range: Option<(u64, u64)>,
    /// The file's size on disk.
    pub size: u64,
    /// The recorder's pid, from the file beside the recording
    /// ([`recorder_path`]).
    pub recorder: Option<u32>,
}

impl Recording {
    /// Was the event `system:name` recorded?
    pub fn has(&self, kind: &str) -> bool {
        self.kinds.iter().any(|x| x == kind)
    }
}

/// Reads the kernel events of a perf.data file.
pub struct KernelEvents {
    name: String,
    file: PerfFile,
    iter: PerfRecordIter<file::Stream>,
    /// Where the data section starts in the file.
    data_offset: u64,
    /// The file's bytes and, where the file allows, the in-place reader of
    /// its records (else `iter` reads them).
    bytes: Bytes,
    raw: Option<RawRecords>,
    /// The in-place reader's pages before this are released, and at what
    /// point of reading to release the next ones.
    released: (usize, usize),
    dec: Decoders,
    samples: u64,
    lost: u64,
    /// Samples that could not be read (see [`RawRecords::malformed`]),
    /// and where the first starts when known.
    malformed: (u64, Option<usize>),
    /// Damaged record headers skipped over (in-place reader).
    damage: Damage,
    /// Samples the file holds twice, dropped.
    repeats: Repeats,
    done: bool,
    /// First and latest sample time read.
    timed: (u64, u64),
    pub recording: Recording,
    /// Problems found opening it, reading goes on.
    pub problems: Vec<Diagnostic>,
    /// The first problem that makes the analysis partial.
    pub error: Option<ReadError>,
    /// The names pass, when the open left it to [`Self::settle_names`].
    todo: Option<NamesTodo>,
    /// The recorded command, when names come late.
    late: Option<Command>,
    /// Walks for names may split the file across threads.
    threads: bool,
}

/// Records walked for names at first when the rest of the names are
/// gathered on the way ([`KernelEvents::settle_names`]): enough for the
/// exec of the recorded command, which comes with the recording's first
/// records, after those perf makes up for what ran before it.
pub const HEAD_BYTES: u64 = 32 << 20;

/// The names pass an open left to do.
struct NamesTodo {
    command: Command,
    layout: file::Layout,
    sample_type: u64,
}

impl NamesTodo {
    fn wanted(&self) -> Wanted<'_> {
        self.command.wanted()
    }
}

/// The names pass at open: what it found, or, for a complete file read in
/// place (`how`: in place, compressed, the sample type) whose header names
/// its command, nothing yet and what is left to do (see
/// [`KernelEvents::settle_names`]). Names are read as far as events are:
/// past damage in place.
fn names_at_open(
    mapped: &file::Mapped,
    (command, recorder): (Option<&Command>, Option<u32>),
    (in_place, compressed, sample_type, threads): (bool, bool, u64, bool),
) -> (Option<NamesTodo>, Found) {
    let lost = mapped.cut.is_some();
    if let (Some(c), true, false) = (command, in_place, lost) {
        let todo = NamesTodo {
            command: c.clone(),
            layout: mapped.layout,
            sample_type,
        };
        return (Some(todo), Found::default());
    }
    // The command's thread is the recorder's child that exec'd it; a cut
    // file's header lost the command line: its first exec.
    let wanted = match command {
        Some(c) => c.wanted(),
        None if lost => Wanted::Exec {
            comm: None,
            recorder,
        },
        None => Wanted::Nothing,
    };
    let found = match compressed {
        true => names::scan_decompressed(parse(mapped).ok(), wanted, sample_type),
        false => names::scan_names(
            &mapped.bytes,
            &mapped.layout,
            (wanted, in_place),
            (sample_type, threads),
        ),
    };
    (None, found)
}

/// The command a file recorded, and how its recorder is known.
#[derive(Clone)]
struct Command {
    trace: PathBuf,
    cmd: String,
    recorder: Option<u32>,
}

impl Command {
    fn wanted(&self) -> Wanted<'_> {
        Wanted::Exec {
            comm: Some(&self.cmd),
            recorder: self.recorder,
        }
    }

    /// The diagnostic of the command's thread chosen among namesakes.
    fn namesakes(&self, target: Option<(u32, u64)>, rivals: usize) -> Option<Diagnostic> {
        let (tid, t) = target.filter(|_| rivals > 0)?;
        Some(namesakes(
            &self.trace,
            self.recorder,
            &self.cmd,
            (tid, t),
            rivals,
        ))
    }
}

/// Every tracepoint critpath decodes, for layouts read from the kernel.
fn all_tracepoints() -> Vec<&'static str> {
    [CORE_TRACEPOINTS, NET_TRACEPOINTS, SYSCALL_TRACEPOINTS]
        .concat()
        .into_iter()
        .chain(["sched:sched_wakeup"])
        .collect()
}

/// The perf parser on a file's bytes, from its start.
fn parse(mapped: &file::Mapped) -> Result<PerfFileReader<file::Stream>, linux_perf_data::Error> {
    let stream = file::Stream::new(mapped.bytes.clone(), mapped.layouts());
    // A panic of the parser on a damaged header is its error.
    critpath_trace::contained(|| match mapped.pipe {
        Some(_) => PerfFileReader::parse_pipe(stream),
        None => PerfFileReader::parse_file(stream),
    })
    .unwrap_or_else(|why| Err(std::io::Error::other(why).into()))
}

/// Tracepoint layouts: the file's own (its tracing-data section, or in the
/// pipe format the bytes after its HEADER_TRACING_DATA record), else the
/// running kernel's (with a diagnostic saying so).
/// A section that is there but does not read is damage of the input too:
/// its error comes back beside the layouts.
fn formats(
    perf_file: &PerfFile,
    pipe: Option<&[u8]>,
    problems: &mut Vec<Diagnostic>,
) -> (Vec<EventFormat>, Option<String>) {
    let section =
        pipe.or_else(|| perf_file.feature_section_data(linux_perf_data::Feature::TRACING_DATA));
    let (why, damaged) = match section.map(tracefmt::parse_tracing_data) {
        Some(Ok(f)) => return (f, None),
        Some(Err(e)) => (e.clone(), Some(e)),
        None => ("the file has no tracing-data section".into(), None),
    };
    let f = tracefmt::from_tracefs(&all_tracepoints());
    problems.push(Diagnostic::new(
        DiagnosticKind::TracepointFormats,
        format!(
            "{why}; the tracepoint layouts of the running kernel were used instead ({} found)",
            f.len()
        ),
    ));
    (f, damaged)
}

/// The names of the timer callbacks of the recording at `path`: those
/// saved when it was recorded, else the running kernel's symbol table
/// (loaded meanwhile when the trace has timers), but for a recording of
/// another kernel (a finding then), whose timers keep their addresses.
fn function_names(
    perf_file: &PerfFile,
    path: &Path,
    timers: bool,
    problems: &mut Vec<Diagnostic>,
) -> FunctionNames {
    let saved = load_symbols(&symbols_path(path));
    let other = (timers && saved.is_empty())
        .then(|| other_kernel(perf_file, path))
        .flatten();
    let funcs = FunctionNames::new(saved, timers && other.is_none());
    match other {
        Some(d) => {
            problems.push(d);
            funcs.saved_only()
        }
        None => funcs,
    }
}

/// The finding of a recording made on another kernel than the running
/// one (by the releases in the file's header and `uname -r`), whose
/// timer callbacks this kernel's symbol table would misname.
fn other_kernel(perf_file: &PerfFile, path: &Path) -> Option<Diagnostic> {
    let recorded = perf_file.os_release().ok().flatten()?.trim();
    let running = running_kernel()?;
    (!recorded.is_empty() && recorded != running).then(|| {
        Diagnostic::new(
            DiagnosticKind::KernelSymbols,
            format!(
                "{} was recorded on kernel {recorded} and this machine runs {running}, and no {} holds the recording kernel's function names: timer callbacks are named by their addresses",
                path.display(),
                symbols_path(path).display()
            ),
        )
    })
}

/// The host name in the file's header (`local` when it has none).
fn host_name(perf_file: &PerfFile) -> String {
    let host = perf_file.hostname().ok().flatten();
    host.filter(|h| !h.is_empty())
        .unwrap_or("local")
        .to_string()
}

/// The file beside a recording that holds the recorder's pid
/// (`OUT.recorder`, written by `critpath record`).
pub fn recorder_path(trace: &Path) -> PathBuf {
    crate::companion(trace, ".recorder")
}

/// The recorder's pid, from the file [`recorder_path`] names.
pub fn recorder_pid(trace: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(recorder_path(trace)).ok()?;
    text.trim().parse().ok()
}

/// How the recorder was known: by its pid in the `.recorder` file beside
/// `trace`, or by its name.
fn recorder_named(trace: &Path, recorder: Option<u32>) -> String {
    match recorder {
        Some(pid) => format!("perf, pid {pid}, from {}", recorder_path(trace).display()),
        None => "a process named perf; no .recorder file beside the trace".to_string(),
    }
}

/// The diagnostic of a cut file's lost header features: the host name and
/// command line are gone; the command's thread inferred (`target`) or not.
fn header_lost(
    trace: &Path,
    recorder: Option<u32>,
    target: Option<(u32, u64)>,
    names: &FxHashMap<u32, String>,
) -> Diagnostic {
    let by = recorder_named(trace, recorder);
    let scope = match target {
        Some((tid, t)) => format!(
            "the recorded command's main thread was inferred instead: {}:{tid}, the first process the recorder ({by}) forked to exec a program, at t={t}; the analysis starts and ends on it",
            names.get(&tid).map_or("?", String::as_str)
        ),
        None => format!(
            "the recorded command's main thread could not be inferred (no process the recorder ({by}) forked exec'd a program in the records kept), so the analysis covers every thread; choose its ends with --from/--to"
        ),
    };
    Diagnostic::new(
        DiagnosticKind::InputCut,
        format!(
            "the perf.data header's features (host name, command line) are lost with the cut (perf writes them after the records): thread SMs are under host `local`, and {scope}"
        ),
    )
}

/// The diagnostic of a command's thread chosen among namesakes: `rivals`
/// other threads exec'd `cmd` too, and the fork records do not single out
/// the recorder's child.
fn namesakes(
    trace: &Path,
    recorder: Option<u32>,
    cmd: &str,
    (tid, t): (u32, u64),
    rivals: usize,
) -> Diagnostic {
    let by = recorder_named(trace, recorder);
    Diagnostic::new(
        DiagnosticKind::CommandGuessed,
        format!(
            "{} threads exec'd `{cmd}` during the recording (other programs of that name, or the command's own children) and the fork records do not single out the one the recorder ({by}) forked: the earliest, {cmd}:{tid} at t={t}, is taken as the recorded command, where the analysis starts and ends; if it is another's, choose the ends with --from/--to",
            rivals + 1
        ),
    )
    .count(rivals as u64 + 1)
}

/// Whether `perf record`'s command line `cmdline` (the perf binary,
/// `record`, its options, the command) records the whole system: `-a` /
/// `--all-cpus`, or CPUs (`-C` / `--cpu`), alone or among short options
/// run together (`-ag`). `None` when it is not perf record's.
fn system_wide(cmdline: &[&str]) -> Option<bool> {
    let (_, rest) = cmdline.split_first()?;
    let (sub, args) = rest.split_first()?;
    if *sub != "record" {
        return None;
    }
    // perf record's short options that take a value (not an optional
    // one, which is written attached).
    const VALUED: &str = "eoFcmCptukGjrD";
    let mut args = args.iter().take_while(|a| **a != "--");
    while let Some(a) = args.next() {
        if ["--all-cpus", "--cpu"]
            .iter()
            .any(|o| a.split('=').next() == Some(o))
        {
            return Some(true);
        }
        let Some(cluster) = a.strip_prefix('-').filter(|c| !c.starts_with('-')) else {
            continue;
        };
        for (i, c) in cluster.char_indices() {
            if c == 'a' || c == 'C' {
                return Some(true);
            }
            if VALUED.contains(c) {
                if i + 1 == cluster.len() {
                    args.next();
                }
                break;
            }
        }
    }
    Some(false)
}

/// The diagnostic of a recording of the command's threads only.
fn not_system_wide(cmdline: &[&str]) -> Diagnostic {
    Diagnostic::new(
        DiagnosticKind::NotSystemWide,
        format!(
            "perf recorded only the command's own threads (`{}` has no -a): wakeups done from other contexts (interrupts, idle CPUs, other processes) are not in the file, so the waits they ended end without their causes and show as the command's own blocked time; record the whole system (perf record -a, or critpath record)",
            cmdline.join(" ")
        ),
    )
}

/// Samples are decoded by the tracepoint id each one carries in its first
/// field (common_type), so a file whose event-id table was never written
/// still decodes right. Returns the decoders and the kind of each event.
fn decoders(
    perf_file: &PerfFile,
    by_id: &HashMap<u64, EventFormat>,
    strings: &mut Interner,
) -> (Decoders, Vec<String>) {
    let mut used = Vec::new();
    let mut kinds = Vec::new();
    for attr in perf_file.event_attributes() {
        let kind = match attr.attributes().type_ {
            PerfEventType::Tracepoint(id) => match by_id.get(&id) {
                Some(f) => {
                    used.push(f);
                    format!("{}:{}", f.system, f.name)
                }
                None => format!("tracepoint {id}"),
            },
            _ => attr.name().unwrap_or("?").to_string(),
        };
        kinds.push(kind);
    }
    (Decoders::new(used, strings), kinds)
}

/// The error of a file the general reader reads, whose records a damaged
/// header at `at` interrupts: that reader stops there.
fn damaged_header(name: &str, at: usize) -> ReadError {
    ReadError::new(
        name,
        Location::Offset(at as u64),
        "a record header could not be a record's (shorter than a header, or reaching past the data: the file is damaged here); this file's records are read by the general reader, which stops here: the analysis covers the records before it".to_string(),
        false,
    )
}

/// The error of a file without context switches: threads have no states.
fn no_switches(name: &str, kinds: &[String]) -> ReadError {
    ReadError::new(
        name,
        Location::File,
        format!(
            "this perf.data has no sched:sched_switch events (it holds: {}), so threads have no states; record with `critpath record -o FILE -- CMD`, or `perf record -a -k CLOCK_MONOTONIC -e sched:sched_switch,sched:sched_waking,sched:sched_wakeup_new,sched:sched_process_fork,sched:sched_process_exit,irq:irq_handler_entry,irq:irq_handler_exit,irq:softirq_raise,irq:softirq_entry,irq:softirq_exit,timer:hrtimer_start,timer:hrtimer_expire_entry,timer:hrtimer_expire_exit -- CMD`",
            if kinds.is_empty() { "nothing".to_string() } else { kinds.join(", ") }
        ),
        false,
    )
}

impl KernelEvents {
    /// Opens `path`, interning the names its decoders use in `strings`;
    /// `in_place` false reads every file with `linux-perf-data`'s general
    /// iterator (to check the in-place reader against it).
    pub fn open(path: &Path, in_place: bool, strings: &mut Interner) -> Result<Self, ReadError> {
        Self::open_with(path, (in_place, true), strings)
    }

    /// [`Self::open`]; `threads` false walks the file for names on the
    /// caller's thread only (the names are the same).
    pub fn open_with(
        path: &Path,
        (in_place, threads): (bool, bool),
        strings: &mut Interner,
    ) -> Result<Self, ReadError> {
        let name = path.display().to_string();
        let mapped = file::map(path, &name)?;
        let PerfFileReader {
            perf_file,
            record_iter,
        } = parse(&mapped).map_err(|e| {
            file::file_error(
                &name,
                format!("not a readable perf.data file ({e}); expected a file written by `perf record` or `critpath record`"),
            )
        })?;
        let mut problems = Vec::new();
        let layouts = mapped
            .layouts()
            .map(|(from, to)| &mapped.bytes.as_ref()[from..to]);
        let (formats, damaged) = formats(&perf_file, layouts, &mut problems);
        let by_id = tracefmt::by_id(formats);
        let cmdline = perf_file.cmdline().ok().flatten().unwrap_or_default();
        let (cmd, host) = (file::recorded_command(&cmdline), host_name(&perf_file));
        let first_format = perf_file.event_attributes().first();
        let sample_type = first_format.map_or(0, |a| a.attributes().sample_format.bits());
        let bytes = mapped.bytes.clone();
        // `perf record -z`: records in zstd frames, which only the general
        // reader opens.
        let (start, size) = (mapped.layout.data_offset, mapped.layout.data_size);
        let compressed = perf_file.features().has_feature(Feature::COMPRESSED)
            || records::compressed(
                bytes.as_ref(),
                start as usize,
                start.saturating_add(size) as usize,
            );
        let raw = (in_place && !compressed)
            .then(|| raw_reader(&perf_file, &bytes, &mapped.layout))
            .flatten();
        let recorder = recorder_pid(path);
        let command = cmd.map(|cmd| Command {
            trace: path.to_path_buf(),
            cmd,
            recorder,
        });
        let how = (raw.is_some(), compressed, sample_type, threads);
        let (todo, found) = names_at_open(&mapped, (command.as_ref(), recorder), how);
        let (names, target, stopped) = (found.names, found.target, found.stopped);
        if mapped.cut.is_some() {
            problems.push(header_lost(path, recorder, target, &names));
        }
        if system_wide(&cmdline) == Some(false) {
            problems.push(not_system_wide(&cmdline));
        }
        if let Some(c) = &command {
            problems.extend(c.namesakes(target, found.rivals));
        }
        let (mut dec, kinds) = decoders(&perf_file, &by_id, strings);
        let funcs = function_names(&perf_file, path, dec.has_timers(), &mut problems);
        dec = dec.with_names(funcs);
        let recording = Recording {
            host,
            names,
            target,
            kinds,
            range: perf_file
                .sample_time_range()
                .ok()
                .flatten()
                .map(|r| (r.first_sample_time, r.last_sample_time)),
            size: mapped.size,
            recorder,
        };
        if recording.has("sched:sched_waking") {
            // The waking is the earlier, truer point of a wakeup.
            if let Some(f) = by_id.values().find(|f| f.name == "sched_wakeup") {
                dec.drop_id(f.id);
            }
        }
        let mut error = mapped.cut;
        if let Some(why) = damaged {
            let msg = format!("the tracing-data section (the tracepoint layouts) is damaged ({why}); the running kernel's layouts were used, which fit only a recording of this kernel");
            error = error.or(Some(ReadError::new(&name, Location::File, msg, false)));
        }
        if let Some(at) = stopped.filter(|_| raw.is_none()) {
            error = error.or(Some(damaged_header(&name, at)));
        }
        if !recording.has("sched:sched_switch") {
            error = error.or(Some(no_switches(&name, &recording.kinds)));
        }
        Ok(KernelEvents {
            name,
            file: perf_file,
            iter: record_iter,
            data_offset: mapped.layout.data_offset,
            released: (mapped.layout.data_offset as usize, 0),
            bytes,
            raw,
            dec,
            samples: 0,
            lost: 0,
            malformed: (0, None),
            damage: Damage::default(),
            repeats: Repeats::default(),
            done: false,
            timed: (0, 0),
            recording,
            problems,
            error,
            todo,
            late: None,
            threads,
        })
    }

    /// Settles the thread names the open left to do, if it left them:
    /// with `late`, only the first `late` bytes of records ([`HEAD_BYTES`]
    /// unless a test says otherwise) are walked now, for the recorded
    /// command's thread and the names known by then,
    /// and the in-place reader gathers every name on its way (see
    /// [`Self::gathered`]): the thread names are then final only at the
    /// end. Without `late`, or when the head holds no exec of the command,
    /// the whole file is walked now. True when names come late.
    pub fn settle_names(&mut self, late: Option<u64>) -> bool {
        let Some(todo) = self.todo.take() else {
            return false;
        };
        let wanted = todo.wanted();
        let what = (wanted, true);
        if let Some(bytes) = late {
            let head = file::Layout {
                data_offset: todo.layout.data_offset,
                data_size: todo.layout.data_size.min(bytes),
            };
            let found =
                names::scan_names(&self.bytes, &head, what, (todo.sample_type, self.threads));
            if let (Some(raw), Some(_)) = (self.raw.as_mut(), found.target) {
                raw.gather = Some(Gather::new(wanted, todo.sample_type));
                (self.recording.names, self.recording.target) = (found.names, found.target);
                self.late = Some(todo.command);
                return true;
            }
        }
        let found = names::scan_names(
            &self.bytes,
            &todo.layout,
            what,
            (todo.sample_type, self.threads),
        );
        (self.recording.names, self.recording.target) = (found.names, found.target);
        let said = todo.command.namesakes(found.target, found.rivals);
        self.problems.extend(said);
        false
    }

    /// After the last event of a file whose names came late
    /// ([`Self::settle_names`]): what the names pass over the whole file
    /// finds, and the diagnostic it makes, if any.
    pub fn gathered(&mut self) -> Option<(Found, Option<Diagnostic>)> {
        let found = self.raw.as_mut()?.gather.take()?.found();
        let said = self.late.as_ref()?.namesakes(found.target, found.rivals);
        Some((found, said))
    }

    /// Appends up to `max` kernel events to `out`, without the copies of
    /// samples the file holds twice ([`Repeats`]); false once the file has
    /// no more. An error ends reading after the events before it.
    pub fn read_into(
        &mut self,
        strings: &mut Interner,
        out: &mut Vec<KRecord>,
        max: usize,
    ) -> Result<bool, ReadError> {
        let start = out.len();
        if self.raw.is_some() && !self.done {
            self.raw_into(strings, out, max);
            self.repeats.carry(&out[start..]);
            return Ok(!self.done);
        }
        let mut more = Ok(true);
        while out.len() - start < max {
            match self.step(strings) {
                Ok(Step::Event(k)) => {
                    // Checked in place: a record is large to move about.
                    out.push(k);
                    let (k, before) = out[start..].split_last().expect("pushed");
                    if self.repeats.repeated(k, before) {
                        out.pop();
                    }
                }
                Ok(Step::Skipped) => {}
                Ok(Step::End) => {
                    more = Ok(false);
                    break;
                }
                Err(e) => {
                    more = Err(e);
                    break;
                }
            }
        }
        self.repeats.carry(&out[start..]);
        more
    }

    /// Reads one record (the in-place reader: one sample), copies of
    /// samples the file holds twice included (see [`Self::read_into`]).
    /// An error ends reading.
    #[inline]
    pub fn step(&mut self, strings: &mut Interner) -> Result<Step, ReadError> {
        if self.done {
            return Ok(Step::End);
        }
        if self.raw.is_some() {
            return Ok(self.step_raw(strings));
        }
        self.step_general(strings)
    }

    fn step_raw(&mut self, strings: &mut Interner) -> Step {
        let rr = self.raw.as_mut().expect("raw reader");
        let b = self.bytes.as_ref();
        let Some(s) = rr.next_sample(b) else {
            self.raw_ended();
            return Step::End;
        };
        saw(&mut self.timed, s.t);
        let step = match self.dec.decode(strings, &b[s.raw.0..s.raw.1]) {
            Some(ev) => Step::Event(KRecord {
                t: s.t,
                cpu: s.cpu,
                pid: s.pid,
                tid: s.tid,
                ev,
            }),
            None => Step::Skipped,
        };
        self.release_read();
        step
    }

    /// [`Self::read_into`] of the in-place reader: each sample's event
    /// written straight into `out`, and checked there for a copy.
    fn raw_into(&mut self, strings: &mut Interner, out: &mut Vec<KRecord>, max: usize) {
        let start = out.len();
        while out.len() - start < max {
            let rr = self.raw.as_mut().expect("raw reader");
            let b = self.bytes.as_ref();
            let Some(s) = rr.next_sample(b) else {
                self.raw_ended();
                return;
            };
            saw(&mut self.timed, s.t);
            if let Some(ev) = self.dec.decode(strings, &b[s.raw.0..s.raw.1]) {
                out.push(KRecord {
                    t: s.t,
                    cpu: s.cpu,
                    pid: s.pid,
                    tid: s.tid,
                    ev,
                });
                let (k, before) = out[start..].split_last().expect("pushed");
                if self.repeats.repeated(k, before) {
                    out.pop();
                }
            }
            self.release_read();
        }
    }

    /// The in-place reader is at its end: its counts are the file's.
    #[cold]
    fn raw_ended(&mut self) {
        let rr = self.raw.as_ref().expect("raw reader");
        self.samples = rr.samples;
        self.lost = rr.lost;
        self.malformed = (rr.malformed, rr.first_malformed);
        self.damage = rr.damage;
        self.done = true;
    }

    /// Keeps memory flat: once the in-place reader is a step further into
    /// the file, the pages behind every sample still waiting to be decoded
    /// leave the process.
    #[inline]
    fn release_read(&mut self) {
        let rr = self.raw.as_ref().expect("raw reader");
        if rr.read_to() >= self.released.1 {
            let low = rr.low_water();
            self.bytes.release(self.released.0, low);
            self.released = (low.max(self.released.0), rr.read_to() + file::RELEASE_STEP);
        }
    }

    /// One record by `linux-perf-data`'s iterator. A panic of the parser
    /// on a damaged record ends reading with an error at its byte offset,
    /// as one it reports does.
    fn step_general(&mut self, strings: &mut Interner) -> Result<Step, ReadError> {
        let at = self.data_offset.saturating_add(self.iter.read_offset());
        match critpath_trace::contained(|| self.step_parsed(strings)) {
            Ok(step) => step,
            Err(why) => {
                self.done = true;
                Err(ReadError::new(
                    &self.name,
                    Location::Offset(at),
                    format!(
                        "damaged perf record near byte {at} (the perf.data parser stopped: {why}); the analysis covers the {} samples before it",
                        self.samples
                    ),
                    true,
                ))
            }
        }
    }

    fn step_parsed(&mut self, strings: &mut Interner) -> Result<Step, ReadError> {
        let at = self.data_offset.saturating_add(self.iter.read_offset());
        let rec = match self.iter.next_record(&mut self.file) {
            Ok(Some(r)) => r,
            Ok(None) => {
                self.done = true;
                return Ok(Step::End);
            }
            Err(e) => {
                self.done = true;
                return Err(ReadError::new(
                    &self.name,
                    Location::File,
                    format!(
                        "unreadable perf record after {} samples ({e}); the analysis covers the records before it",
                        self.samples
                    ),
                    true,
                ));
            }
        };
        let PerfFileRecord::EventRecord { record, .. } = rec else {
            return Ok(Step::Skipped);
        };
        if record.record_type.0 == 13 {
            // PERF_RECORD_LOST_SAMPLES: u64 lost, then sample_id.
            let b = record.data.as_slice();
            if let Some(x) = b.get(0..8) {
                self.lost += u64::from_le_bytes(x.try_into().unwrap());
            }
            return Ok(Step::Skipped);
        }
        // A record the parser panics on (a damaged field it asserts on) is
        // skipped and counted as one that could not be read.
        let Ok(parsed) = critpath_trace::contained(|| record.parse()) else {
            self.malformed.0 += 1;
            self.malformed.1.get_or_insert(at as usize);
            return Ok(Step::Skipped);
        };
        let s = match parsed {
            Ok(EventRecord::Lost(l)) => {
                self.lost += l.count;
                return Ok(Step::Skipped);
            }
            Ok(EventRecord::Sample(s)) => s,
            _ => return Ok(Step::Skipped),
        };
        let (Some(t), Some(raw)) = (s.timestamp, s.raw) else {
            return Ok(Step::Skipped);
        };
        let cpu = s.cpu.unwrap_or(0);
        if cpu >= MAX_CPUS {
            self.malformed.0 += 1;
            return Ok(Step::Skipped);
        }
        self.samples += 1;
        saw(&mut self.timed, t);
        let Some(ev) = self.dec.decode(strings, &raw.as_slice()) else {
            return Ok(Step::Skipped);
        };
        Ok(Step::Event(KRecord {
            t,
            cpu,
            pid: s.pid.unwrap_or(0).max(0) as u32,
            tid: s.tid.unwrap_or(0).max(0) as u32,
            ev,
        }))
    }

    /// The file's name as errors give it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads the records in place (one record at a time otherwise)?
    pub fn in_place(&self) -> bool {
        self.raw.is_some()
    }

    /// Samples read so far (with the in-place reader: once at the end).
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Events perf reported lost (with the in-place reader: once at the end).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Samples that could not be read: an impossible CPU number, a raw
    /// payload past the record's end (with the in-place reader: once at
    /// the end); and where the first starts, when known.
    pub fn malformed(&self) -> (u64, Option<usize>) {
        self.malformed
    }

    /// Damaged record headers skipped over, with the bytes up to where
    /// records read again (in-place reader, once at the end).
    pub fn damage(&self) -> Damage {
        self.damage
    }

    /// Samples dropped as copies of one read before (see [`Repeats`]).
    pub fn repeated(&self) -> u64 {
        self.repeats.dropped
    }

    /// How far reading has come, as bytes of the file: the share of the
    /// file's time range read so far.
    pub fn progress(&self) -> u64 {
        let Some((first, last)) = self.recording.range else {
            return 0;
        };
        let span = last.saturating_sub(first);
        if span == 0 {
            return 0;
        }
        let done = self.timed.1.saturating_sub(first);
        let size = self.recording.size as f64;
        (size * (done as f64 / span as f64)).min(size) as u64
    }

    /// The kernel function names decoded so far.
    pub fn function_names(&self) -> &FunctionNames {
        self.dec.function_names()
    }
}

/// Notes a sample's time in `timed` (the first and latest).
fn saw(timed: &mut (u64, u64), t: u64) {
    if timed.0 == 0 {
        timed.0 = t;
    }
    timed.1 = t;
}

/// The in-place reader of the file's records, when its layout allows.
fn raw_reader(perf_file: &PerfFile, bytes: &Bytes, lay: &file::Layout) -> Option<RawRecords> {
    let events: Vec<(u64, Vec<u64>)> = perf_file
        .event_attributes()
        .iter()
        .map(|a| (a.attributes().sample_format.bits(), a.event_ids.clone()))
        .collect();
    RawRecords::new(
        bytes.as_ref(),
        lay.data_offset as usize,
        lay.data_offset.saturating_add(lay.data_size) as usize,
        &events,
    )
}

#[cfg(test)]
mod tests {
    use super::system_wide;

    /// perf record's options before `--`: `-a`, `--all-cpus` or CPUs make
    /// a recording of the whole system, also among short options run
    /// together; an option's value (or the command's own `-a`) does not.
    #[test]
    fn a_command_line_says_whether_perf_recorded_the_whole_system() {
        fn line(s: &str) -> Vec<&str> {
            s.split(' ').collect()
        }
        let wide = [
            "perf record -a -e sched:* -- cmd",
            "/usr/bin/perf record -q -a -k CLOCK_MONOTONIC -o f -- cmd",
            "perf record -ag -- cmd",
            "perf record -qa -- cmd",
            "perf record -z -a -- cmd",
            "perf record -I -a -- cmd",
            "perf record --all-cpus cmd",
            "perf record -C 0,1 -- cmd",
            "perf record --cpu=1 -- cmd",
        ];
        for s in wide {
            assert_eq!(system_wide(&line(s)), Some(true), "{s}");
        }
        let own = [
            "perf record -e sched:* -- cmd -a",
            "perf record -o -a -- cmd",
            "perf record -eall -- cmd",
            "perf record -p 123",
            "perf record -e sched:sched_switch -k CLOCK_MONOTONIC cmd",
            "perf record",
        ];
        for s in own {
            assert_eq!(system_wide(&line(s)), Some(false), "{s}");
        }
        for s in ["perf stat -a -- cmd", "perf", ""] {
            assert_eq!(system_wide(&line(s)), None, "{s}");
        }
        assert_eq!(system_wide(&[]), None);
    }
}
