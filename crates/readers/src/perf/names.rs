//! The names pre-pass over a perf.data file: the latest name of every
//! thread (PERF_RECORD_COMM, by the time in its trailer: perf writes each
//! CPU's buffer in turn, so a thread renamed on two CPUs has its COMM
//! records out of time order in the file) and the recorded command's
//! thread: the first exec of it by a process the recorder forked
//! (PERF_RECORD_FORK), so that a program of the same name run by someone
//! else during a system-wide recording is never taken for it; see
//! [`Wanted`]. It decodes nothing else and releases the pages it has read
//! ([`Bytes::release`]).
//!
//! Each record's header gives the next one's place, so a walk is a chain of
//! dependent loads bound by memory latency: it asks for the bytes a page
//! ahead ([`fetch_ahead`]), and a large file is walked in two halves at
//! once: the second from a record boundary guessed past the middle, its
//! result kept only when the first half's walk lands on that boundary
//! exactly. The result is always the one of a single walk.
//!
//! When the analysis can take names late, only the file's head is walked
//! here (for the command's thread) and the in-place reader of events
//! gathers the rest on its way ([`Gather`]), with the same result at the
//! end: the file is then read once.
//!
//! A damaged header is stepped over to where records read again, as the
//! in-place reader of events does; for files that reader cannot walk (the
//! general one stops at damage), the walk stops there too, so that no name
//! comes from records whose events are never read.

use super::file::{Bytes, Layout, Stream, RELEASE_STEP};
use super::records::{fetch_ahead, header, next_boundary};
use linux_perf_data::{PerfFileReader, PerfFileRecord};
use rustc_hash::FxHashMap;

/// Thread names by tid.
pub type Names = FxHashMap<u32, String>;

/// Which thread is the recorded command's main thread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Wanted<'a> {
    /// The first exec, in time, by a process the recorder forked
    /// (`perf record -- CMD` forks the child that execs CMD): of this comm
    /// when the header's command line gives it, of any program when it is
    /// lost (a cut file). The recorder is known by its pid (the `.recorder`
    /// file beside the trace), else as a parent named `perf`. When no
    /// process the recorder forked exec'd the comm (no fork record names
    /// it), the first exec of the comm by any process; of any program,
    /// none.
    Exec {
        comm: Option<&'a str>,
        recorder: Option<u32>,
    },
    /// No thread.
    Nothing,
}

/// What the pre-pass found.
#[derive(Debug, Default, PartialEq)]
pub struct Found {
    pub names: Names,
    /// The thread that exec'd the command first, and when.
    pub target: Option<(u32, u64)>,
    /// When `target` is not known to be the recorder's child: how many
    /// other threads exec'd the command too (the choice was a guess).
    pub rivals: usize,
    /// Where the walk stopped at a header that is no record's, if it did.
    pub stopped: Option<usize>,
}

/// Below this many bytes of records, one walk.
const SPLIT_BYTES: u64 = 64 << 20;
/// How far past the middle a boundary is looked for.
const GUESS_SPAN: usize = 1 << 20;

/// Where the time sits in a record's `sample_id` trailer.
#[derive(Clone, Copy)]
struct Trailer {
    /// The trailer's length (PERF_SAMPLE_TID, TIME, ID, STREAM_ID, CPU,
    /// IDENTIFIER, in that order, 8 bytes each).
    len: usize,
    /// The time's offset in it, when the trailer has a time.
    time_at: Option<usize>,
}

impl Trailer {
    fn new(sample_type: u64) -> Trailer {
        let bits = [1u64 << 1, 1 << 2, 1 << 6, 1 << 9, 1 << 7, 1 << 16];
        let len = bits.iter().filter(|&&b| sample_type & b != 0).count() * 8;
        let time_at = (sample_type & (1 << 2) != 0).then_some(if sample_type & (1 << 1) != 0 {
            8
        } else {
            0
        });
        Trailer { len, time_at }
    }

    /// The time of a record whose body (after its header) is `body`.
    fn time(&self, body: &[u8]) -> u64 {
        self.time_at
            .and_then(|o| {
                let at = body.len().checked_sub(self.len)? + o;
                body.get(at..at + 8)
            })
            .map_or(0, |x| u64::from_le_bytes(x.try_into().unwrap()))
    }
}

