//! perf.data: the file `perf record` (and `critpath record`) writes, read
//! with the `linux-perf-data` crate. Tracepoint samples are decoded through
//! the layouts stored in the file ([`critpath_readers::perf::tracefmt`]) into kernel events, which
//! [`crate::osgraph`] turns into the OS execution graph of SPEC §6.
//!
//! A damaged file (perf killed, disk full, copied short) still yields what
//! can be read: the header is repaired in memory to cover the complete
//! records, and the analysis says the file was cut.

use crate::osgraph::{Builder, Comm, KEvent, KRecord};
use critpath_readers::perf::{records, tracefmt};
use critpath_trace::{
    Diagnostic, DiagnosticKind, Interner, Location, Pos, ReadError, Record, RecordSource, Scope,
    Summary, Sym,
};
use linux_perf_data::linux_perf_event_reader::{EventRecord, PerfEventType};
use linux_perf_data::{PerfFile, PerfFileReader, PerfFileRecord, PerfRecordIter};
use rustc_hash::FxHashMap;
use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;
use tracefmt::{EventFormat, Field};

/// The bytes of a perf.data file: mapped, or a repaired copy.
#[derive(Clone)]
enum Bytes {
    Map(Arc<memmap2::Mmap>),
    Owned(Arc<Vec<u8>>),
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// What a perf.data file's first bytes are.
pub fn is_perf_data(head: &[u8]) -> bool {
    head.starts_with(b"PERFILE2")
}

/// How one attribute's samples are decoded.
enum Decoder {
    Switch {
        prev_comm: Field,
        prev_pid: Field,
        prev_state: Field,
        next_comm: Field,
        next_pid: Field,
    },
    Wake {
        comm: Field,
        pid: Field,
    },
    Fork {
        comm: Field,
        pid: Field,
    },
    Exec,
    IrqEntry {
        name: Field,
    },
    IrqExit,
    Softirq {
        vec: Field,
        what: u8,
    },
    TimerStart {
        timer: Field,
        func: Field,
        expires: Option<Field>,
        /// The earliest expiry the timer's slack allows.
        soft: Option<Field>,
    },
    TimerEntry {
        timer: Field,
        func: Field,
    },
    TimerExit,
    Net {
        skb: Field,
        point: Sym,
        len: Option<Field>,
        /// A point of the OS graph's packet links (else for views only).
        graph: bool,
    },
    Sock {
        sk: Field,
        proto: Field,
        /// `sock_recv_length`'s result (`sk_data_ready` has none).
        ret: Option<Field>,
    },
    SysEnter {
        id: Field,
    },
    SysExit,
    /// A uprobe or kprobe on a function's entry, or its return probe.
    Func {
        func: Sym,
        ret: bool,
    },
}

/// The scheduler, interrupt and timer tracepoints of the OS execution
/// graph, by `system:name` (`sched_wakeup` is read when a file has it but
/// not recorded: `sched_waking` is the truer point).
pub const CORE_TRACEPOINTS: &[&str] = &[
    "sched:sched_switch",
    "sched:sched_waking",
    "sched:sched_wakeup_new",
    "sched:sched_process_fork",
    "sched:sched_process_exit",
    "sched:sched_process_exec",
    "irq:irq_handler_entry",
    "irq:irq_handler_exit",
    "irq:softirq_raise",
    "irq:softirq_entry",
    "irq:softirq_exit",
    "timer:hrtimer_start",
    "timer:hrtimer_expire_entry",
    "timer:hrtimer_expire_exit",
    "timer:timer_start",
    "timer:timer_expire_entry",
    "timer:timer_expire_exit",
];

/// The packet tracepoints.
pub const NET_TRACEPOINTS: &[&str] = &[
    "net:net_dev_queue",
    "net:net_dev_start_xmit",
    "net:net_dev_xmit",
    "net:netif_rx",
    "net:netif_receive_skb",
    "skb:skb_copy_datagram_iovec",
    "skb:consume_skb",
    "skb:kfree_skb",
    "sock:sk_data_ready",
    "sock:sock_recv_length",
];

/// The system-call tracepoints.
pub const SYSCALL_TRACEPOINTS: &[&str] = &["raw_syscalls:sys_enter", "raw_syscalls:sys_exit"];

/// See [`PerfSource::watch`]: called with each decoded kernel event and
/// the names its symbols stand for.
pub type Watcher = Box<dyn FnMut(&KRecord, &Interner)>;

/// Reads a perf.data file as §1 records.
pub struct PerfSource {
    name: String,
    file: PerfFile,
    iter: PerfRecordIter<Cursor<Bytes>>,
    dec: Decoding,
    builder: Builder,
    index: u64,
    samples: u64,
    lost: u64,
    done: bool,
    problems: Vec<Diagnostic>,
    error: Option<ReadError>,
    scope: Scope,
    size: u64,
    /// First and latest sample time read.
    timed: (u64, u64),
    /// The file's sample time range (from its header), for progress.
    range: Option<(u64, u64)>,
    stash: Option<Record>,
    /// The SDKs' annotations recorded with it (`OUT.annot`), merged in
    /// time order.
    annot: Option<critpath_readers::annot::AnnotReader>,
    /// The file's bytes and, where the file allows, the in-place reader of
    /// its records (else `iter` reads them).
    bytes: Bytes,
    raw: Option<records::RawRecords>,
    /// See [`PerfSource::watch`].
    watcher: Option<Watcher>,
}

fn err(name: &str, msg: impl Into<String>) -> ReadError {
    ReadError::new(name, Location::File, msg, true)
}

/// Where the records of a perf.data file lie, read from its header.
struct Layout {
    data_offset: u64,
    data_size: u64,
}

fn layout(b: &[u8]) -> Option<Layout> {
    let u = |at: usize| {
        b.get(at..at + 8)
            .map(|x| u64::from_le_bytes(x.try_into().unwrap()))
    };
    Some(Layout {
        data_offset: u(40)?,
        data_size: u(48)?,
    })
}

/// The end of the last complete record from `start`, scanning headers.
fn complete_records_end(b: &[u8], start: u64) -> u64 {
    let mut at = start as usize;
    while let Some(h) = b.get(at..at + 8) {
        let size = u16::from_le_bytes([h[6], h[7]]) as usize;
        if size < 8 || at + size > b.len() {
            break;
        }
        at += size;
    }
    at as u64
}

/// The last name of every thread (PERF_RECORD_COMM, in file order) and the
/// thread that exec'd `cmd` first: a quick scan that decodes nothing else.
fn scan_names(
    b: &[u8],
    l: &Layout,
    cmd: Option<&str>,
    sample_type: u64,
) -> (FxHashMap<u32, String>, Option<(u32, u64)>) {
    // The time in a record's sample_id trailer (PERF_SAMPLE_TID, TIME, ID,
    // STREAM_ID, CPU, IDENTIFIER, in that order, 8 bytes each).
    let bits = [1u64 << 1, 1 << 2, 1 << 6, 1 << 9, 1 << 7, 1 << 16];
    let trailer = bits.iter().filter(|&&b| sample_type & b != 0).count() * 8;
    let time_at = if sample_type & (1 << 2) != 0 {
        Some(if sample_type & (1 << 1) != 0 { 8 } else { 0 })
    } else {
        None
    };
    let mut names = FxHashMap::default();
    let mut target = None;
    let mut at = l.data_offset as usize;
    let end = (l.data_offset + l.data_size).min(b.len() as u64) as usize;
    while at + 8 <= end {
        let h = &b[at..at + 8];
        let ty = u32::from_le_bytes(h[0..4].try_into().unwrap());
        let misc = u16::from_le_bytes([h[4], h[5]]);
        let size = u16::from_le_bytes([h[6], h[7]]) as usize;
        if size < 8 || at + size > end {
            break;
        }
        if ty == 3 && size >= 16 {
            let body = &b[at + 8..at + size];
            let tid = u32::from_le_bytes(body[4..8].try_into().unwrap());
            let s = &body[8..];
            let n = s.iter().position(|&c| c == 0).unwrap_or(s.len());
            let comm = String::from_utf8_lossy(&s[..n]).into_owned();
            // PERF_RECORD_MISC_COMM_EXEC
            if misc & 0x2000 != 0 && target.is_none() && cmd == Some(comm.as_str()) {
                let t = time_at
                    .and_then(|o| {
                        let at = body.len().checked_sub(trailer)? + o;
                        body.get(at..at + 8)
                    })
                    .map(|x| u64::from_le_bytes(x.try_into().unwrap()))
                    .unwrap_or(0);
                target = Some((tid, t));
            }
            names.insert(tid, comm);
        }
        at += size;
    }
    (names, target)
}

/// The command a `perf record ... -- CMD` recorded, as its comm (the first
/// 15 bytes of the program's file name).
fn recorded_command(cmdline: &[&str]) -> Option<String> {
    let i = cmdline.iter().position(|a| *a == "--")?;
    let prog = cmdline.get(i + 1)?;
    let base = prog.rsplit('/').next().unwrap_or(prog);
    Some(base.chars().take(15).collect())
}

impl PerfSource {
    pub fn open(path: &Path) -> Result<PerfSource, ReadError> {
        Self::open_with(path, true)
    }

