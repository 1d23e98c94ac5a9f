//! Annotation traces written by the SDKs (docs/formats.md; `sdk/c/critpath.h`,
//! the `critpath-sdk` crate, Python's `critpath.sdk`) to `CRITPATH_OUT`:
//! reading them, alone or merged with a kernel recording.
//!
//! The file is a sequence of blocks, each one flush of one thread's buffer,
//! appended with a single `write` (so blocks of threads and processes that
//! share the file never interleave). All integers are little-endian.
//!
//! ```text
//! block  = "CPAB" len:u32 pid:u32 tid:u32 record*      (len = bytes of records)
//! record = kind:u8 ...
//!   1 begin_sm  t:u64 name:str        5 send  t:u64 id:u64
//!   2 end_sm    t:u64 name:str        6 recv  t:u64 id:u64 state:str
//!   3 state     t:u64 name:str        7 thread name:str      (the thread's name)
//!   4 wait      t:u64 state:str on:str on_state:str   (len 0xffff = none)
//!   8 lost      count:u64             (events the writer had to drop)
//!   9 calibration ps_per_event:u64 sdk:str
//!  10 task      id:u64 name:str       (later records of the block are this
//!                                      asyncio task's; id 0 = the thread)
//!  11 exit      t:u64                 (the thread ended: its last record,
//!                                      or its block's only one when the
//!                                      process exits while it runs)
//! str    = len:u16 bytes
//! ```
//!
//! Times are CLOCK_MONOTONIC nanoseconds, the clock `critpath record` gives
//! perf, so annotations and kernel events share one time line. Each
//! block's records are in time order; blocks are merged by time here.

use critpath_trace::{Location, ReadError};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

/// The first bytes of every block.
pub const MAGIC: &[u8; 4] = b"CPAB";
const HEADER: usize = 16;
const NONE_STR: u16 = 0xffff;