/// Per thread, its latest name and that name's time: a later-timed name
/// wins, and of names of the same time (records without a time) the later
/// in the file.
#[derive(Default)]
struct Latest(FxHashMap<u32, (u64, String)>);

impl Latest {
    fn name(&mut self, tid: u32, t: u64, comm: String) {
        match self.0.get_mut(&tid) {
            Some(had) if had.0 > t => {}
            Some(had) => *had = (t, comm),
            None => {
                self.0.insert(tid, (t, comm));
            }
        }
    }

    /// Adds the names of the records after these.
    fn extend(&mut self, later: Latest) {
        for (tid, (t, comm)) in later.0 {
            self.name(tid, t, comm);
        }
    }
}

/// When a thread exec'd: its time, then its place in the file (which
/// orders records of equal time, or of none).
type Exec = (u64, usize);

/// What a walk over part of the records found, and where it stopped.
#[derive(Default)]
struct Walk {
    names: Latest,
    /// For [`Wanted::Exec`]: each process's parent (PERF_RECORD_FORK of a
    /// process, not a thread; only the recorder's children when its pid is
    /// known), and each thread's earliest exec (of the command when it is
    /// known).
    parents: FxHashMap<u32, u32>,
    execs: FxHashMap<u32, Exec>,
    /// Where the walk stopped: the first record at or past its stop, or a
    /// bad header it could not step over.
    at: usize,
    /// It stopped at a header that is not a record, with no place after
    /// it where records read again.
    broken: bool,
}

impl Walk {
    fn found(self, wanted: Wanted) -> Found {
        let (target, rivals) = match wanted {
            Wanted::Exec { comm, recorder } => self.first_exec(comm.is_some(), recorder),
            Wanted::Nothing => (None, 0),
        };
        Found {
            names: self
                .names
                .0
                .into_iter()
                .map(|(tid, (_, n))| (tid, n))
                .collect(),
            target,
            rivals,
            stopped: self.broken.then_some(self.at),
        }
    }

    /// The earliest exec by a process whose parent is the recorder; else,
    /// with `fallback`, the earliest of all. With how many others there
    /// are when the choice is not sure: other execs of the fallback, or
    /// other children that exec'd of processes named perf (two recorders
    /// at once, and no pid to tell which).
    fn first_exec(&self, fallback: bool, recorder: Option<u32>) -> (Option<(u32, u64)>, usize) {
        let is_recorder = |pid: u32| match recorder {
            Some(r) => pid == r,
            None => self.names.0.get(&pid).is_some_and(|(_, n)| n == "perf"),
        };
        let forked = |tid: &u32| self.parents.get(tid).is_some_and(|&p| is_recorder(p));
        let first = |keep: &dyn Fn(&u32) -> bool| {
            let execs = self.execs.iter().filter(|(tid, _)| keep(tid));
            let execs: Vec<(Exec, u32)> = execs.map(|(&tid, &e)| (e, tid)).collect();
            let ((t, _), tid) = execs.iter().min().copied()?;
            Some(((tid, t), execs.len() - 1))
        };
        match first(&forked) {
            Some((child, others)) => (Some(child), if recorder.is_some() { 0 } else { others }),
            None if fallback => first(&|_| true).map_or((None, 0), |(e, n)| (Some(e), n)),
            None => (None, 0),
        }
    }

    /// Adds what the walk of the records after these found.
    fn extend(&mut self, later: Walk) {
        self.names.extend(later.names);
        self.parents.extend(later.parents);
        for (tid, e) in later.execs {
            let had = self.execs.entry(tid).or_insert(e);
            *had = (*had).min(e);
        }
        (self.broken, self.at) = (later.broken, later.at);
    }
}

/// What a walk looks for in each record.
#[derive(Clone, Copy)]
struct Looking<'a> {
    wanted: Wanted<'a>,
    trailer: Trailer,
}

/// What a walk is looking for, and in what.
struct Scan<'a> {
    bytes: &'a Bytes,
    looking: Looking<'a>,
    /// The start and end of the records.
    start: usize,
    end: usize,
    /// Step over damaged headers (else stop at the first).
    resync: bool,
}