    /// [`Self::open`]; `in_place` false reads every file with
    /// `linux-perf-data`'s general iterator (to check the in-place reader
    /// against it).
    pub fn open_with(path: &Path, in_place: bool) -> Result<PerfSource, ReadError> {
        let name = path.display().to_string();
        let f = std::fs::File::open(path).map_err(|e| err(&name, format!("cannot open: {e}")))?;
        // SAFETY: the file is only read; a file changed underneath is the
        // same risk every mmap-based reader takes.
        let map = unsafe { memmap2::Mmap::map(&f) }
            .map_err(|e| err(&name, format!("cannot map: {e}")))?;
        let size = map.len() as u64;
        let lay = layout(&map).ok_or_else(|| {
            err(
                &name,
                "the perf.data header is cut short (file under 104 bytes)",
            )
        })?;
        let mut problems = Vec::new();
        let mut error = None;
        let data_end = lay.data_offset.saturating_add(lay.data_size);
        let damaged = lay.data_size == 0 || data_end > size;
        let bytes = if damaged {
            // perf was killed or the file was cut: make a copy whose header
            // covers the complete records and claims no feature sections.
            let end = complete_records_end(&map, lay.data_offset);
            let mut v = map.to_vec();
            v[48..56].copy_from_slice(&(end - lay.data_offset.min(end)).to_le_bytes());
            v[72..104].fill(0);
            v.truncate(end as usize);
            error = Some(ReadError::new(
                &name,
                Location::Offset(end),
                format!(
                    "the perf.data file is cut short (its header {}; complete records end at byte {end}); the analysis covers the records up to there",
                    if lay.data_size == 0 {
                        "was never finished: perf was stopped before writing it".to_string()
                    } else {
                        format!("promises {data_end} bytes, the file has {size}")
                    }
                ),
                false,
            ));
            Bytes::Owned(Arc::new(v))
        } else {
            Bytes::Map(Arc::new(map))
        };
        let PerfFileReader {
            perf_file,
            record_iter,
        } = PerfFileReader::parse_file(Cursor::new(bytes.clone())).map_err(|e| {
            err(
                &name,
                format!("not a readable perf.data file ({e}); expected a file written by `perf record` or `critpath record`"),
            )
        })?;

        // Tracepoint layouts: the file's own, else the running kernel's.
        let formats: Vec<EventFormat> = match perf_file
            .feature_section_data(linux_perf_data::Feature::TRACING_DATA)
            .map(tracefmt::parse_tracing_data)
        {
            Some(Ok(f)) => f,
            other => {
                let why = match other {
                    Some(Err(e)) => e,
                    _ => "the file has no tracing-data section".into(),
                };
                let all: Vec<&str> = [CORE_TRACEPOINTS, NET_TRACEPOINTS, SYSCALL_TRACEPOINTS]
                    .concat()
                    .into_iter()
                    .chain(["sched:sched_wakeup"])
                    .collect();
                let f = tracefmt::from_tracefs(&all);
                problems.push(Diagnostic::new(
                    DiagnosticKind::TracepointFormats,
                    format!("{why}; the tracepoint layouts of the running kernel were used instead ({} found)", f.len()),
                ));
                f
            }
        };
        let by_id = tracefmt::by_id(formats);

        let cmdline: Vec<String> = perf_file
            .cmdline()
            .ok()
            .flatten()
            .map(|v| v.into_iter().map(str::to_string).collect())
            .unwrap_or_default();
        let cmd = recorded_command(&cmdline.iter().map(String::as_str).collect::<Vec<_>>());
        let host = perf_file
            .hostname()
            .ok()
            .flatten()
            .filter(|h| !h.is_empty())
            .unwrap_or("local")
            .to_string();
        let lay2 = layout(bytes.as_ref()).expect("checked");
        let sample_type = perf_file
            .event_attributes()
            .first()
            .map(|a| a.attributes().sample_format.bits())
            .unwrap_or(0);
        let (names, target) = scan_names(bytes.as_ref(), &lay2, cmd.as_deref(), sample_type);
        let events: Vec<(u64, Vec<u64>)> = perf_file
            .event_attributes()
            .iter()
            .map(|a| (a.attributes().sample_format.bits(), a.event_ids.clone()))
            .collect();
        let raw = in_place
            .then(|| {
                records::RawRecords::new(
                    bytes.as_ref(),
                    lay2.data_offset as usize,
                    (lay2.data_offset + lay2.data_size) as usize,
                    &events,
                )
            })
            .flatten();

        // Samples are decoded by the tracepoint id each one carries in its
        // first field (common_type), so a file whose event-id table was
        // never written still decodes right.
        let mut strings = Interner::new();
        let mut decoders = FxHashMap::default();
        let mut kinds = Vec::new();
        for attr in perf_file.event_attributes() {
            let kind = match attr.attributes().type_ {
                PerfEventType::Tracepoint(id) => match by_id.get(&id) {
                    Some(f) => {
                        if let Some(d) = decoder(f, &mut strings) {
                            decoders.insert(id as u16, d);
                        }
                        format!("{}:{}", f.system, f.name)
                    }
                    None => format!("tracepoint {id}"),
                },
                _ => attr.name().unwrap_or("?").to_string(),
            };
            kinds.push(kind);
        }
        let has = |k: &str| kinds.iter().any(|x| x == k);
        // Timer events name their callbacks: by the names saved when the
        // file was recorded, else from the kernel's symbol table (loaded
        // meanwhile).
        let saved = load_symbols(&symbols_path(path));
        let timers = decoders
            .values()
            .any(|d| matches!(d, Decoder::TimerStart { .. } | Decoder::TimerEntry { .. }));
        if has("sched:sched_waking") {
            // The waking is the earlier, truer point of a wakeup.
            if let Some(f) = by_id.values().find(|f| f.name == "sched_wakeup") {
                decoders.remove(&(f.id as u16));
            }
        }
        if !has("sched:sched_switch") {
            let e = ReadError::new(
                &name,
                Location::File,
                format!(
                    "this perf.data has no sched:sched_switch events (it holds: {}), so threads have no states; record with `critpath record -o FILE -- CMD`, or `perf record -a -k CLOCK_MONOTONIC -e sched:sched_switch,sched:sched_waking,sched:sched_wakeup_new,sched:sched_process_fork,sched:sched_process_exit,irq:irq_handler_entry,irq:irq_handler_exit,irq:softirq_raise,irq:softirq_entry,irq:softirq_exit,timer:hrtimer_start,timer:hrtimer_expire_entry,timer:hrtimer_expire_exit -- CMD`",
                    if kinds.is_empty() { "nothing".to_string() } else { kinds.join(", ") }
                ),
                false,
            );
            error = error.or(Some(e));
        }
        // Without the scheduler's events threads have no states, so the
        // command's thread cannot bound the path (the error above says why).
        let scope = match target.filter(|_| has("sched:sched_switch")) {
            Some((tid, _)) => {
                let sm = format!(
                    "{}:{tid}",
                    names.get(&tid).map(String::as_str).unwrap_or("?")
                );
                Scope {
                    from: Some(sm.clone()),
                    to: Some(sm),
                }
            }
            None => Scope::default(),
        };
        let range = perf_file
            .sample_time_range()
            .ok()
            .flatten()
            .map(|r| (r.first_sample_time, r.last_sample_time));
        let builder = Builder::new(strings, &host, names, target);
        let annot_path = critpath_readers::annot::sibling(path);
        let annot = if annot_path.exists() {
            Some(critpath_readers::annot::AnnotReader::open(&annot_path)?)
        } else {
            None
        };
        Ok(PerfSource {
            name,
            file: perf_file,
            iter: record_iter,
            dec: Decoding {
                decoders,
                kallsyms: None,
                kallsyms_loading: (timers && saved.is_empty()).then(Kallsyms::spawn),
                saved,
                funcs: FxHashMap::default(),
                irq_names: FxHashMap::default(),
            },
            builder,
            index: 0,
            samples: 0,
            lost: 0,
            done: false,
            problems,
            error,
            scope,
            size,
            timed: (0, 0),
            range,
            stash: None,
            annot,
            bytes,
            raw,
            watcher: None,
        })
    }