/// Does a file start like an annotation trace?
pub fn is_annotations(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// What an annotation says, with its strings borrowed from the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Annot<'a> {
    BeginSm(&'a str),
    EndSm(&'a str),
    State(&'a str),
    Wait {
        state: &'a str,
        on: Option<&'a str>,
        on_state: Option<&'a str>,
    },
    Send(u64),
    Recv {
        id: u64,
        state: &'a str,
    },
    /// The thread ended (or the process did while it ran): the SMs still
    /// begun on it end with it. Always the thread's, whatever task the
    /// block's records were of before.
    Exit,
}

/// One timed annotation: who (process, thread, asyncio task) and what.
#[derive(Clone, Copy, Debug)]
pub struct AnnotRecord<'a> {
    pub t: u64,
    pub pid: u32,
    pub tid: u32,
    /// 0 for the thread itself, else an asyncio task's id.
    pub task: u64,
    /// The task's name, when the record is a task's.
    pub task_name: Option<&'a str>,
    pub what: Annot<'a>,
    /// Byte offset of the record in the file.
    pub offset: u64,
}

/// One block's place in the file.
#[derive(Clone, Copy, Debug)]
struct Block {
    start: usize,
    end: usize,
    pid: u32,
    tid: u32,
    /// The file ends inside this block.
    cut: bool,
}

/// A cursor inside one block.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    block: usize,
    at: usize,
    task: u64,
}

/// The untimed facts of the file: names and calibrations.
#[derive(Debug, Default, Clone)]
pub struct Facts {
    /// Thread names by tid.
    pub threads: FxHashMap<u32, String>,
    /// Task names by (tid, task id).
    pub tasks: FxHashMap<(u32, u64), String>,
    /// Per process: measured cost of one event (ns) and which SDK.
    pub calibration: FxHashMap<u32, (f64, String)>,
    /// Events the writers had to drop (write errors, full disk).
    pub lost: u64,
    /// Annotation records in the file.
    pub records: u64,
    /// Names that are not UTF-8, and the byte offset of the first.
    pub not_utf8: Option<(u64, usize)>,
}

/// Reads an annotation file: scans its blocks, then yields the annotations
/// of all threads merged in time order.
pub struct AnnotReader {
    name: String,
    map: memmap2::Mmap,
    blocks: Vec<Block>,
    heap: BinaryHeap<Reverse<(u64, usize, usize)>>,
    cursors: Vec<Cursor>,
    pub facts: Facts,
    names: Names,
    /// Problems met (a damaged block, or `cut` true: the file ends inside a
    /// block, as when the writer was killed mid-write); never fatal.
    pub problems: Vec<(ReadError, bool)>,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The names that are not UTF-8 (a C program's bytes), read with U+FFFD
/// in place of what is not, so that two names stay two: met while the
/// blocks are scanned, kept by their byte offset.
#[derive(Default)]
struct Names {
    lossy: FxHashMap<usize, Box<str>>,
    /// Met in the scan, not decoded yet: offset and length.
    met: std::cell::RefCell<Vec<(usize, usize)>>,
}

impl Names {
    /// The name of the bytes `s` at offset `at`, not UTF-8.
    fn lossy(&self, at: usize, s: &[u8]) -> &str {
        match self.lossy.get(&at) {
            Some(text) => text,
            None => {
                self.met.borrow_mut().push((at, s.len()));
                "\u{FFFD}"
            }
        }
    }

    /// Decodes the names met in the scan of `b`; how many there were
    /// (each place once).
    fn decode(&mut self, b: &[u8]) -> usize {
        let met = std::mem::take(self.met.get_mut());
        let mut new = 0;
        for (at, n) in met {
            let text = String::from_utf8_lossy(&b[at..at + n]);
            new += usize::from(self.lossy.insert(at, text.into()).is_none());
        }
        new
    }
}

/// A parsed record: its time (None for untimed facts), content, length.
enum Parsed<'a> {
    Timed(u64, Annot<'a>),
    Thread(&'a str),
    Lost(u64),
    Calibration(u64, &'a str),
    Task(u64, &'a str),
}

/// Parses the record at `at` in `b`; `None` if it is cut short or unknown.
fn parse<'a>(b: &'a [u8], at: usize, names: &'a Names) -> Option<(Parsed<'a>, usize)> {
    let kind = *b.get(at)?;
    let mut p = at + 1;
    let string = |p: &mut usize| -> Option<Option<&str>> {
        let n = u16_at(b, *p)?;
        *p += 2;
        if n == NONE_STR {
            return Some(None);
        }
        let s = b.get(*p..*p + n as usize)?;
        let text = std::str::from_utf8(s).unwrap_or_else(|_| names.lossy(*p, s));
        *p += n as usize;
        Some(Some(text))
    };
    let time = |p: &mut usize| -> Option<u64> {
        let t = u64_at(b, *p)?;
        *p += 8;
        Some(t)
    };
    let parsed = match kind {
        1..=4 | 6 => {
            let t = time(&mut p)?;
            let what = match kind {
                1 => Annot::BeginSm(string(&mut p)??),
                2 => Annot::EndSm(string(&mut p)??),
                3 => Annot::State(string(&mut p)??),
                4 => Annot::Wait {
                    state: string(&mut p)??,
                    on: string(&mut p)?,
                    on_state: string(&mut p)?,
                },
                _ => {
                    let id = time(&mut p)?;
                    Annot::Recv {
                        id,
                        state: string(&mut p)??,
                    }
                }
            };
            Parsed::Timed(t, what)
        }
        5 => {
            let t = time(&mut p)?;
            Parsed::Timed(t, Annot::Send(time(&mut p)?))
        }
        7 => Parsed::Thread(string(&mut p)??),
        8 => Parsed::Lost(time(&mut p)?),
        9 => {
            let ps = time(&mut p)?;
            Parsed::Calibration(ps, string(&mut p)??)
        }
        10 => {
            let id = time(&mut p)?;
            Parsed::Task(id, string(&mut p)??)
        }
        11 => Parsed::Timed(time(&mut p)?, Annot::Exit),
        _ => return None,
    };
    Some((parsed, p - at))
}

/// Why a record of kind `kind` that does not parse inside its block
/// cannot be read.
fn unreadable(kind: u8) -> String {
    const NAMES: [&str; 11] = [
        "begin_sm",
        "end_sm",
        "state",
        "wait",
        "send",
        "recv",
        "thread",
        "lost",
        "calibration",
        "task",
        "exit",
    ];
    match NAMES.get(usize::from(kind).wrapping_sub(1)) {
        Some(name) => format!(
            "annotation record of kind {kind} ({name}) runs past its block's end or has no name where one is needed (length 0xffff); the rest of its block is skipped"
        ),
        None => format!("unknown annotation record kind {kind}; the rest of its block is skipped"),
    }
}

/// When the block in `b[start..end]` overruns the start of the next one:
/// its records do not parse to its end, or its end is not the start of a
/// block, and a block's magic lies before that place, its first record
/// whole (a write cut short, the next block appended after it). Gives the
/// end of the last record whole before that magic, and the magic's offset.
fn overrun(b: &[u8], start: usize, end: usize, names: &Names) -> Option<(usize, usize)> {
    let mut at = start;
    while let Some((_, n)) = parse(&b[..end], at, names).filter(|_| at < end) {
        at += n;
    }
    if at >= end && (end == b.len() || b[end..].starts_with(MAGIC)) {
        return None;
    }
    let next = (start..=at.min(end - 1))
        .rev()
        .find(|&m| b[m..].starts_with(MAGIC) && parse(b, m + HEADER, names).is_some())?;
    let mut whole = start;
    while let Some((_, n)) = parse(&b[..next], whole, names) {
        whole += n;
    }
    Some((whole, next))
}

impl AnnotReader {
    pub fn open(path: &Path) -> Result<AnnotReader, ReadError> {
        let name = path.display().to_string();
        let fail = |m: String| ReadError::new(&name, Location::File, m, true);
        let f = std::fs::File::open(path).map_err(|e| fail(format!("cannot open: {e}")))?;
        // SAFETY: read only; see PerfSource::open.
        let map =
            unsafe { memmap2::Mmap::map(&f) }.map_err(|e| fail(format!("cannot map: {e}")))?;
        let mut r = AnnotReader {
            name,
            map,
            blocks: Vec::new(),
            heap: BinaryHeap::new(),
            cursors: Vec::new(),
            facts: Facts::default(),
            names: Names::default(),
            problems: Vec::new(),
        };
        r.scan();
        Ok(r)
    }

    fn problem(&mut self, offset: usize, msg: String, cut: bool) {
        self.problems.push((
            ReadError::new(&self.name, Location::Offset(offset as u64), msg, false),
            cut,
        ));
    }

    /// Finds the blocks, collects the untimed facts, and primes the merge
    /// with each block's first timed record.
    fn scan(&mut self) {
        let len = self.map.len();
        let mut at = 0;
        while at < len {
            let b = &self.map[..];
            if !b[at..].starts_with(MAGIC) {
                // Damage: resynchronize at the next block.
                let next = b[at + 1..]
                    .windows(4)
                    .position(|w| w == MAGIC)
                    .map(|i| at + 1 + i);
                self.problem(
                    at,
                    format!(
                        "expected a block (\"CPAB\"); {} damaged byte(s) skipped",
                        next.unwrap_or(len) - at
                    ),
                    false,
                );
                match next {
                    Some(n) => {
                        at = n;
                        continue;
                    }
                    None => break,
                }
            }
            let (Some(n), Some(pid), Some(tid)) =
                (u32_at(b, at + 4), u32_at(b, at + 8), u32_at(b, at + 12))
            else {
                self.problem(
                    at,
                    "block header cut short (the writer was stopped mid-write or the disk filled)"
                        .into(),
                    true,
                );
                break;
            };
            let end = at + HEADER + n as usize;
            // A write cut short (a full disk) leaves part of a block, and
            // the next block follows it: its records end at that block.
            if let Some((whole, next)) = overrun(b, at + HEADER, end.min(len), &self.names) {
                self.problem(whole, format!("block of {n} bytes cut short by a block that starts at byte offset {next} (a write was cut short, as when the disk fills); its complete records are kept"), true);
                self.blocks.push(Block {
                    start: at + HEADER,
                    end: whole,
                    pid,
                    tid,
                    cut: false,
                });
                at = next;
                continue;
            }
            if end > len {
                self.problem(at, format!("block of {n} bytes cut short at the end of the file ({} bytes present; the writer was stopped mid-write or the disk filled); its complete records are kept", len - at - HEADER), true);
            }
            self.blocks.push(Block {
                start: at + HEADER,
                end: end.min(len),
                pid,
                tid,
                cut: end > len,
            });
            at = end;
        }
        let first = self.names.met.borrow().iter().map(|&(at, _)| at).min();
        let met = self.names.decode(&self.map);
        self.facts.not_utf8 = first.filter(|_| met > 0).map(|at| (met as u64, at));
        for i in 0..self.blocks.len() {
            let mut c = Cursor {
                block: i,
                at: self.blocks[i].start,
                task: 0,
            };
            if let Some(t) = self.advance(&mut c, true) {
                self.heap.push(Reverse((t, i, self.cursors.len())));
            }
            self.cursors.push(c);
        }
    }

    /// Moves `c` to its block's next timed record (noting untimed facts on
    /// the way) and returns its time.
    fn advance(&mut self, c: &mut Cursor, first_pass: bool) -> Option<u64> {
        let blk = self.blocks[c.block];
        loop {
            if c.at >= blk.end {
                return None;
            }
            let Some((p, n)) = parse(&self.map[..blk.end], c.at, &self.names) else {
                let at = c.at;
                self.problem(
                    at,
                    if blk.cut {
                        "annotation record cut short at the end of the file".into()
                    } else {
                        unreadable(self.map[at])
                    },
                    blk.cut,
                );
                c.at = blk.end;
                return None;
            };
            match p {
                Parsed::Timed(t, _) => return Some(t),
                Parsed::Thread(s) => {
                    self.facts.threads.insert(blk.tid, s.to_string());
                }
                Parsed::Lost(k) => {
                    if first_pass {
                        self.facts.lost += k;
                    }
                }
                Parsed::Calibration(ps, sdk) => {
                    self.facts
                        .calibration
                        .insert(blk.pid, (ps as f64 / 1000.0, sdk.to_string()));
                }
                Parsed::Task(id, s) => {
                    c.task = id;
                    if id != 0 {
                        self.facts.tasks.insert((blk.tid, id), s.to_string());
                    }
                }
            }
            c.at += n;
        }
    }

    /// The next annotation in time order (ties: file order).
    pub fn next_annotation(&mut self) -> Option<AnnotRecord<'_>> {
        let Reverse((t, _, ci)) = self.heap.pop()?;
        let mut c = self.cursors[ci];
        let blk = self.blocks[c.block];
        let at = c.at;
        let (_, n) = parse(&self.map[..blk.end], at, &self.names).expect("parsed when primed");
        c.at += n;
        let task = c.task;
        if let Some(t2) = self.advance(&mut c, false) {
            self.heap.push(Reverse((t2.max(t), c.block, ci)));
        }
        self.cursors[ci] = c;
        self.facts.records += 1;
        let Some((Parsed::Timed(_, what), _)) = parse(&self.map[..blk.end], at, &self.names) else {
            unreachable!("a primed cursor stands on a timed record")
        };
        // An exit is the thread's, whatever task the block was in.
        let task = if what == Annot::Exit { 0 } else { task };
        let task_name = match task {
            0 => None,
            id => self.facts.tasks.get(&(blk.tid, id)).map(String::as_str),
        };
        Some(AnnotRecord {
            t,
            pid: blk.pid,
            tid: blk.tid,
            task,
            task_name,
            what,
            offset: at as u64,
        })
    }

    /// Time of the next annotation, without taking it.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Bytes of the file.
    pub fn len(&self) -> u64 {
        self.map.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Where `critpath record -o OUT` has the SDKs write: `OUT.annot`.
pub fn sibling(perf_data: &Path) -> std::path::PathBuf {
    crate::companion(perf_data, ".annot")
}

/// What went wrong reading annotations: diagnostics for all of it, and the
/// first problem as the error (exit 2; what could be read is analyzed).
pub fn summary(reader: &mut AnnotReader) -> critpath_trace::Summary {
    let mut out = Vec::new();
    let mut error = None;
    for (e, cut) in reader.problems.drain(..) {
        out.push(critpath_trace::Diagnostic::new(
            if cut {
                critpath_trace::DiagnosticKind::CutShort
            } else {
                critpath_trace::DiagnosticKind::DamagedInput
            },
            e.to_string(),
        ));
        if error.is_none() {
            error = Some(e);
        }
    }
    let facts = &reader.facts;
    if facts.lost > 0 {
        out.push(
            critpath_trace::Diagnostic::new(
                critpath_trace::DiagnosticKind::LostAnnotations,
                format!(
                    "the annotated program could not write {} annotation event(s) (CRITPATH_OUT unwritable or the disk full); the states around them are missing",
                    facts.lost
                ),
            )
            .count(facts.lost),
        );
    }
    if let Some((n, at)) = facts.not_utf8 {
        out.push(
            critpath_trace::Diagnostic::new(
                critpath_trace::DiagnosticKind::LossyNames,
                format!(
                    "{}: {n} name(s) are not UTF-8 (the first at byte offset {at}): each was read with U+FFFD in place of the bytes that are not",
                    reader.name
                ),
            )
            .count(n),
        );
    }
    critpath_trace::Summary {
        diagnostics: out,
        error,
        ..Default::default()
    }
}