impl Looking<'_> {
    /// The record at `w.at` of type `ty` whose body (after its header) is
    /// `body`: a name, an exec or a process's fork.
    fn record(&self, w: &mut Walk, ty: u32, misc: u16, body: &[u8]) {
        if ty == 3 && body.len() >= 8 {
            self.comm(w, body, misc);
        }
        if let (7, 16.., Wanted::Exec { recorder, .. }) = (ty, body.len(), self.wanted) {
            // PERF_RECORD_FORK: pid, ppid, tid, ptid. Of a process,
            // kept only when the recorder may be its parent.
            let u = |o: usize| u32::from_le_bytes(body[o..o + 4].try_into().unwrap());
            if u(0) == u(8) && recorder.is_none_or(|r| r == u(4)) {
                w.parents.insert(u(0), u(4));
            }
        }
    }

    /// A PERF_RECORD_COMM's body: the thread's name, and its exec
    /// (PERF_RECORD_MISC_COMM_EXEC) when it may be the command's.
    fn comm(&self, w: &mut Walk, body: &[u8], misc: u16) {
        let at = w.at;
        let tid = u32::from_le_bytes(body[4..8].try_into().unwrap());
        let s = &body[8..];
        let n = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        let comm = String::from_utf8_lossy(&s[..n]).into_owned();
        let t = self.trailer.time(body);
        let wanted = match self.wanted {
            Wanted::Exec { comm: cmd, .. } => cmd.is_none_or(|cmd| cmd == comm),
            Wanted::Nothing => false,
        };
        if misc & 0x2000 != 0 && wanted {
            let had = w.execs.entry(tid).or_insert((t, at));
            *had = (*had).min((t, at));
        }
        w.names.name(tid, t, comm);
    }
}

impl Scan<'_> {
    /// Walks the records from `w.at` until one starts at or past `stop`.
    fn walk(&self, w: &mut Walk, stop: usize) {
        let b = self.bytes.as_ref();
        let mut released = w.at;
        while w.at < stop && w.at + 8 <= self.end {
            let at = w.at;
            fetch_ahead(b, at);
            self.bytes.release_behind(&mut released, at, RELEASE_STEP);
            let (ty, misc, size) = header(b, at).expect("8 bytes before the end");
            if size < 8 || at + size > self.end {
                // Damage: on from where records read again, as the
                // events' reader goes on (records::RawRecords).
                let next = self
                    .resync
                    .then(|| next_boundary(b, self.start, at + 8, (self.end, self.end)));
                match next.flatten() {
                    Some(next) => {
                        w.at = next;
                        continue;
                    }
                    None => {
                        w.broken = true;
                        break;
                    }
                }
            }
            self.looking.record(w, ty, misc, &b[at + 8..at + size]);
            w.at += size;
        }
        self.bytes.release(released, w.at);
    }

    /// A place past `from` (and before `from + GUESS_SPAN`) that looks
    /// like a record boundary ([`next_boundary`]).
    fn guess_boundary(&self, from: usize) -> Option<usize> {
        let b = self.bytes.as_ref();
        next_boundary(b, self.start, from, (from + GUESS_SPAN, self.end))
    }
}

/// The latest name of every thread and the recorded command's thread
/// ([`Wanted`]) with the time of its exec, from the records of `bytes`
/// that `l` places. `sample_type` says where records keep their time; with
/// `resync`, damaged headers are stepped over (else the walk stops there);
/// with `threads`, a large file is walked in two halves at once.
pub fn scan_names(
    bytes: &Bytes,
    l: &Layout,
    (wanted, resync): (Wanted, bool),
    (sample_type, threads): (u64, bool),
) -> Found {
    let split = if threads { SPLIT_BYTES } else { u64::MAX };
    scan_split(bytes, l, (wanted, sample_type, resync), split)
}