    /// Reads perf records until the builder has output or the file ends.
    fn pump(&mut self) -> Result<(), ReadError> {
        if self.raw.is_some() {
            self.pump_raw();
            return Ok(());
        }
        while !self.done {
            if let Some(r) = self.builder.pop_ready() {
                self.stash = Some(r);
                return Ok(());
            }
            let rec = match self.iter.next_record(&mut self.file) {
                Ok(Some(r)) => r,
                Ok(None) => {
                    self.finish_input();
                    return Ok(());
                }
                Err(e) => {
                    self.finish_input();
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
                continue;
            };
            if record.record_type.0 == 13 {
                // PERF_RECORD_LOST_SAMPLES: u64 lost, then sample_id.
                let b = record.data.as_slice();
                if let Some(x) = b.get(0..8) {
                    self.lost += u64::from_le_bytes(x.try_into().unwrap());
                }
                continue;
            }
            let parsed = match record.parse() {
                Ok(p) => p,
                Err(_) => continue,
            };
            match parsed {
                EventRecord::Lost(l) => self.lost += l.count,
                EventRecord::Sample(s) => {
                    let (Some(t), Some(raw)) = (s.timestamp, s.raw) else {
                        continue;
                    };
                    let cpu = s.cpu.unwrap_or(0);
                    let pid = s.pid.unwrap_or(0).max(0) as u32;
                    let tid = s.tid.unwrap_or(0).max(0) as u32;
                    let raw = raw.as_slice();
                    self.samples += 1;
                    if self.timed.0 == 0 {
                        self.timed.0 = t;
                    }
                    self.timed.1 = t;
                    if let Some(ev) = self.dec.decode(&mut self.builder.strings, &raw) {
                        let k = KRecord {
                            t,
                            cpu,
                            pid,
                            tid,
                            ev,
                        };
                        self.feed(&k);
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// [`Self::pump`] with the in-place reader.
    fn pump_raw(&mut self) {
        while !self.done {
            if let Some(r) = self.builder.pop_ready() {
                self.stash = Some(r);
                return;
            }
            self.feed_raw(64);
        }
    }

    /// Feeds up to `n` samples from the in-place reader to the builder;
    /// at the end of the file, finishes the input.
    fn feed_raw(&mut self, n: usize) {
        let bytes = self.bytes.clone();
        let b = bytes.as_ref();
        let mut rr = self.raw.take().expect("raw reader");
        for _ in 0..n {
            let Some(s) = rr.next_sample(b) else {
                self.samples = rr.samples;
                self.lost = rr.lost;
                self.raw = Some(rr);
                self.finish_input();
                return;
            };
            if self.timed.0 == 0 {
                self.timed.0 = s.t;
            }
            self.timed.1 = s.t;
            if let Some(ev) = self
                .dec
                .decode(&mut self.builder.strings, &b[s.raw.0..s.raw.1])
            {
                self.feed(&KRecord {
                    t: s.t,
                    cpu: s.cpu,
                    pid: s.pid,
                    tid: s.tid,
                    ev,
                });
            }
        }
        self.raw = Some(rr);
    }

    /// One decoded kernel event: to the watcher, if any, and (after the
    /// annotations up to its time) to the graph builder.
    fn feed(&mut self, k: &KRecord) {
        if let Some(w) = self.watcher.as_mut() {
            w(k, &self.builder.strings);
        }
        feed_annotations(&mut self.annot, &mut self.builder, Some(k.t));
        self.builder.feed(k);
    }

    /// Has `watch` called with every kernel event decoded, in time order,
    /// as the records are read: views of the kernel's own events (profiles,
    /// packet lives) are computed from them beside the graph.
    pub fn watch(&mut self, watcher: Watcher) {
        self.watcher = Some(watcher);
    }

    fn finish_input(&mut self) {
        self.done = true;
        feed_annotations(&mut self.annot, &mut self.builder, None);
        self.builder.finish();
    }
}

/// Feeds the annotations up to time `until` (all with `None`).
fn feed_annotations(
    annot: &mut Option<critpath_readers::annot::AnnotReader>,
    builder: &mut Builder,
    until: Option<u64>,
) {
    let Some(r) = annot.as_mut() else { return };
    while r.peek_time().is_some_and(|a| until.is_none_or(|u| a <= u)) {
        let a = r.next_annotation().expect("peeked");
        builder.feed_annot(&a);
    }
}

/// Where `critpath record -o OUT` keeps the names of the kernel functions
/// the trace refers to: `OUT.syms`.
pub fn symbols_path(perf_data: &Path) -> std::path::PathBuf {
    critpath_readers::companion(perf_data, ".syms")
}

fn load_symbols(path: &Path) -> FxHashMap<u64, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return FxHashMap::default();
    };
    text.lines()
        .filter_map(|l| {
            let (a, n) = l.split_once(' ')?;
            Some((u64::from_str_radix(a, 16).ok()?, n.to_string()))
        })
        .collect()
}

/// Reads a perf.data through and writes the names of the kernel functions
/// its events refer to (timer callbacks) next to it, from this kernel's
/// symbol table: the trace then names them right wherever it is analyzed,
/// and without reading /proc/kallsyms. Returns how many were written.
pub fn save_symbols(perf_data: &Path) -> std::io::Result<usize> {
    let mut src = PerfSource::open(perf_data).map_err(std::io::Error::other)?;
    while !src.done || src.stash.is_some() {
        if let Ok(None) | Err(_) = src.next_record() {
            break;
        }
    }
    let mut out = String::new();
    let mut n = 0;
    let mut funcs: Vec<_> = src.dec.funcs.iter().collect();
    funcs.sort();
    for (addr, sym) in funcs {
        let name = src.builder.strings.resolve(*sym);
        if !name.starts_with("0x") {
            out.push_str(&format!("{addr:x} {name}\n"));
            n += 1;
        }
    }
    std::fs::write(symbols_path(perf_data), out)?;
    Ok(n)
}

/// Decoding state: per attribute a decoder, and name caches.
struct Decoding {
    decoders: FxHashMap<u16, Decoder>,
    kallsyms: Option<Kallsyms>,
    /// The table being loaded in the background.
    kallsyms_loading: Option<std::thread::JoinHandle<Kallsyms>>,
    /// Names saved at recording time (`OUT.syms`), which take precedence:
    /// they are the recording kernel's.
    saved: FxHashMap<u64, String>,
    funcs: FxHashMap<u64, Sym>,
    irq_names: FxHashMap<Vec<u8>, Sym>,
}

impl Decoding {
    /// The symbol of a kernel function address (timer callbacks).
    fn func(&mut self, strings: &mut Interner, addr: u64) -> Sym {
        if let Some(&s) = self.funcs.get(&addr) {
            return s;
        }
        if let Some(n) = self.saved.get(&addr) {
            let s = strings.intern(n);
            self.funcs.insert(addr, s);
            return s;
        }
        if self.kallsyms.is_none() {
            let loaded = match self.kallsyms_loading.take() {
                Some(h) => h.join().unwrap_or_else(|_| Kallsyms::load()),
                None => Kallsyms::load(),
            };
            self.kallsyms = Some(loaded);
        }
        let ks = self.kallsyms.as_ref().expect("loaded");
        let n = ks
            .name(addr)
            .map(str::to_string)
            .unwrap_or_else(|| format!("{addr:#x}"));
        let s = strings.intern(&n);
        self.funcs.insert(addr, s);
        s
    }

    /// Decodes one sample into a kernel event.
    fn decode(&mut self, strings: &mut Interner, raw: &[u8]) -> Option<KEvent> {
        let id = u16::from_le_bytes([*raw.first()?, *raw.get(1)?]);
        let d = self.decoders.get(&id)?;
        let comm = |f: &Field| -> Comm {
            let mut c = [0u8; 16];
            let s = f.str(raw);
            let n = s.len().min(16);
            c[..n].copy_from_slice(&s[..n]);
            c
        };
        Some(match d {
            Decoder::Switch {
                prev_comm,
                prev_pid,
                prev_state,
                next_comm,
                next_pid,
            } => KEvent::Switch {
                prev: prev_pid.u64(raw) as u32,
                prev_comm: comm(prev_comm),
                prev_state: prev_state.u64(raw),
                next: next_pid.u64(raw) as u32,
                next_comm: comm(next_comm),
            },
            Decoder::Wake { comm: c, pid } => KEvent::Wake {
                tid: pid.u64(raw) as u32,
                comm: comm(c),
            },
            Decoder::Fork { comm: c, pid } => KEvent::Fork {
                child: pid.u64(raw) as u32,
                comm: comm(c),
            },
            Decoder::Exec => KEvent::Exec,
            Decoder::IrqEntry { name } => {
                let n = name.str(raw);
                let sym = match self.irq_names.get(n) {
                    Some(&s) => s,
                    None => {
                        let s = strings.intern(&String::from_utf8_lossy(n));
                        self.irq_names.insert(n.to_vec(), s);
                        s
                    }
                };
                KEvent::IrqEntry { name: sym }
            }
            Decoder::IrqExit => KEvent::IrqExit,
            Decoder::Softirq { vec, what } => {
                let vec = vec.u64(raw) as u8;
                match what {
                    0 => KEvent::SoftirqRaise { vec },
                    1 => KEvent::SoftirqEntry { vec },
                    _ => KEvent::SoftirqExit { vec },
                }
            }
            Decoder::TimerStart {
                timer,
                func,
                expires,
                soft,
            } => {
                let (timer, addr) = (timer.u64(raw), func.u64(raw));
                let expires = expires.as_ref().map(|f| {
                    let hard = f.u64(raw);
                    (soft.as_ref().map_or(hard, |s| s.u64(raw).min(hard)), hard)
                });
                let func = self.func(strings, addr);
                KEvent::TimerStart {
                    timer,
                    func,
                    expires,
                }
            }
            Decoder::TimerEntry { timer, func } => {
                let (timer, addr) = (timer.u64(raw), func.u64(raw));
                let func = self.func(strings, addr);
                KEvent::TimerEntry { timer, func }
            }
            Decoder::TimerExit => KEvent::TimerExit,
            Decoder::Net {
                skb,
                point,
                len,
                graph,
            } => {
                let (skb, point) = (skb.u64(raw), *point);
                let len = len.as_ref().map_or(0, |f| f.u64(raw) as u32);
                if *graph {
                    KEvent::Net { skb, point, len }
                } else {
                    KEvent::Skb { skb, point, len }
                }
            }
            Decoder::Sock { sk, proto, ret } => KEvent::Sock {
                sk: sk.u64(raw),
                ready: ret.is_none(),
                proto: proto.u64(raw) as u16,
                ret: ret.as_ref().map_or(0, |f| f.u64(raw) as u32 as i32),
            },
            Decoder::SysEnter { id } => KEvent::SysEnter { nr: id.u64(raw) },
            Decoder::SysExit => KEvent::SysExit,
            Decoder::Func { func, ret } => KEvent::Func {
                func: *func,
                ret: *ret,
            },
        })
    }
}

/// The decoder for a tracepoint's layout, if critpath uses it.
fn decoder(f: &EventFormat, strings: &mut Interner) -> Option<Decoder> {
    let g = |n: &str| f.field(n).cloned();
    Some(match (f.system.as_str(), f.name.as_str()) {
        ("sched", "sched_switch") => Decoder::Switch {
            prev_comm: g("prev_comm")?,
            prev_pid: g("prev_pid")?,
            prev_state: g("prev_state")?,
            next_comm: g("next_comm")?,
            next_pid: g("next_pid")?,
        },
        ("sched", "sched_waking" | "sched_wakeup" | "sched_wakeup_new") => Decoder::Wake {
            comm: g("comm")?,
            pid: g("pid")?,
        },
        ("sched", "sched_process_fork") => Decoder::Fork {
            comm: g("child_comm")?,
            pid: g("child_pid")?,
        },
        ("sched", "sched_process_exec") => Decoder::Exec,
        ("irq", "irq_handler_entry") => Decoder::IrqEntry { name: g("name")? },
        ("irq", "irq_handler_exit") => Decoder::IrqExit,
        ("irq", "softirq_raise") => Decoder::Softirq {
            vec: g("vec")?,
            what: 0,
        },
        ("irq", "softirq_entry") => Decoder::Softirq {
            vec: g("vec")?,
            what: 1,
        },
        ("irq", "softirq_exit") => Decoder::Softirq {
            vec: g("vec")?,
            what: 2,
        },
        ("timer", "hrtimer_start") => Decoder::TimerStart {
            timer: g("hrtimer")?,
            func: g("function")?,
            expires: g("expires"),
            soft: g("softexpires"),
        },
        ("timer", "timer_start") => Decoder::TimerStart {
            timer: g("timer")?,
            func: g("function")?,
            // jiffies, not ns: not usable for inference.
            expires: None,
            soft: None,
        },
        ("timer", "hrtimer_expire_entry") => Decoder::TimerEntry {
            timer: g("hrtimer")?,
            func: g("function")?,
        },
        ("timer", "timer_expire_entry") => Decoder::TimerEntry {
            timer: g("timer")?,
            func: g("function")?,
        },
        ("timer", "hrtimer_expire_exit" | "timer_expire_exit") => Decoder::TimerExit,
        ("net", "net_dev_queue" | "net_dev_xmit" | "netif_rx" | "netif_receive_skb") => {
            Decoder::Net {
                skb: g("skbaddr")?,
                point: strings.intern(&f.name),
                len: g("len"),
                graph: true,
            }
        }
        ("net", "net_dev_start_xmit")
        | ("skb", "skb_copy_datagram_iovec" | "consume_skb" | "kfree_skb") => Decoder::Net {
            skb: g("skbaddr")?,
            point: strings.intern(&f.name),
            len: g("len"),
            graph: false,
        },
        ("sock", "sk_data_ready") => Decoder::Sock {
            sk: g("skaddr")?,
            proto: g("protocol")?,
            ret: None,
        },
        ("sock", "sock_recv_length") => Decoder::Sock {
            sk: g("sk")?,
            proto: g("protocol")?,
            ret: Some(g("ret")?),
        },
        ("raw_syscalls", "sys_enter") => Decoder::SysEnter { id: g("id")? },
        ("raw_syscalls", "sys_exit") => Decoder::SysExit,
        // Function probes: `critpath record --functions/--kernel-functions`
        // (groups critpath_fn, critpath_kfn) or `perf probe` (probe,
        // probe_BIN); `NAME__return` is the return probe.
        (sys, name) if sys.starts_with("probe") || sys.starts_with("critpath_") => {
            let (func, ret) = match name.strip_suffix("__return") {
                Some(f) => (f, true),
                None => (name, false),
            };
            Decoder::Func {
                func: strings.intern(&format!("running:{func}")),
                ret,
            }
        }
        _ => return None,
    })
}

/// Kernel function names by address, from /proc/kallsyms (readable as
/// root; elsewhere addresses stay numbers): the file's text and its
/// function symbols sorted by address.
struct Kallsyms {
    text: String,
    /// (address, start and end of the name in `text`).
    funcs: Vec<(u64, u32, u32)>,
}

impl Kallsyms {
    fn load() -> Kallsyms {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        let mut funcs = Vec::new();
        let mut at = 0usize;
        for line in text.split_inclusive('\n') {
            let start = at;
            at += line.len();
            let mut it = line.split_ascii_whitespace();
            let (Some(a), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            if let Ok(a) = u64::from_str_radix(a, 16) {
                if a != 0 {
                    let off = name.as_ptr() as usize - line.as_ptr() as usize + start;
                    funcs.push((a, off as u32, (off + name.len()) as u32));
                }
            }
        }
        // The first name of an address wins.
        funcs.sort_by_key(|f| f.0);
        funcs.dedup_by_key(|f| f.0);
        Kallsyms { text, funcs }
    }

    /// Loads the table on another thread (reading /proc/kallsyms is slow:
    /// the kernel formats it) while the trace is read.
    fn spawn() -> std::thread::JoinHandle<Kallsyms> {
        std::thread::spawn(Kallsyms::load)
    }

    fn name(&self, addr: u64) -> Option<&str> {
        let i = self.funcs.binary_search_by_key(&addr, |f| f.0).ok()?;
        let (_, a, b) = self.funcs[i];
        self.text.get(a as usize..b as usize)
    }
}

impl RecordSource for PerfSource {
    fn next_record(&mut self) -> Result<Option<(Record, Pos)>, ReadError> {
        loop {
            if let Some(r) = self.stash.take() {
                self.index += 1;
                return Ok(Some((r, Pos::Record(self.index))));
            }
            if self.done {
                return Ok(self.builder.pop_all().map(|r| {
                    self.index += 1;
                    (r, Pos::Record(self.index))
                }));
            }
            self.pump()?;
        }
    }
    fn next_batch(&mut self, out: &mut Vec<(Record, Pos)>, max: usize) -> Result<(), ReadError> {
        if self.raw.is_none() {
            // The general path, record by record.
            out.clear();
            while out.len() < max {
                match self.next_record()? {
                    Some(r) => out.push(r),
                    None => break,
                }
            }
            return Ok(());
        }
        out.clear();
        if let Some(r) = self.stash.take() {
            self.index += 1;
            out.push((r, Pos::Record(self.index)));
        }
        while out.len() < max {
            let next = if self.done {
                self.builder.pop_all()
            } else {
                self.builder.pop_ready()
            };
            match next {
                Some(r) => {
                    self.index += 1;
                    out.push((r, Pos::Record(self.index)));
                }
                None if self.done => break,
                None => self.feed_raw(256),
            }
        }
        Ok(())
    }
    fn strings(&self) -> &Interner {
        &self.builder.strings
    }
    fn bytes_read(&self) -> u64 {
        // Progress by trace time: the file's time range is in its header.
        let Some((first, last)) = self.range else {
            return 0;
        };
        let span = last.saturating_sub(first);
        if span == 0 {
            return 0;
        }
        let done = self.timed.1.saturating_sub(first);
        (self.size as f64 * (done as f64 / span as f64)).min(self.size as f64) as u64
    }
    fn summary(&mut self) -> Summary {
        let mut diagnostics = std::mem::take(&mut self.problems);
        if self.lost > 0 {
            diagnostics.push(
                Diagnostic::new(
                    DiagnosticKind::LostEvents,
                    format!(
                        "perf lost {} events (its buffers overflowed); transitions around them may be missing or inferred; record with larger buffers (critpath record --mmap-pages 4096) or fewer events",
                        self.lost
                    ),
                )
                .count(self.lost),
            );
        }
        let mut error = self.error.take();
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
        }
    }
    fn scope(&self) -> Scope {
        self.scope.clone()
    }
}