/// [`scan_names`] of a file whose records are compressed (`perf record
/// -z`): its records as the perf parser `file` (opened on it from its
/// start) hands them over, decompressed, numbered in that order (for names
/// and execs of equal time). The walk stops where that reader does.
pub fn scan_decompressed(
    file: Option<PerfFileReader<Stream>>,
    wanted: Wanted,
    sample_type: u64,
) -> Found {
    let looking = Looking {
        wanted,
        trailer: Trailer::new(sample_type),
    };
    let mut w = Walk::default();
    if let Some(PerfFileReader {
        mut perf_file,
        mut record_iter,
    }) = file
    {
        // A panic of the parser on a damaged record ends the walk there
        // (reading the events meets it again and says where).
        let _ = critpath_trace::contained(|| {
            while let Ok(Some(rec)) = record_iter.next_record(&mut perf_file) {
                if let PerfFileRecord::EventRecord { record: r, .. } = rec {
                    let body = r.data.as_slice();
                    looking.record(&mut w, r.record_type.0, r.misc, &body);
                }
                w.at += 1;
            }
        });
    }
    w.found(wanted)
}

/// What [`scan_names`] finds, gathered by another walk over the same
/// records in the same order (the in-place reader of events meets every
/// record on its way): the pre-pass's result without a pass of its own,
/// known at the walk's end.
pub struct Gather {
    comm: Option<String>,
    recorder: Option<u32>,
    exec: bool,
    trailer: Trailer,
    walk: Walk,
}

impl Gather {
    pub fn new(wanted: Wanted, sample_type: u64) -> Gather {
        let (comm, recorder, exec) = match wanted {
            Wanted::Exec { comm, recorder } => (comm.map(str::to_string), recorder, true),
            Wanted::Nothing => (None, None, false),
        };
        Gather {
            comm,
            recorder,
            exec,
            trailer: Trailer::new(sample_type),
            walk: Walk::default(),
        }
    }

    /// The record at byte `at` of type `ty` (a name or a fork: other types
    /// change nothing) whose body (after its header) is `body`.
    pub fn record(&mut self, at: usize, ty: u32, misc: u16, body: &[u8]) {
        let Gather {
            comm,
            recorder,
            exec,
            trailer,
            walk,
        } = self;
        walk.at = at;
        let looking = Looking {
            wanted: wanted_of(*exec, comm.as_deref(), *recorder),
            trailer: *trailer,
        };
        looking.record(walk, ty, misc, body);
    }

    /// What the records met found.
    pub fn found(self) -> Found {
        let Gather {
            comm,
            recorder,
            exec,
            walk,
            ..
        } = self;
        walk.found(wanted_of(exec, comm.as_deref(), recorder))
    }
}

fn wanted_of(exec: bool, comm: Option<&str>, recorder: Option<u32>) -> Wanted<'_> {
    match exec {
        true => Wanted::Exec { comm, recorder },
        false => Wanted::Nothing,
    }
}

/// [`scan_names`], in two halves when there are `split` bytes of records
/// or more.
fn scan_split(
    bytes: &Bytes,
    l: &Layout,
    (wanted, sample_type, resync): (Wanted, u64, bool),
    split: u64,
) -> Found {
    let start = l.data_offset as usize;
    let end = (l.data_offset.saturating_add(l.data_size)).min(bytes.as_ref().len() as u64) as usize;
    let scan = Scan {
        bytes,
        looking: Looking {
            wanted,
            trailer: Trailer::new(sample_type),
        },
        start,
        end,
        resync,
    };
    let mut first = Walk {
        at: start,
        ..Walk::default()
    };
    let mid = (end.saturating_sub(start) as u64 >= split)
        .then(|| scan.guess_boundary(start + (end - start) / 2))
        .flatten();
    let Some(mid) = mid else {
        scan.walk(&mut first, end);
        return first.found(wanted);
    };
    let second = std::thread::scope(|s| {
        let second = s.spawn(|| {
            let mut w = Walk {
                at: mid,
                ..Walk::default()
            };
            scan.walk(&mut w, end);
            w
        });
        scan.walk(&mut first, mid);
        second.join().expect("the names scan does not panic")
    });
    let joined = first.at == mid && !first.broken;
    #[cfg(test)]
    tests::JOINS.with(|j| j.borrow_mut().push(joined));
    if joined {
        // The guess was a boundary: the second half continues the first.
        first.extend(second);
    } else if !first.broken {
        // The first walk stepped over the guess: it goes on alone.
        scan.walk(&mut first, end);
    }
    first.found(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::sync::Arc;

    /// The command `cmd`, recorder unknown.
    const CMD: Wanted = Wanted::Exec {
        comm: Some("cmd"),
        recorder: None,
    };

    thread_local! {
        /// Whether each split scan joined its halves.
        pub(super) static JOINS: RefCell<Vec<bool>> = const { RefCell::new(Vec::new()) };
    }

    /// A record of type `ty` whose body is `body` and a trailer of tid
    /// and time (sample_type TID | TIME).
    fn record(out: &mut Vec<u8>, ty: u32, misc: u16, body: &[u8], t: u64) {
        let size = 8 + body.len() + 16;
        out.extend(ty.to_le_bytes());
        out.extend(misc.to_le_bytes());
        out.extend((size as u16).to_le_bytes());
        out.extend(body);
        out.extend([0u8; 8]);
        out.extend(t.to_le_bytes());
    }

    fn comm(out: &mut Vec<u8>, tid: u32, name: &str, exec: bool, t: u64) {
        let mut body = Vec::new();
        body.extend(tid.to_le_bytes());
        body.extend(tid.to_le_bytes());
        let mut n = name.as_bytes().to_vec();
        n.resize(16, 0);
        body.extend(n);
        record(out, 3, if exec { 0x2000 } else { 0 }, &body, t);
    }

    /// Records of seeded random kinds: names, renames, execs, samples of
    /// any length, and samples whose bytes look like a chain of headers.
    fn file(seed: u64, records: usize) -> (Bytes, Layout) {
        let mut rng = seed | 1;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut out = vec![0u8; 104];
        for i in 0..records as u64 {
            match next() % 10 {
                0 => comm(
                    &mut out,
                    (next() % 50) as u32,
                    &format!("t{}", next() % 7),
                    false,
                    i,
                ),
                1 => comm(&mut out, (next() % 50) as u32, "cmd", next() % 3 == 0, i),
                2 => {
                    // A payload that looks like 40 plausible headers.
                    let fake: Vec<u8> = (0..40).flat_map(|_| [9, 0, 0, 0, 0, 0, 8, 0]).collect();
                    record(&mut out, 9, 0, &fake, i);
                }
                _ => record(&mut out, 9, 0, &vec![7u8; 8 * (next() % 20) as usize], i),
            }
        }
        file_of(out)
    }

    /// The bytes of a file whose records follow a 104-byte header, and its
    /// layout.
    fn file_of(out: Vec<u8>) -> (Bytes, Layout) {
        let l = Layout {
            data_offset: 104,
            data_size: out.len() as u64 - 104,
        };
        (Bytes::Owned(Arc::new(out)), l)
    }

    #[test]
    fn two_halves_find_what_one_walk_finds() {
        for seed in 1..40 {
            let (bytes, l) = file(seed, 3_000);
            let what = (CMD, (1 << 1) | (1 << 2), true);
            let one = scan_split(&bytes, &l, what, u64::MAX);
            assert!(!one.names.is_empty(), "seed {seed}");
            for split in [1, 1000, l.data_size / 2] {
                let two = scan_split(&bytes, &l, what, split);
                assert_eq!(one, two, "seed {seed}, split at {split} bytes");
            }
        }
        // Both ways were taken: halves joined, and guesses stepped over.
        let joins = JOINS.with(|j| j.take());
        assert!(joins.contains(&true) && joins.contains(&false), "{joins:?}");
    }

    #[test]
    fn a_cut_record_ends_both_walks_alike() {
        let (bytes, mut l) = file(7, 3_000);
        l.data_size -= 5;
        let what = (CMD, (1 << 1) | (1 << 2), true);
        assert_eq!(
            scan_split(&bytes, &l, what, u64::MAX),
            scan_split(&bytes, &l, what, 1)
        );
    }

    /// A header that is no record's (shorter than a header) in the middle:
    /// the walk goes on from where records read again, so a name given
    /// after the damage is found, by one walk and by two.
    #[test]
    fn a_damaged_header_is_stepped_over() {
        let mut out = vec![0u8; 104];
        comm(&mut out, 1, "before", false, 1);
        for i in 0..100 {
            record(&mut out, 9, 0, &[7u8; 24], 2 + i);
        }
        let damaged = out.len();
        record(&mut out, 9, 0, &[7u8; 24], 200);
        out[damaged + 6..damaged + 8].copy_from_slice(&4u16.to_le_bytes());
        for i in 0..100 {
            record(&mut out, 9, 0, &[7u8; 24], 300 + i);
        }
        comm(&mut out, 2, "after", false, 500);
        let (bytes, l) = file_of(out);
        for split in [u64::MAX, 1] {
            let names = scan_split(&bytes, &l, (Wanted::Nothing, 6, true), split).names;
            assert_eq!(names.get(&1).map(String::as_str), Some("before"));
            let after = names.get(&2).map(String::as_str);
            assert_eq!(after, Some("after"), "split {split}");
            // Without resync (the general reader stops at damage): no
            // name from past it.
            let Found { names, stopped, .. } =
                scan_split(&bytes, &l, (Wanted::Nothing, 6, false), split);
            assert_eq!(names.get(&1).map(String::as_str), Some("before"));
            assert_eq!(names.get(&2), None, "split {split}");
            assert_eq!(stopped, Some(damaged), "split {split}");
        }
    }

    /// A thread renamed on two CPUs: perf wrote the later name's record
    /// (CPU 0's buffer) before the earlier one's. The name is the latest in
    /// time, by one walk and by two; the command's thread is its earliest
    /// exec in time.
    #[test]
    fn the_latest_name_in_time_wins_over_file_order() {
        let mut out = vec![0u8; 104];
        comm(&mut out, 7, "rename", true, 100);
        comm(&mut out, 7, "late", false, 300);
        comm(&mut out, 8, "cmd", true, 250);
        for i in 0..200 {
            record(&mut out, 9, 0, &[7u8; 24], 400 + i);
        }
        comm(&mut out, 7, "early", false, 200);
        comm(&mut out, 9, "cmd", true, 150);
        // Same time (a record without one): the later in the file.
        comm(&mut out, 10, "first", false, 0);
        comm(&mut out, 10, "second", false, 0);
        let (bytes, l) = file_of(out);
        for split in [u64::MAX, 1] {
            let found = scan_split(&bytes, &l, (CMD, 6, true), split);
            let names = &found.names;
            assert_eq!(names.get(&7).map(String::as_str), Some("late"), "{split}");
            assert_eq!(names.get(&10).map(String::as_str), Some("second"));
            // No fork record names the recorder: a guess among two.
            assert_eq!((found.target, found.rivals), (Some((9, 150)), 1));
        }
    }

    /// A process `child` forked by `parent` (PERF_RECORD_FORK).
    fn fork(out: &mut Vec<u8>, child: u32, parent: u32, t: u64) {
        fork_of(out, [child, parent, child, parent], t);
    }

    /// A PERF_RECORD_FORK of these pid, ppid, tid and ptid.
    fn fork_of(out: &mut Vec<u8>, ids: [u32; 4], t: u64) {
        let ids = ids.iter().flat_map(|x| x.to_le_bytes());
        let body: Vec<u8> = ids.chain(t.to_le_bytes()).collect();
        record(out, 7, 0, &body, t);
    }

    /// Without the command line, the command's thread is the earliest
    /// exec of a process the recorder forked: by its pid, else by its name.
    #[test]
    fn without_the_command_line_the_recorders_child_is_the_command() {
        let mut out = vec![0u8; 104];
        comm(&mut out, 5, "perf", false, 0);
        comm(&mut out, 3, "bash", false, 0);
        fork(&mut out, 6, 3, 10);
        fork(&mut out, 7, 5, 20);
        comm(&mut out, 6, "make", true, 30);
        for i in 0..200 {
            record(&mut out, 9, 0, &[7u8; 24], 40 + i);
        }
        comm(&mut out, 7, "prog", true, 300);
        comm(&mut out, 7, "prog2", true, 400);
        let (bytes, l) = file_of(out);
        for split in [u64::MAX, 1] {
            let child_of = |recorder| Wanted::Exec {
                comm: None,
                recorder,
            };
            for recorder in [Some(5), None] {
                let what = (child_of(recorder), 6, true);
                let found = scan_split(&bytes, &l, what, split);
                assert_eq!(found.target, Some((7, 300)), "{recorder:?} {split}");
                assert_eq!(found.names.get(&7).map(String::as_str), Some("prog2"));
            }
            let what = (child_of(Some(3)), 6, true);
            assert_eq!(scan_split(&bytes, &l, what, split).target, Some((6, 30)));
            let what = (child_of(Some(4)), 6, true);
            assert_eq!(scan_split(&bytes, &l, what, split).target, None);
        }
    }

    /// A system-wide recording of `cmd` while another process named `cmd`
    /// (a test of the same program, say) exec'd earlier: the command's
    /// thread is the recorder's child, known by the recorder's pid or by
    /// its name; with neither (no fork record names it), the earliest exec,
    /// said to be a guess among the others.
    #[test]
    fn the_command_is_the_recorders_child_not_a_namesake() {
        let mut out = vec![0u8; 104];
        comm(&mut out, 5, "perf", false, 0);
        comm(&mut out, 3, "bash", false, 0);
        fork(&mut out, 6, 3, 10);
        comm(&mut out, 6, "cmd", true, 30);
        for i in 0..200 {
            record(&mut out, 9, 0, &[7u8; 24], 40 + i);
        }
        fork(&mut out, 7, 5, 250);
        comm(&mut out, 7, "perf-exec", false, 260);
        comm(&mut out, 7, "cmd", true, 300);
        comm(&mut out, 8, "other", true, 200);
        let (bytes, l) = file_of(out);
        for split in [u64::MAX, 1] {
            for recorder in [Some(5), None] {
                let comm = Some("cmd");
                let found = scan_split(
                    &bytes,
                    &l,
                    (Wanted::Exec { comm, recorder }, 6, true),
                    split,
                );
                assert_eq!((found.target, found.rivals), (Some((7, 300)), 0), "{split}");
            }
            // A recorder that forked neither: the earliest, one rival.
            let what = Wanted::Exec {
                comm: Some("cmd"),
                recorder: Some(4),
            };
            let found = scan_split(&bytes, &l, (what, 6, true), split);
            assert_eq!((found.target, found.rivals), (Some((6, 30)), 1), "{split}");
        }
    }

    /// Two recorders at once, no `.recorder` to tell them apart: each
    /// perf's child exec'd the command; the earliest is taken, and said to
    /// be one of two. A thread's fork (pid not its tid), a fork record too
    /// short for its ids, and execs of no time (the first in the file
    /// wins) are handled too.
    #[test]
    fn two_recorders_and_odd_forks() {
        let mut out = vec![0u8; 104];
        comm(&mut out, 5, "perf", false, 0);
        comm(&mut out, 11, "perf", false, 0);
        fork(&mut out, 7, 5, 10);
        fork(&mut out, 12, 11, 20);
        // A thread 13 of process 12, forked by perf 5 (not a process).
        fork_of(&mut out, [12, 5, 13, 5], 25);
        // A fork record of 8 bytes: its header only.
        out.extend(7u32.to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(8u16.to_le_bytes());
        comm(&mut out, 12, "cmd", true, 30);
        comm(&mut out, 13, "cmd", true, 35);
        comm(&mut out, 7, "cmd", true, 40);
        let (bytes, l) = file_of(out);
        let exec = |recorder| {
            (
                Wanted::Exec {
                    comm: Some("cmd"),
                    recorder,
                },
                6,
                true,
            )
        };
        for split in [u64::MAX, 1] {
            let found = scan_split(&bytes, &l, exec(None), split);
            assert_eq!((found.target, found.rivals), (Some((12, 30)), 1), "{split}");
            let found = scan_split(&bytes, &l, exec(Some(5)), split);
            assert_eq!((found.target, found.rivals), (Some((7, 40)), 0), "{split}");
            assert_eq!(found.stopped, None);
        }
        // No time: the first exec in the file, not the lowest tid.
        let mut out = vec![0u8; 104];
        comm(&mut out, 9, "cmd", true, 0);
        comm(&mut out, 4, "cmd", true, 0);
        let (bytes, l) = file_of(out);
        let found = scan_split(&bytes, &l, exec(None), u64::MAX);
        assert_eq!((found.target, found.rivals), (Some((9, 0)), 1));
    }
}
